package config

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the README configuration table and the list in doc.go from the table")

// The README table and the list in doc.go are made from the table: a
// setting added, renamed or changed there shows here until the docs are
// rewritten with go test ./config -run TestDocs -update.
func TestDocsMatchTable(t *testing.T) {
	for _, doc := range []struct {
		path, start, end, want string
	}{
		{"../README.md", "| Variable |", "\n\n", readmeTable()},
		{"doc.go", "// # Environment variables\n//\n", "//\n// A * marks", docList()},
	} {
		t.Run(doc.path, func(t *testing.T) {
			data, err := os.ReadFile(doc.path)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			i := strings.Index(text, doc.start)
			if i < 0 {
				t.Fatalf("%s has no %q", doc.path, doc.start)
			}
			if doc.start != "| Variable |" {
				i += len(doc.start)
			}
			n := strings.Index(text[i:], doc.end)
			if n < 0 {
				t.Fatalf("%s has no %q after %q", doc.path, doc.end, doc.start)
			}
			if doc.end == "\n\n" {
				n++ // keep the table's last line break
			}
			if got := text[i : i+n]; got != doc.want {
				if *update {
					if err := os.WriteFile(doc.path, []byte(text[:i]+doc.want+text[i+n:]), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Errorf("%s differs from the table of settings (go test ./config -run TestDocs -update rewrites it):\n%s\nwant:\n%s", doc.path, got, doc.want)
			}
		})
	}
}

// docsDefault is a setting's default as the docs show it.
func docsDefault(s setting) string {
	if s.def != "" {
		return s.def
	}
	c := Default()
	for _, ps := range platforms {
		ps.add(c)
	}
	var v string
	switch {
	case s.str != nil:
		v = *s.str(c)
	case s.num != nil:
		v = strconv.Itoa(*s.num(c))
	default:
		d := *s.dur(c)
		v = d.String()
		if d%time.Minute == 0 {
			v = strings.TrimSuffix(v, "0s")
		}
		if d%time.Hour == 0 {
			v = strings.TrimSuffix(v, "0m")
		}
	}
	if v == "" {
		return "unset"
	}
	return "`" + v + "`"
}

func readmeTable() string {
	var b strings.Builder
	b.WriteString("| Variable | YAML key | Default | What it does |\n| --- | --- | --- | --- |\n")
	for _, s := range table {
		star, key := "", "—"
		if s.secret {
			star = " *"
		}
		if s.yaml != "" {
			key = "`" + s.yaml + "`"
		}
		fmt.Fprintf(&b, "| `%s`%s | %s | %s | %s |\n", s.env, star, key, docsDefault(s), s.doc)
	}
	return b.String()
}

// docList is the list of variables in doc.go: each name (a * marks a
// secret), then its text wrapped beside it.
func docList() string {
	width := 0
	for _, s := range table {
		width = max(width, len(s.env)+2)
	}
	var b strings.Builder
	for _, s := range table {
		name := s.env
		if s.secret {
			name += "*"
		}
		where := "Environment only."
		if s.yaml != "" {
			where = "YAML " + s.yaml + "."
		}
		text := strings.ReplaceAll(fmt.Sprintf("%s Default: %s. %s", s.doc, docsDefault(s), where), "`", "")
		line := name
		for _, word := range strings.Fields(text) {
			if len(line) > width && len(line)+1+len(word) > width+58 {
				fmt.Fprintf(&b, "//\t%s\n", line)
				line = ""
			}
			if len(line) < width {
				line += strings.Repeat(" ", width-len(line)) + word
			} else {
				line += " " + word
			}
		}
		fmt.Fprintf(&b, "//\t%s\n", line)
	}
	return b.String()
}

// Every setting with a YAML key appears in the example under its section,
// next to its variable: set, or for a secret commented out; a platform's
// section counts with its commented-out lines turned on (uncommented).
// Every key the example shows, set or commented out, is a row of the
// table, so the README's table documents it. (Load, in TestExampleFile,
// also refuses a key that is set but is no setting.)
func TestExampleShowsEveryKey(t *testing.T) {
	data := uncommented(t)
	set, commented := map[string]bool{}, map[string]bool{}
	section := ""
	for _, line := range strings.Split(data, "\n") {
		text := strings.TrimLeft(line, " ")
		indent := len(line) - len(text)
		text, isComment := strings.CutPrefix(text, "# ")
		key, rest, ok := strings.Cut(text, ":")
		if !ok || !yamlKey.MatchString(key) || rest != "" && rest[0] != ' ' {
			continue
		}
		path := key
		switch {
		case indent == 0 && !isComment:
			section = key
		case indent == 2:
			path = section + "." + key
		case indent != 0:
			continue
		}
		if isComment {
			commented[path] = true
		} else {
			set[path] = true
		}
	}
	for _, s := range table {
		if !strings.Contains(data, s.env) {
			t.Errorf("config.example.yaml does not name %s", s.env)
		}
		switch {
		case s.yaml == "":
		case s.secret && !commented[s.yaml]:
			t.Errorf("config.example.yaml does not show the secret %s commented out", s.yaml)
		case !s.secret && !set[s.yaml]:
			t.Errorf("config.example.yaml does not set %s", s.yaml)
		}
	}
	for _, keys := range []map[string]bool{set, commented} {
		for path := range keys {
			if settingAt(path) == nil && !isSection(path) && !strings.HasPrefix(path, "routes.") {
				t.Errorf("config.example.yaml shows %s, which is no setting of the table", path)
			}
		}
	}
}

// yamlKey is a key of the file as the example writes them: camelCase.
var yamlKey = regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)

// isSection reports whether path is a section of the YAML file: the routes,
// or the first part of a setting's key.
func isSection(path string) bool {
	if path == "routes" {
		return true
	}
	for _, s := range table {
		if strings.HasPrefix(s.yaml, path+".") {
			return true
		}
	}
	return false
}
