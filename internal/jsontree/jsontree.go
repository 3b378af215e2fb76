// Package jsontree reads a JSON document into the tree encoding/json
// gives, faster: the engine reads every request with it
// (askbridge.DecodeRequestWith).
package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Decode reads data, one JSON value and nothing after it, into the
// tree encoding/json decodes into an any with UseNumber: map[string]any,
// []any, json.Number (the number as written), string, bool and nil, a
// repeated name keeping its last value. It reads tokens with jsontext,
// which costs a fraction of encoding/json's reflection over an any (that
// was a quarter of the intake's CPU). ok is false for anything jsontext
// refuses: the caller then decodes data with encoding/json, whose verdict
// and error message stand, so this only ever speeds up a request both
// would read alike (FuzzDecodeTree checks that they do).
func Decode(data []byte) (v any, ok bool) {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	v, err := treeValue(d)
	if err != nil {
		return nil, false
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

// treeValue reads the next value from d into its tree.
func treeValue(d *jsontext.Decoder) (any, error) {
	t, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch t.Kind() {
	case '{':
		obj := map[string]any{}
		for d.PeekKind() != '}' {
			t, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			// Read before the next call voids the token.
			name := t.String()
			val, err := treeValue(d)
			if err != nil {
				return nil, err
			}
			obj[name] = val
		}
		_, err := d.ReadToken()
		return obj, err
	case '[':
		list := []any{}
		for d.PeekKind() != ']' {
			val, err := treeValue(d)
			if err != nil {
				return nil, err
			}
			list = append(list, val)
		}
		_, err := d.ReadToken()
		return list, err
	case '"':
		return t.String(), nil
	case '0':
		return json.Number(t.String()), nil
	case 't', 'f':
		return t.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, errors.New("unexpected token " + t.Kind().String())
}
