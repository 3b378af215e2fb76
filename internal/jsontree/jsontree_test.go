package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/askbridge/askbridge"
)

const validRequest = `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// v1Tree is what request validation decodes without Decode: the
// encoding/json tree of data, with UseNumber, and whether it was one value
// and nothing after it.
func v1Tree(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

func TestDecodeTree(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
		ok   bool
	}{
		{`{"a":[1,-2.5e3,"x\u00e9",true,false,null,{}]}`, map[string]any{"a": []any{json.Number("1"), json.Number("-2.5e3"), "xé", true, false, nil, map[string]any{}}}, true},
		{` [] `, []any{}, true},
		{`{"a":1,"a":2}`, map[string]any{"a": json.Number("2")}, true},
		{`12345678901234567890123`, json.Number("12345678901234567890123"), true},
		{`{"a":1} {}`, nil, false},
		{`{"a":1,}`, nil, false},
		{`{"a"`, nil, false},
		{`"\ud800"`, nil, false}, // a lone surrogate: left to encoding/json
		{``, nil, false},
	} {
		got, ok := Decode([]byte(tc.in))
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Decode(%s) = %#v, %v; want %#v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzDecodeTree: whatever Decode reads, encoding/json reads alike, to
// the same tree; what it refuses goes to encoding/json, so it never changes
// what a request means or which error it gets.
func FuzzDecodeTree(f *testing.F) {
	for _, s := range []string{validRequest, `{}`, `null`, `[1,2]`, `{"a":{"b":[true,null,"\u00e9\n"]}}`, `{"a":1,"a":"x"}`, `1e400`, `"\ud83d\ude00"`, `{"a":1} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := Decode(data)
		if !ok {
			return
		}
		slow, ok := v1Tree(data)
		if !ok {
			t.Fatalf("Decode read %q, encoding/json refuses it", data)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("Decode(%q) = %#v, encoding/json %#v", data, fast, slow)
		}
	})
}

// BenchmarkDecodeRequest decodes a request as the engine does: the tree
// read by Decode, then validated.
func BenchmarkDecodeRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := askbridge.DecodeRequestWith([]byte(validRequest), Decode); err != nil {
			b.Fatal(err)
		}
	}
}
