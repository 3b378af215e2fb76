package askbridge

import "testing"

func TestParseEmailAddress(t *testing.T) {
	good := map[string]string{
		"alice@example.com":            "alice@example.com",
		"Alice.Smith@Example.COM":      "alice.smith@example.com",
		"ops+deploys@mail.example.org": "ops+deploys@mail.example.org",
	}
	for in, want := range good {
		got, err := ParseEmailAddress(in)
		if err != nil || got != want {
			t.Errorf("ParseEmailAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "alice", "alice@", "@example.com", "alice@localhost", "Alice <alice@example.com>",
		"<alice@example.com>", "alice@example.com\r\nBcc: eve@example.com", "alice @example.com",
		"alice@example..com", "alice@.example.com", "alice@example.com.", "a,b@example.com",
		"\xff@example.com", string(make([]byte, 300)),
	} {
		if got, err := ParseEmailAddress(in); err == nil {
			t.Errorf("ParseEmailAddress(%q) = %q, want an error", in, got)
		}
	}
}

func FuzzParseEmailAddress(f *testing.F) {
	f.Add("alice@example.com")
	f.Add("Bob <bob@example.com>")
	f.Add("a@b.c\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseEmailAddress(s)
		if err != nil {
			return
		}
		again, err := ParseEmailAddress(got)
		if err != nil || again != got {
			t.Fatalf("not stable: %q -> %q -> %q, %v", s, got, again, err)
		}
	})
}
