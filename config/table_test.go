package config

import (
	"reflect"
	"strings"
	"testing"
)

// Each row of the table writes the field that carries the row's YAML key,
// a row is a secret exactly when its field is redacted (tagged json:"-"),
// and every field with a YAML key has its row.
func TestTableMatchesTypes(t *testing.T) {
	sections := map[string]func(*Config) any{
		"redis":    func(c *Config) any { return &c.Redis },
		"http":     func(c *Config) any { return &c.HTTP },
		"telegram": func(c *Config) any { return c.Telegram },
		"discord":  func(c *Config) any { return c.Discord },
		"slack":    func(c *Config) any { return c.Slack },
	}
	allOn := func() *Config {
		c := Default()
		for _, ps := range platforms {
			ps.add(c)
		}
		return c
	}
	const mark = "written-by-the-row"
	for _, s := range table {
		section, key, _ := strings.Cut(s.yaml, ".")
		get, ok := sections[section]
		if !ok || s.str == nil {
			continue // outside the sections: the row is the only place
		}
		c := allOn()
		*s.str(c) = mark
		// A platform's list of chats is config's own (Config.Chats), each
		// field tagged with its full YAML key.
		if written := markedFields(&c.Chats, mark); len(written) > 0 {
			f := written[0]
			if tag := f.Tag.Get("yaml"); len(written) > 1 || tag != s.yaml {
				t.Errorf("%s writes Chats.%s, whose YAML key is %q", s.env, f.Name, tag)
			}
			continue
		}
		written := markedFields(get(c), mark)
		for _, f := range written {
			if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != key {
				t.Errorf("%s writes %s.%s, whose YAML key is %q", s.env, section, f.Name, tag)
			}
			if secret := f.Tag.Get("json") == "-"; secret != s.secret {
				t.Errorf("%s: the row says secret %v, the field %s.%s %v", s.env, s.secret, section, f.Name, secret)
			}
		}
		if len(written) == 0 {
			t.Errorf("%s writes no field of the %s section", s.env, section)
		}
	}
	chats := reflect.TypeOf(Chats{})
	for i := range chats.NumField() {
		if key := chats.Field(i).Tag.Get("yaml"); settingAt(key) == nil {
			t.Errorf("Chats.%s has the YAML key %q but no row in the table", chats.Field(i).Name, key)
		}
	}
	for section, get := range sections {
		typ := reflect.TypeOf(get(allOn())).Elem()
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" && settingAt(section+"."+tag) == nil {
				t.Errorf("%s.%s has the YAML key %q but no row in the table", section, typ.Field(i).Name, tag)
			}
		}
	}
}

// markedFields is the string fields of the struct ptr points to that hold
// mark.
func markedFields(ptr any, mark string) []reflect.StructField {
	v := reflect.ValueOf(ptr).Elem()
	var out []reflect.StructField
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.String && v.Field(i).String() == mark {
			out = append(out, v.Type().Field(i))
		}
	}
	return out
}
