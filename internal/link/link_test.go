package link

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
)

var (
	secret = bytes.Repeat([]byte("k"), MinSecret)
	other  = bytes.Repeat([]byte("o"), MinSecret)
	now    = time.Unix(1_800_000_000, 0)
	claims = Claims{ID: "ask-0123", Place: 2, Person: askbridge.Person{Platform: "email", ID: "alice@example.com"}, Until: now.Add(time.Hour)}
)

func signer(t testing.TB, key []byte) *Signer {
	t.Helper()
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	s := signer(t, secret)
	tok, err := s.Token(claims)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(tok, "/+=.") {
		t.Fatalf("token %q is not URL-safe base64", tok)
	}
	got, err := s.Check(tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != claims.ID || got.Place != claims.Place || got.Person != claims.Person || !got.Until.Equal(claims.Until) {
		t.Fatalf("Check = %+v, want %+v", got, claims)
	}
}

func TestRefusals(t *testing.T) {
	s := signer(t, secret)
	tok, _ := s.Token(claims)
	raw := []byte(tok)
	flipped := append([]byte(nil), raw...)
	flipped[10] ^= 1
	otherTok, _ := signer(t, other).Token(claims)
	cases := map[string]struct {
		tok string
		at  time.Time
	}{
		"expired":             {tok, claims.Until},
		"other secret":        {otherTok, now},
		"flipped":             {string(flipped), now},
		"cut":                 {tok[:len(tok)-3], now},
		"empty":               {"", now},
		"not base64":          {"!!!", now},
		"too long":            {strings.Repeat("A", MaxTokenChars+1), now},
		"padding appended":    {tok + "AAAA", now},
		"a line break inside": {tok[:20] + "\r\n" + tok[20:], now},
	}
	for name, c := range cases {
		if _, err := s.Check(c.tok, c.at); err != ErrInvalid {
			t.Errorf("%s: Check = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := NewSigner(secret[:MinSecret-1]); err == nil {
		t.Error("a short secret was taken")
	}
	for _, bad := range []Claims{{ID: "", Person: claims.Person}, {ID: "x", Place: 256, Person: claims.Person}, {ID: strings.Repeat("x", 256), Person: claims.Person}} {
		if _, err := s.Token(bad); err == nil {
			t.Errorf("Token(%+v) signed", bad)
		}
	}
}

func TestForm(t *testing.T) {
	s := signer(t, secret)
	tok, _ := s.Token(claims)
	tok2, _ := s.Token(Claims{ID: "ask-other", Person: claims.Person, Until: claims.Until})
	form := s.FormToken(tok, now)
	if !s.CheckForm(tok, form, now.Add(time.Minute)) {
		t.Fatal("the page's own form token was refused")
	}
	for name, f := range map[string]string{
		"another link's":  s.FormToken(tok2, now),
		"other secret":    signer(t, other).FormToken(tok, now),
		"from the future": s.FormToken(tok, now.Add(time.Hour)),
		"empty":           "",
		"garbage":         "abc.def",
	} {
		if s.CheckForm(tok, f, now) {
			t.Errorf("%s form token taken", name)
		}
	}
}

func FuzzCheck(f *testing.F) {
	s := signer(f, secret)
	tok, _ := s.Token(claims)
	f.Add(tok)
	f.Add("")
	f.Add("AQAAAABrSeJgAgA")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := s.Check(in, now)
		if err != nil {
			return
		}
		again, err := s.Token(c)
		if err != nil || again != in {
			t.Fatalf("a token that checks does not round-trip: %q -> %+v -> %q, %v", in, c, again, err)
		}
	})
}
