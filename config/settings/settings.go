// Package settings is what the config loader and each platform's Config
// share: checks whose messages name a setting the way its reader wrote it,
// and printing that never shows a secret.
//
// A platform's Config marks each setting the operator configures with its
// YAML key (`yaml:"apiURL"`) and each secret among them with `json:"-"`;
// fields without a YAML key are wiring (clients, timings) and are not
// printed. Its Check method adds every problem to a *Problems, naming the
// setting with Problems.Name: config names the environment variable, _FILE
// variable or YAML key the value came from, and Validate, on its own, names
// it in words ("webhook secret").
package settings

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"unicode"
)

// Problems collects what is wrong with the settings of one section.
type Problems struct {
	// Section is the YAML section the settings are in ("telegram").
	Section string
	// Names names a setting by its full YAML key ("telegram.token"); nil
	// names it in words ("token").
	Names func(key string) string
	// List holds the messages in the order found.
	List []string
}

// Name is how a message names the setting with YAML key key in Section.
func (p *Problems) Name(key string) string {
	if p.Names == nil {
		return words(key)
	}
	if p.Section != "" {
		key = p.Section + "." + key
	}
	return p.Names(key)
}

// Addf adds a message.
func (p *Problems) Addf(format string, args ...any) {
	p.List = append(p.List, fmt.Sprintf(format, args...))
}

// Err is nil without problems, else every message after the section name.
func (p *Problems) Err() error {
	if len(p.List) == 0 {
		return nil
	}
	return errors.New(p.Section + ": " + strings.Join(p.List, "; "+p.Section+": "))
}

// Plain reports a value with spaces or control characters (a secret pasted
// with its line break, two values in one); it never quotes the value.
func (p *Problems) Plain(key, value string) {
	if HasSpaceOrControl(value) {
		p.Addf("%s: must not contain spaces or control characters", p.Name(key))
	}
}

// APIURL checks the base URL of a platform's API: http or https, with a
// host, without credentials, a query or a fragment. Empty means the
// platform's default and is not checked.
func (p *Problems) APIURL(key, raw string) {
	if raw == "" {
		return
	}
	name := p.Name(key)
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.Addf("%s: not a URL (%s)", name, URLErrorReason(err))
	case u.Scheme != "http" && u.Scheme != "https":
		p.Addf("%s: %q must be an http:// or https:// URL", name, raw)
	case u.Host == "":
		p.Addf("%s: %q has no host", name, raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		p.Addf("%s: must not carry credentials, a query or a fragment", name)
	}
}

// URLErrorReason is the reason of a url.Parse error without the URL, which
// may hold a password.
func URLErrorReason(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return "unparseable"
}

// HasSpaceOrControl reports whether s holds a space, a line break or
// another control character.
func HasSpaceOrControl(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u00a0' || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}

// words turns a YAML key into words: "webhookSecret" is "webhook secret",
// "apiURL" is "api url".
func words(key string) string {
	var b strings.Builder
	prev := ' '
	for _, r := range key {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

// Redacted stands for a secret that is set; an unset one prints as empty.
const Redacted = "[redacted]"

// Mask is Redacted for a set secret, "" for an unset one.
func Mask(s string) string {
	if s == "" {
		return ""
	}
	return Redacted
}

// each calls f with every setting of the struct v (or *v) points to: its
// Go name, its YAML key and its value as text, a secret masked.
func each(v any, f func(name, key, value string)) {
	rv := reflect.Indirect(reflect.ValueOf(v))
	for i := range rv.NumField() {
		field := rv.Type().Field(i)
		key, _, _ := strings.Cut(field.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		value := fmt.Sprint(rv.Field(i).Interface())
		if field.Tag.Get("json") == "-" {
			value = Mask(value)
		}
		f(field.Name, key, value)
	}
}

// String prints the settings of v, a struct or a pointer to one, as
// {Name:value …}, secrets redacted: the String of a Config.
func String(v any) string {
	var parts []string
	each(v, func(name, _, value string) { parts = append(parts, name+":"+value) })
	return "{" + strings.Join(parts, " ") + "}"
}

// LogValue is the settings of v as a slog group keyed by YAML key, secrets
// redacted: the LogValue of a Config.
func LogValue(v any) slog.Value {
	var attrs []slog.Attr
	each(v, func(_, key, value string) { attrs = append(attrs, slog.String(key, value)) })
	return slog.GroupValue(attrs...)
}

// Default sets *v to def when it is zero or negative: unset.
func Default[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}
