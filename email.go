package askbridge

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"unicode/utf8"
)

// PlatformEmail names email as a place (ask-user.md §10): the target
// "email:<address>", the answerer "email:<address>", and the platform of
// the person who answered through an answer link sent by email.
const PlatformEmail = "email"

// MaxEmailChars bounds an email address (RFC 5321: 254 octets in a path).
const MaxEmailChars = 254

// ParseEmailAddress checks an email address as a target or an answerer
// names it, and returns it in its one form: a bare addr-spec
// ("alice@example.com", no display name and no angle brackets), lower
// case, so "email:Alice@Example.com" and "email:alice@example.com" are
// the same place and the same person.
func ParseEmailAddress(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty email address")
	case len(s) > MaxEmailChars:
		return "", fmt.Errorf("an email address is at most %d bytes", MaxEmailChars)
	case !utf8.ValidString(s) || strings.ContainsAny(s, "<>\"(),;: \t\r\n\\[]"):
		return "", fmt.Errorf("%q is not an email address: write it bare, as alice@example.com", s)
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", fmt.Errorf("%q is not an email address: write it bare, as alice@example.com", s)
	}
	local, domain, _ := strings.Cut(s, "@")
	if local == "" || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") || strings.Contains(domain, "..") {
		return "", fmt.Errorf("%q is not an email address: it needs a name and a domain with a dot, as alice@example.com", s)
	}
	return strings.ToLower(s), nil
}
