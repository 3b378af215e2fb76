package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// setting is one row of config's table of settings.
type setting struct {
	env    string // the environment variable, ASKUSER_...
	secret bool   // may also be given as env_FILE, never printed
}

var (
	tableOnce sync.Once
	tableRows []setting
	tableErr  string
)

// settings are the rows of config/table.go's table, read from its source:
// the table is unexported, and these checks are about the files that name
// its variables, not about config's behaviour.
func settings(t *testing.T) []setting {
	t.Helper()
	tableOnce.Do(func() { tableRows, tableErr = parseTable("../config/table.go") })
	if tableErr != "" {
		t.Fatal(tableErr)
	}
	return tableRows
}

// settingNamed is the row whose variable is env, or nil.
func settingNamed(t *testing.T, env string) *setting {
	t.Helper()
	rows := settings(t)
	if i := slices.IndexFunc(rows, func(s setting) bool { return s.env == env }); i >= 0 {
		return &rows[i]
	}
	return nil
}

// knownVariable reports whether name is a setting's variable, or the _FILE
// form of a secret setting's; s is that setting.
func knownVariable(t *testing.T, name string) (s *setting, file bool) {
	t.Helper()
	if s := settingNamed(t, name); s != nil {
		return s, false
	}
	if base, ok := strings.CutSuffix(name, "_FILE"); ok {
		if s := settingNamed(t, base); s != nil && s.secret {
			return s, true
		}
	}
	return nil, false
}

// parseTable finds `var table = []setting{...}` in the file and reads each
// row's env (a string literal or a constant of the same file) and secret.
func parseTable(path string) ([]setting, string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, err.Error()
	}
	consts := map[string]string{}
	var rows *ast.CompositeLit
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				switch v := vs.Values[i].(type) {
				case *ast.BasicLit:
					if gd.Tok == token.CONST && v.Kind == token.STRING {
						consts[name.Name], _ = strconv.Unquote(v.Value)
					}
				case *ast.CompositeLit:
					if gd.Tok == token.VAR && name.Name == "table" {
						rows = v
					}
				}
			}
		}
	}
	if rows == nil {
		return nil, path + ": no `var table = []setting{...}`"
	}
	var out []setting
	for _, el := range rows.Elts {
		row, ok := el.(*ast.CompositeLit)
		if !ok {
			return nil, fset.Position(el.Pos()).String() + ": a row that is not a composite literal"
		}
		var s setting
		for _, field := range row.Elts {
			kv, ok := field.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			switch {
			case key == nil:
			case key.Name == "env":
				switch v := kv.Value.(type) {
				case *ast.BasicLit:
					s.env, _ = strconv.Unquote(v.Value)
				case *ast.Ident:
					s.env = consts[v.Name]
				}
			case key.Name == "secret":
				if id, ok := kv.Value.(*ast.Ident); ok {
					s.secret = id.Name == "true"
				}
			}
		}
		if !strings.HasPrefix(s.env, "ASKUSER_") {
			return nil, fset.Position(row.Pos()).String() + ": cannot read the row's env"
		}
		out = append(out, s)
	}
	if len(out) < 10 {
		return nil, path + ": fewer than 10 settings read; has the table's form changed?"
	}
	return out, ""
}

func TestTableIsRead(t *testing.T) {
	for _, want := range []struct {
		env    string
		secret bool
	}{
		{"ASKUSER_CONFIG", false}, {"ASKUSER_REPLICA", false},
		{"ASKUSER_REDIS_URL", true}, {"ASKUSER_HTTP_TOKEN", true},
		{"ASKUSER_HTTP_ADDR", false}, {"ASKUSER_STOP_GRACE", false},
	} {
		s := settingNamed(t, want.env)
		if s == nil || s.secret != want.secret {
			t.Errorf("%s: read as %+v, want secret=%v", want.env, s, want.secret)
		}
	}
}
