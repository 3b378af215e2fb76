package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/askbridge/askbridge/internal/lazyre"
)

// Load builds the configuration: the defaults, then the YAML file named by
// ASKUSER_CONFIG (when set), then the environment variables, which override
// the file. A secret's variable X may instead be given as X_FILE, the path of
// a file holding it (surrounding whitespace trimmed); setting both is an
// error. An empty variable counts as unset. A variable named ASKUSER_… that
// is none of these is an error naming the setting it is closest to: a
// misspelt setting is never silently left out.
//
// environ is the environment, "NAME=value" strings (os.Environ), and
// readFile reads a file (os.ReadFile); tests pass their own. Load reports
// every problem at once in a *ValidationError, each naming its key, and
// validates everything, so a Config it returns is ready to use.
func Load(environ []string, readFile func(string) ([]byte, error)) (*Config, error) {
	env := Lookup(environ)
	p := unknownVariables(environ)
	file := map[string]string{}
	var routes map[string]Route
	if path := strings.TrimSpace(env(envConfig)); path != "" {
		data, err := readFile(path)
		if err != nil {
			return nil, &ValidationError{Problems: append(p, fmt.Sprintf("%s: %v", envConfig, err))}
		}
		var probs []string
		if routes, probs = decodeFile(path, data, file); len(probs) > 0 {
			return nil, &ValidationError{Problems: append(p, probs...)}
		}
	}

	values := map[string]string{}
	keys := keyNames{}
	for _, s := range table {
		if s.str == nil && s.dur == nil && s.num == nil {
			continue
		}
		if v := strings.TrimSpace(file[s.yaml]); s.yaml != "" && v != "" {
			values[s.env], keys[s.env] = v, s.yaml
		}
		v, key := strings.TrimSpace(env(s.env)), s.env
		if s.secret {
			var err error
			if v, key, err = secret(env, readFile, s.env); err != nil {
				p = append(p, err.Error())
				continue
			}
		}
		if v != "" {
			values[s.env], keys[s.env] = v, key
		}
	}

	c := Default()
	c.keys = keys
	for _, s := range table {
		v, ok := values[s.env]
		// A platform is on when its token is set; its other settings without
		// the token are a mistake, not something to ignore.
		if ps := s.platformOf(); ok && ps != nil && !ps.on(c) {
			if token := ps.token(); s.env != token {
				p = append(p, fmt.Sprintf("%s is set but %s is off: set %s (or %s_FILE) to turn it on, or remove this setting", keys.of(s.env), ps.title, token, token))
				continue
			}
			ps.add(c)
		}
		if ok {
			if err := s.set(c, v); err != nil {
				p = append(p, keys.of(s.env)+": "+err.Error())
			}
		}
	}
	for name, r := range routes {
		for i := range r.Escalate {
			r.Escalate[i].To = trimAll(r.Escalate[i].To)
		}
		c.Routes[name] = Route{To: strings.TrimSpace(r.To), Answerers: trimAll(r.Answerers), Locale: strings.TrimSpace(r.Locale), Escalate: r.Escalate, Links: r.Links}
	}

	var verr *ValidationError
	if err := c.Validate(); errors.As(err, &verr) {
		p = append(p, verr.Problems...)
	}
	if len(p) > 0 {
		return nil, &ValidationError{Problems: p}
	}
	return c, nil
}

// Secret reads one secret from the environment the way Load does: the
// variable name, or else the file named by name_FILE (its content with
// surrounding whitespace trimmed). Both set, an unreadable or an empty file
// are errors naming the variables; "" with a nil error means neither is set.
// For commands that need one setting without loading the whole
// configuration.
func Secret(env func(string) string, readFile func(string) ([]byte, error), name string) (string, error) {
	v, _, err := secret(env, readFile, name)
	return v, err
}

// secret also returns the variable the value came from.
func secret(env func(string) string, readFile func(string) ([]byte, error), name string) (value, key string, err error) {
	v := strings.TrimSpace(env(name))
	fileKey := name + "_FILE"
	path := strings.TrimSpace(env(fileKey))
	if path == "" {
		return v, name, nil
	}
	if v != "" {
		return "", "", fmt.Errorf("%s and %s are both set; set only one", name, fileKey)
	}
	data, err := readFile(path)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", fileKey, err)
	}
	if v = strings.TrimSpace(string(data)); v == "" {
		return "", "", fmt.Errorf("%s: %s is empty", fileKey, path)
	}
	return v, fileKey, nil
}

func trimAll(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// decodeFile decodes the YAML file strictly, into fileType: a key it does
// not know, a key given twice, a value of the wrong kind and a second
// document are errors naming the key's full path and its line. It puts
// every setting's value in values by its key path ("http.addr") and
// returns the routes.
func decodeFile(path string, data []byte, values map[string]string) (map[string]Route, []string) {
	file := reflect.New(fileType)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var te *yaml.TypeError
	switch err := dec.Decode(file.Interface()); {
	case errors.Is(err, io.EOF):
		return nil, nil // empty, or only comments
	case err != nil && !errors.As(err, &te):
		return nil, []string{explainFatal(path, data, err)}
	}
	// The decoder is done with the first document: its errors are all
	// type errors, which it reports by line only.
	sp := locate(data)
	probs := sp.nulls(path)
	if te != nil {
		for _, e := range te.Errors {
			probs = append(probs, sp.explain(path, e))
		}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		probs = append(probs, fmt.Sprintf("%s:%d: a second YAML document starts here; the file must hold only one", path, extra.Line))
	} else if !errors.Is(err, io.EOF) {
		probs = append(probs, explainFatal(path, data, err))
	}
	if len(probs) > 0 {
		slices.SortStableFunc(probs, func(a, b string) int { return lineOf(path, a) - lineOf(path, b) })
		return nil, probs
	}
	flatten(file.Elem(), "", values)
	return file.Elem().FieldByName("Routes").Interface().(map[string]Route), nil
}

// fileType is the Go type of the file, built from the table so that each
// key is written down once: a string field for each setting, in a struct
// for each section ("http.addr" is field addr of field http), and the
// routes.
var fileType = structOf("")

// structOf is the struct of the table's YAML keys under prefix.
func structOf(prefix string) reflect.Type {
	var fields []reflect.StructField
	add := func(name, key string, t reflect.Type) {
		fields = append(fields, reflect.StructField{Name: name, Type: t, Tag: reflect.StructTag(fmt.Sprintf("yaml:%q", key))})
	}
	seen := map[string]bool{}
	for _, s := range table {
		rest, ok := strings.CutPrefix(s.yaml, prefix)
		key, _, section := strings.Cut(rest, ".")
		if s.yaml == "" || !ok || seen[key] {
			continue
		}
		seen[key] = true
		t := reflect.TypeFor[string]()
		if section {
			t = structOf(prefix + key + ".")
		}
		add(fmt.Sprintf("F%d", len(fields)), key, t)
	}
	if prefix == "" {
		add("Routes", "routes", reflect.TypeFor[map[string]Route]())
	}
	return reflect.StructOf(fields)
}

// flatten puts the string fields of v, a value of a struct of structOf, in
// values by their key paths.
func flatten(v reflect.Value, prefix string, values map[string]string) {
	for i := range v.NumField() {
		key := prefix + v.Type().Field(i).Tag.Get("yaml")
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			values[key] = f.String()
		case reflect.Struct:
			flatten(f, key+".", values)
		}
	}
}

// yaml's errors give a line but not the key; spots names it.
var (
	unknownKey    = lazyre.New(`(?s)^line (\d+): field (.*) not found in type `)
	duplicateKey  = lazyre.New(`(?s)^line (\d+): mapping key (".*") already defined at line (\d+)$`)
	wrongKind     = lazyre.New(`^line (\d+): cannot unmarshal (\S+)`)
	mergeNotAMap  = "map merge requires map or sequence of maps as the value"
	unknownAnchor = lazyre.New(`^unknown anchor '(.*)' referenced$`)
	quotedValue   = lazyre.New(" `[^`]*`") // may be part of a secret
	kindNames     = map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list", yaml.ScalarNode: "a single value"}
	expectedNames = map[reflect.Kind]string{reflect.Struct: "a mapping", reflect.Map: "a mapping", reflect.Slice: "a list", reflect.Int: "a whole number", reflect.String: "a single value"}
)

// explainFatal rewrites an error that stopped the decoding: a syntax
// error, or a bad alias or merge key.
func explainFatal(path string, data []byte, err error) string {
	e := strings.TrimPrefix(err.Error(), "yaml: ")
	if e == mergeNotAMap {
		if s := locate(data).merge; s != nil {
			return fmt.Sprintf("%s:%d: %s: the value of \"<<\" must be a mapping or a list of mappings", path, s.line, orFile(s.path))
		}
	}
	if m := unknownAnchor().FindStringSubmatch(e); m != nil {
		if line := aliasLine(data, m[1]); line > 0 {
			return fmt.Sprintf("%s:%d: %s", path, line, e)
		}
	}
	return atLine(path, quotedValue().ReplaceAllString(e, ""))
}

// aliasLine is the line of the first alias of anchor name, or 0.
func aliasLine(data []byte, name string) int {
	alias := regexp.MustCompile(`\*` + regexp.QuoteMeta(name) + `([\s,\[\]{}]|$)`)
	if loc := alias.FindIndex(data); loc != nil {
		return bytes.Count(data[:loc[0]], []byte("\n")) + 1
	}
	return 0
}

// spots are the keys and values of the file on the decoder's way (through
// aliases and merge keys), each with its line and full path.
type spots struct {
	values []spot // every value, with the type it decodes into
	keys   []spot // every key
	merge  *spot  // the first "<<" whose value is no mapping
}

type spot struct {
	line int
	name string       // a key's name
	kind yaml.Kind    // a value's kind
	typ  reflect.Type // a value's type; a key's mapping's
	path string
	// A key of no field, or a null key ("~:"), which yaml skips without
	// a word.
	unknown, null bool
	used          bool
}

// maxSpots bounds the walk of a file of aliases of aliases; the decoder
// refuses excessive aliasing itself.
const maxSpots = 100_000

// locate walks the file alongside fileType. Decoding it succeeded up to
// the type errors, so it parses.
func locate(data []byte) *spots {
	sp := &spots{}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) == nil {
		sp.walk(&root, "", fileType)
	}
	return sp
}

func (sp *spots) walk(n *yaml.Node, path string, t reflect.Type) {
	for n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		switch {
		case n.Kind == yaml.AliasNode && n.Alias != nil:
			n = n.Alias
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		default:
			return
		}
	}
	if len(sp.values) >= maxSpots {
		return
	}
	sp.values = append(sp.values, spot{line: n.Line, kind: n.Kind, typ: t, path: path})
	switch {
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, item := range n.Content {
			sp.walk(item, fmt.Sprintf("%s[%d]", path, i), t.Elem())
		}
	case n.Kind == yaml.MappingNode && (t.Kind() == reflect.Map || t.Kind() == reflect.Struct):
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" { // "<<: *anchor" merges the anchor's keys here
				for _, m := range merged(v) {
					if m.Kind != yaml.MappingNode && sp.merge == nil {
						sp.merge = &spot{line: k.Line, path: path}
					}
					sp.walk(m, path, t)
				}
				continue
			}
			key := k.Value
			if path != "" {
				key = path + "." + k.Value
			}
			if k.Kind != yaml.ScalarNode {
				what := "a key"
				if path != "" {
					what = "a key in " + path
				}
				sp.values = append(sp.values, spot{line: k.Line, kind: k.Kind, typ: reflect.TypeFor[string](), path: what})
				continue
			}
			ks := spot{line: k.Line, name: k.Value, typ: t, path: key, null: k.ShortTag() == "!!null"}
			next, known := field(t, k.Value)
			ks.unknown = !known
			sp.keys = append(sp.keys, ks)
			if known && !ks.null {
				sp.walk(v, key, next)
			}
		}
	}
}

// merged is the mappings a merge key's value names: one, or a list.
func merged(v *yaml.Node) []*yaml.Node {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind == yaml.SequenceNode {
		return v.Content
	}
	return []*yaml.Node{v}
}

// field is the type of the value of key in a mapping of type t: a map's
// element, or the field of a struct with that YAML key.
func field(t reflect.Type, key string) (reflect.Type, bool) {
	if t.Kind() == reflect.Map {
		return t.Elem(), true
	}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == key {
			return t.Field(i).Type, true
		}
	}
	return nil, false
}

// keysOf is the keys a mapping of struct type t may hold.
func keysOf(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// nulls reports the null keys, which yaml skips without a word.
func (sp *spots) nulls(path string) []string {
	var probs []string
	for _, s := range sp.keys {
		switch {
		case s.null && s.typ.Kind() == reflect.Struct:
			probs = append(probs, fmt.Sprintf("%s:%d: unknown key %q", path, s.line, s.path))
		case s.null:
			probs = append(probs, fmt.Sprintf("%s:%d: key %q is null; quote it to use it as a name", path, s.line, s.path))
		}
	}
	return probs
}

// take marks and returns the first spot of list that fits and is not
// taken yet (an error for each time the decoder came by), else the first
// that fits, else nil.
func take(list []spot, fits func(*spot) bool) *spot {
	var first *spot
	for i := range list {
		if s := &list[i]; fits(s) {
			if !s.used {
				s.used = true
				return s
			}
			if first == nil {
				first = s
			}
		}
	}
	return first
}

// explain rewrites one of yaml's errors, "line 3: field x not found in
// type T" and the like, as "path:3: unknown key \"http.x\"".
func (sp *spots) explain(path, e string) string {
	if m := unknownKey().FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		if s := take(sp.keys, func(s *spot) bool { return s.unknown && s.line == line && s.name == m[2] }); s != nil {
			msg := fmt.Sprintf("%s:%d: unknown key %q", path, line, s.path)
			if near := closest(s.name, keysOf(s.typ)); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", strings.TrimSuffix(s.path, s.name)+near)
			}
			return msg
		}
	}
	if m := duplicateKey().FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		name, _ := strconv.Unquote(m[2])
		if s := take(sp.keys, func(s *spot) bool { return s.line == line && s.name == name }); s != nil {
			return fmt.Sprintf("%s:%d: duplicate key %q (first at line %s)", path, line, s.path, m[3])
		}
	}
	if m := wrongKind().FindStringSubmatch(e); m != nil {
		line, _ := strconv.Atoi(m[1])
		into := func(s *spot) bool {
			return s.line == line && (strings.HasSuffix(e, " into "+s.typ.String()) ||
				s.typ.Kind() == reflect.Slice && strings.HasSuffix(e, " into []"+s.typ.Elem().String()))
		}
		s := take(sp.values, func(s *spot) bool { return into(s) && s.kind == kindOfTag(m[2]) })
		if s == nil {
			s = take(sp.values, into)
		}
		if s != nil {
			msg := fmt.Sprintf("%s:%d: %s must be %s", path, line, orFile(s.path), expectedNames[s.typ.Kind()])
			if s.kind != yaml.ScalarNode || s.typ.Kind() != reflect.Int {
				msg += ", not " + kindNames[s.kind]
			}
			return msg
		}
	}
	return atLine(path, quotedValue().ReplaceAllString(e, ""))
}

// kindOfTag is the kind of a value yaml names by tag.
func kindOfTag(tag string) yaml.Kind {
	switch tag {
	case "!!map":
		return yaml.MappingNode
	case "!!seq":
		return yaml.SequenceNode
	}
	return yaml.ScalarNode
}

// lineOf is the line a problem "path:3: …" names, or 0.
func lineOf(path, problem string) int {
	rest, _ := strings.CutPrefix(problem, path+":")
	n, _, _ := strings.Cut(rest, ":")
	line, _ := strconv.Atoi(n)
	return line
}

func orFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// atLine turns yaml's "line 3: msg" into "path:3: msg".
func atLine(path, msg string) string {
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return fmt.Sprintf("%s:%s: %s", path, n, after)
			}
		}
	}
	return fmt.Sprintf("%s: %s", path, msg)
}
