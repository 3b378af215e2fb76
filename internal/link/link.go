// Package link makes and checks answer links (ask-user.md §10): a token
// that names one question, one place of it and one person, signed with the
// bridge's link secret (ASKUSER_LINK_SECRET), and the anti-forgery token
// of the page a link opens.
//
// A token is base64url (no padding) of
//
//	version (1) | until (8, Unix seconds, big-endian) | place (1) |
//	len(id) (1) | id | len(platform) (1) | platform | len(person) (1) | person |
//	HMAC-SHA256(key, everything before)[:16]
//
// where key is derived from the secret for links alone, so the secret
// signs nothing else the same way. Check refuses every bad token with the
// one error ErrInvalid, whatever is wrong with it (forged, cut, expired,
// signed with another secret), so a refusal says nothing to whoever
// guesses. Whether the token's question is still open and its person may
// answer there is Redis's to say, not the token's: the page checks that.
package link

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
)

// MinSecret is the shortest link secret taken, in bytes.
const MinSecret = 32

const (
	version = 1
	macLen  = 16
	// maxField bounds each length-prefixed field.
	maxField = 255
	// MaxTokenChars bounds a token a request may carry: longer input is
	// refused before it is decoded.
	MaxTokenChars = 512
)

// ErrInvalid is the one refusal of a token or a form token.
var ErrInvalid = errors.New("link: not a valid link")

// Claims is what a token names.
type Claims struct {
	// ID is the question.
	ID string
	// Place is the index of the place of the question (Record.Places) the
	// link was made for: an answer through it is given there.
	Place int
	// Person is who the link is for: an answer through it is theirs.
	// Only Platform and ID are signed.
	Person askbridge.Person
	// Until is when the token stops working: the question's deadline.
	Until time.Time
}

// Signer makes and checks tokens with one secret. Safe for concurrent use.
type Signer struct {
	linkKey, formKey []byte
}

// NewSigner returns a Signer for secret, which must be at least
// MinSecret bytes.
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("the link secret must be at least %d bytes (got %d)", MinSecret, len(secret))
	}
	return &Signer{linkKey: derive(secret, "askbridge answer link v1"), formKey: derive(secret, "askbridge answer form v1")}, nil
}

func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Token returns the token for c. It fails only for claims no token can
// carry: a field longer than 255 bytes, or a place outside 0–255.
func (s *Signer) Token(c Claims) (string, error) {
	if c.Place < 0 || c.Place > 255 {
		return "", fmt.Errorf("link: place %d out of range", c.Place)
	}
	b := make([]byte, 0, 64+len(c.ID)+len(c.Person.Platform)+len(c.Person.ID))
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Until.Unix()))
	b = append(b, byte(c.Place))
	for _, f := range []string{c.ID, c.Person.Platform, c.Person.ID} {
		if f == "" || len(f) > maxField {
			return "", fmt.Errorf("link: a field of %d bytes cannot be signed", len(f))
		}
		b = append(b, byte(len(f)))
		b = append(b, f...)
	}
	b = append(b, s.mac(s.linkKey, b)...)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (s *Signer) mac(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return m.Sum(nil)[:macLen]
}

// Check returns what token names, when this secret signed it and its
// Until has not passed at now; ErrInvalid otherwise.
func (s *Signer) Check(token string, now time.Time) (Claims, error) {
	if len(token) > MaxTokenChars || !urlSafe(token) {
		return Claims{}, ErrInvalid
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 1+8+1+macLen {
		return Claims{}, ErrInvalid
	}
	body, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(sum, s.mac(s.linkKey, body)) || body[0] != version {
		return Claims{}, ErrInvalid
	}
	c := Claims{Until: time.Unix(int64(binary.BigEndian.Uint64(body[1:9])), 0), Place: int(body[9])}
	rest := body[10:]
	fields := make([]string, 3)
	for i := range fields {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) || rest[0] == 0 {
			return Claims{}, ErrInvalid
		}
		fields[i], rest = string(rest[1:1+int(rest[0])]), rest[1+int(rest[0]):]
	}
	if len(rest) != 0 {
		return Claims{}, ErrInvalid
	}
	c.ID, c.Person = fields[0], askbridge.Person{Platform: fields[1], ID: fields[2]}
	if !now.Before(c.Until) {
		return Claims{}, ErrInvalid
	}
	return c, nil
}

// urlSafe reports whether s holds only base64url's letters: Go's decoder
// skips line breaks, so a token with one inside would check as another
// spelling of the same token.
func urlSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// FormToken is the anti-forgery token of the page token opens, issued at
// now: the page's form carries it, and only a POST that carries it back
// answers (CheckForm). It is bound to the link's token, so a form token
// of one link cannot answer through another.
func (s *Signer) FormToken(token string, now time.Time) string {
	at := strconv.FormatInt(now.Unix(), 36)
	return at + "." + base64.RawURLEncoding.EncodeToString(s.mac(s.formKey, []byte(at+"."+token)))
}

// CheckForm reports whether form is a form token this secret issued for
// token, no later than now (plus a minute for the replicas' clocks).
// How long a form stays good is the link's own life: the token's Until,
// which Check enforces.
func (s *Signer) CheckForm(token, form string, now time.Time) bool {
	at, sum, ok := strings.Cut(form, ".")
	if !ok || len(form) > 64 {
		return false
	}
	sec, err := strconv.ParseInt(at, 36, 64)
	if err != nil || time.Unix(sec, 0).After(now.Add(time.Minute)) {
		return false
	}
	if !urlSafe(sum) {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sum)
	if err != nil {
		return false
	}
	return hmac.Equal(got, s.mac(s.formKey, []byte(at+"."+token)))
}

// PathPrefix is where the web server serves the page of an answer link:
// <public URL>/a/<token>.
const PathPrefix = "/a/"

// Maker makes answer links: the public URL the bridge's web server is
// reached at (ASKUSER_PUBLIC_URL, no trailing slash) and the signer.
type Maker struct {
	Base   string
	Signer *Signer
	// Grace keeps a link working this long past the Until it is asked
	// for (the question's deadline): the bridge's result retention, so
	// a link opened after its question ended shows the outcome for as
	// long as the result is kept.
	Grace time.Duration
}

// URL is the answer link for c.
func (m Maker) URL(c Claims) (string, error) {
	c.Until = c.Until.Add(m.Grace)
	tok, err := m.Signer.Token(c)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(m.Base, "/") + PathPrefix + tok, nil
}
