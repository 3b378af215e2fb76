package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load builds the configuration: the defaults, then the YAML file named by
// ASKUSER_CONFIG (when set), then the environment variables, which override
// the file. A secret's variable X may instead be given as X_FILE, the path of
// a file holding it (surrounding whitespace trimmed); setting both is an
// error. An empty variable counts as unset.
//
// env looks a variable up (os.Getenv) and readFile reads a file
// (os.ReadFile); tests pass their own. Load reports every problem at once in
// a *ValidationError, each naming its key, and validates everything, so a
// Config it returns is ready to use.
func Load(env func(string) string, readFile func(string) ([]byte, error)) (*Config, error) {
	file := map[string]string{}
	var routes map[string]Route
	if path := strings.TrimSpace(env(envConfig)); path != "" {
		data, err := readFile(path)
		if err != nil {
			return nil, &ValidationError{Problems: []string{fmt.Sprintf("%s: %v", envConfig, err)}}
		}
		var probs []string
		if routes, probs = decodeFile(path, data, file); len(probs) > 0 {
			return nil, &ValidationError{Problems: probs}
		}
	}

	var p []string
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
		c.Routes[name] = Route{To: strings.TrimSpace(r.To), Answerers: trimAll(r.Answerers), Locale: strings.TrimSpace(r.Locale), Escalate: r.Escalate}
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

// decodeFile decodes the YAML file strictly: an unknown key anywhere is an
// error naming its full path and line, and so is a second document. It
// puts every scalar in values by its key path ("http.addr") and returns the
// routes.
func decodeFile(path string, data []byte, values map[string]string) (map[string]Route, []string) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty, or only comments
		}
		return nil, []string{atLine(path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, []string{fmt.Sprintf("%s: holds more than one YAML document", path)}
	}
	var probs []string
	checkShape(&probs, path, "", &root, fileShape())
	if len(probs) > 0 {
		return nil, probs
	}
	scalars(&root, "", values)
	var f struct {
		Routes map[string]Route `yaml:"routes"`
	}
	if err := root.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				probs = append(probs, atLine(path, quotedValue.ReplaceAllString(e, "")))
			}
			return nil, probs
		}
		return nil, []string{atLine(path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	return f.Routes, nil
}

// quotedValue is the value yaml quotes in a type error, which could be part
// of a secret.
var quotedValue = regexp.MustCompile(" `[^`]*`")

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

// shape is what a YAML node must look like: its kind, and a mapping's
// known keys, or the shape of every value of a mapping with free keys (the
// routes) and of every item of a list.
type shape struct {
	kind yaml.Kind
	keys map[string]*shape
	each *shape
	// orScalar admits a scalar where a sequence (of each) belongs: one
	// item written alone.
	orScalar bool
}

// fileShape is the shape of the file: the table's YAML keys, and the routes.
func fileShape() *shape {
	scalar := &shape{kind: yaml.ScalarNode}
	step := &shape{kind: yaml.MappingNode, keys: map[string]*shape{
		"afterSeconds": scalar, "to": {kind: yaml.SequenceNode, each: scalar, orScalar: true},
	}}
	route := &shape{kind: yaml.MappingNode, keys: map[string]*shape{
		"to": scalar, "answerers": {kind: yaml.SequenceNode, each: scalar}, "locale": scalar,
		"escalate": {kind: yaml.SequenceNode, each: step},
	}}
	root := &shape{kind: yaml.MappingNode, keys: map[string]*shape{"routes": {kind: yaml.MappingNode, each: route}}}
	for _, s := range table {
		if s.yaml == "" {
			continue
		}
		m, parts := root, strings.Split(s.yaml, ".")
		for _, k := range parts[:len(parts)-1] {
			if m.keys[k] == nil {
				m.keys[k] = &shape{kind: yaml.MappingNode, keys: map[string]*shape{}}
			}
			m = m.keys[k]
		}
		m.keys[parts[len(parts)-1]] = scalar
	}
	return root
}

// checkShape walks node alongside its shape and reports every mapping key
// the shape does not know, and every value of the wrong kind (a list where
// a string belongs), naming its full path and line. Values are never
// quoted: one may be a secret.
func checkShape(probs *[]string, path, name string, node *yaml.Node, sh *shape) {
	switch node.Kind {
	case yaml.DocumentNode:
		for _, n := range node.Content {
			checkShape(probs, path, name, n, sh)
		}
		return
	case yaml.AliasNode:
		if node.Alias != nil {
			checkShape(probs, path, name, node.Alias, sh)
		}
		return
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return // an empty value: not set
	}
	if node.Kind == yaml.ScalarNode && sh.orScalar {
		return
	}
	if node.Kind != sh.kind {
		what := name
		if what == "" {
			what = "the file"
		}
		*probs = append(*probs, fmt.Sprintf("%s:%d: %s must be %s, not %s", path, node.Line, what, kindName(sh.kind), kindName(node.Kind)))
		return
	}
	switch node.Kind {
	case yaml.SequenceNode:
		for i, item := range node.Content {
			checkShape(probs, path, fmt.Sprintf("%s[%d]", name, i), item, sh.each)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if k.Tag == "!!merge" { // "<<: *anchor" merges the anchor's keys here
				for _, m := range merged(v) {
					checkShape(probs, path, name, m, sh)
				}
				continue
			}
			key := k.Value
			if name != "" {
				key = name + "." + k.Value
			}
			next := sh.each
			if next == nil {
				if next = sh.keys[k.Value]; next == nil {
					*probs = append(*probs, fmt.Sprintf("%s:%d: unknown key %q", path, k.Line, key))
					continue
				}
			}
			checkShape(probs, path, key, v, next)
		}
	}
}

// merged is the mappings a merge key's value names: one, or a list.
func merged(v *yaml.Node) []*yaml.Node {
	if v.Kind == yaml.SequenceNode {
		return v.Content
	}
	return []*yaml.Node{v}
}

// scalars puts every scalar under node in values by its key path, merged
// keys first so that the mapping's own keys win.
func scalars(node *yaml.Node, name string, values map[string]string) {
	switch node.Kind {
	case yaml.DocumentNode:
		for _, n := range node.Content {
			scalars(n, name, values)
		}
	case yaml.AliasNode:
		scalars(node.Alias, name, values)
	case yaml.ScalarNode:
		if node.Tag != "!!null" {
			values[name] = node.Value
		}
	case yaml.MappingNode:
		for pass := range 2 {
			for i := 0; i+1 < len(node.Content); i += 2 {
				k, v := node.Content[i], node.Content[i+1]
				switch isMerge := k.Tag == "!!merge"; {
				case pass == 0 && isMerge:
					for _, m := range merged(v) {
						scalars(m, name, values)
					}
				case pass == 1 && !isMerge:
					key := k.Value
					if name != "" {
						key = name + "." + k.Value
					}
					scalars(v, key, values)
				}
			}
		}
	}
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}
