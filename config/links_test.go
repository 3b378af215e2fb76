package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func emailVars(extra map[string]string) map[string]string {
	v := map[string]string{
		"ASKUSER_SMTP_URL":    "smtp://relay.example.com",
		"ASKUSER_SMTP_FROM":   "Ask <ask@example.com>",
		"ASKUSER_PUBLIC_URL":  "https://ask.example.com/",
		"ASKUSER_LINK_SECRET": linkSecret,
	}
	for k, x := range extra {
		if x == "" {
			delete(v, k)
		} else {
			v[k] = x
		}
	}
	return v
}

// TestLinkAndEmailSettings: email needs answer links; the public URL and
// the secret go together; each refusal names the setting.
func TestLinkAndEmailSettings(t *testing.T) {
	c, err := Load(env(emailVars(nil)), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicURL != "https://ask.example.com" || !c.LinksOn() || c.Email == nil || c.Email.From != "Ask <ask@example.com>" {
		t.Fatalf("loaded %v", c)
	}
	for name, tc := range map[string]struct {
		vars map[string]string
		want string
	}{
		"email without links": {map[string]string{"ASKUSER_PUBLIC_URL": "", "ASKUSER_LINK_SECRET": ""},
			"email (ASKUSER_SMTP_URL) needs answer links: set ASKUSER_PUBLIC_URL and ASKUSER_LINK_SECRET"},
		"url without secret": {map[string]string{"ASKUSER_LINK_SECRET": ""}, "ASKUSER_PUBLIC_URL needs ASKUSER_LINK_SECRET"},
		"secret without url": {map[string]string{"ASKUSER_PUBLIC_URL": ""}, "ASKUSER_LINK_SECRET is set but ASKUSER_PUBLIC_URL is not"},
		"short secret":       {map[string]string{"ASKUSER_LINK_SECRET": "0123456789abcdef"}, "ASKUSER_LINK_SECRET: must be at least 32 bytes (it has 16)"},
		"http beyond loopback": {map[string]string{"ASKUSER_PUBLIC_URL": "http://ask.example.com"},
			"ASKUSER_PUBLIC_URL: must be https:// (http:// only on a loopback host)"},
		"query":                 {map[string]string{"ASKUSER_PUBLIC_URL": "https://ask.example.com/?x=1"}, "ASKUSER_PUBLIC_URL: must have no query"},
		"bad scheme":            {map[string]string{"ASKUSER_SMTP_URL": "http://relay.example.com"}, "ASKUSER_SMTP_URL: must be smtp://host[:port] (STARTTLS) or smtps://host[:port] (TLS)"},
		"no from":               {map[string]string{"ASKUSER_SMTP_FROM": ""}, "ASKUSER_SMTP_FROM is required"},
		"bad from":              {map[string]string{"ASKUSER_SMTP_FROM": "not an address"}, "ASKUSER_SMTP_FROM: \"not an address\" is not an address"},
		"user without password": {map[string]string{"ASKUSER_SMTP_USER": "bridge"}, "ASKUSER_SMTP_USER needs a password"},
		"bad allowlist":         {map[string]string{"ASKUSER_EMAIL_ADDRESSES": "alice@example.com,@,bob"}, "ASKUSER_EMAIL_ADDRESSES: \"@\" is not an address or @<domain>"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(env(emailVars(tc.vars)), noFiles(t))
			got := problemsOf(t, err)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, tc.want) }) {
				t.Errorf("problems %q, want one starting %q", got, tc.want)
			}
		})
	}
	if _, err := Load(env(emailVars(map[string]string{"ASKUSER_PUBLIC_URL": "http://127.0.0.1:8080"})), noFiles(t)); err != nil {
		t.Errorf("http on loopback refused: %v", err)
	}
}

// TestEmailTargets: email:<address> is a target and an answerer, in lower
// case; the allowlist takes addresses and @domain; email off refuses it.
func TestEmailTargets(t *testing.T) {
	platform, chat, err := ParseTarget("email:Alice@Example.com")
	if err != nil || platform != "email" || chat != "alice@example.com" {
		t.Fatalf("ParseTarget = %q, %q, %v", platform, chat, err)
	}
	if _, _, err := ParseTarget("email:Alice <alice@example.com>"); err == nil {
		t.Error("a display name was taken as a target")
	}
	if _, user, err := ParseAnswerer("email:BOB@example.com"); err != nil || user != "bob@example.com" {
		t.Errorf("ParseAnswerer = %q, %v", user, err)
	}
	if _, _, err := ParseAnswerer("email:bob"); err == nil {
		t.Error("email:bob taken as an answerer")
	}
	c, err := Load(env(emailVars(map[string]string{"ASKUSER_EMAIL_ADDRESSES": "alice@example.com,@Ops.Example.org"})), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	for to, ok := range map[string]bool{
		"email:alice@example.com": true, "email:ALICE@example.com": true, "email:carol@ops.example.org": true,
		"email:bob@example.com": false, "email:eve@evil-ops.example.org": false, "email:x@example.org": false,
	} {
		_, err := c.Resolve(to)
		if (err == nil) != ok {
			t.Errorf("Resolve(%q) = %v, want allowed %v", to, err, ok)
		}
		if !ok && !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Resolve(%q) = %v, want ErrNotAllowed", to, err)
		}
	}
	off, err := Load(env(nil), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.Resolve("email:alice@example.com"); !errors.Is(err, ErrPlatformOff) {
		t.Errorf("email off: Resolve = %v, want ErrPlatformOff", err)
	}
}

// TestMatrixTargets: matrix:<room id> is a target and matrix:<user id> an
// answerer; an alias, a bare name or a malformed id is refused with what
// to write instead.
func TestMatrixTargets(t *testing.T) {
	if p, chat, err := ParseTarget("matrix:!abc123:example.org"); err != nil || p != "matrix" || chat != "!abc123:example.org" {
		t.Fatalf("ParseTarget = %q, %q, %v", p, chat, err)
	}
	for _, bad := range []string{"matrix:#ops:example.org", "matrix:ops", "matrix:!abc", "matrix:!a b:example.org"} {
		if _, _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), "matrix:<room id>") {
			t.Errorf("ParseTarget(%q) = %v, want an error naming matrix:<room id>", bad, err)
		}
	}
	if _, user, err := ParseAnswerer("matrix:@alice:example.org"); err != nil || user != "@alice:example.org" {
		t.Errorf("ParseAnswerer = %q, %v", user, err)
	}
	for _, bad := range []string{"matrix:alice", "matrix:@Alice Smith:example.org", "matrix:@alice"} {
		if _, _, err := ParseAnswerer(bad); err == nil {
			t.Errorf("ParseAnswerer(%q) taken", bad)
		}
	}
}
