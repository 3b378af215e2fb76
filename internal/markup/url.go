package markup

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/util"
)

// linkURL is dest as the URL of a live link: percent-encoded so it holds
// no space, quote, angle bracket, pipe or backslash, its scheme in lower
// case. ok is false unless it is http or https with a host name (and no
// user name, which can disguise the host) or mailto with an address.
func linkURL(dest string) (href string, ok bool) {
	u := encodeURL(dest)
	p, err := url.Parse(u)
	if err != nil {
		return "", false
	}
	scheme := strings.ToLower(p.Scheme)
	switch scheme {
	case "http", "https":
		if p.Opaque != "" || p.User != nil || !hostName(p.Host) {
			return "", false
		}
	case "mailto":
		if p.Opaque == "" {
			return "", false
		}
	default:
		return "", false
	}
	return scheme + u[len(p.Scheme):], true
}

// hostName reports whether h is a host name with an optional port: ASCII
// letters, digits, '-', '_' and dots.
func hostName(h string) bool {
	name, port, found := strings.Cut(h, ":")
	if found {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
	}
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// publicHost reports whether an http(s) URL names a host under a top-level
// domain, as Telegram wants of a link (it refuses a message whose link it
// finds invalid).
func publicHost(href string) bool {
	p, err := url.Parse(href)
	if err != nil || p.Scheme != "http" && p.Scheme != "https" {
		return false
	}
	name := p.Hostname()
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || len(name)-i-1 < 2 {
		return false
	}
	for _, r := range name[i+1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// encodeURL percent-encodes every byte of s but ASCII letters, digits,
// the URL punctuation -._~:/?#@!$&'()*+,;= and existing %XX escapes.
func encodeURL(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			strings.IndexByte("-._~:/?#@!$&'()*+,;=", c) >= 0:
			b.WriteByte(c)
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// sameURL reports whether text, read as a URL, is href.
func sameURL(text, href string) bool {
	h, ok := linkURL(text)
	return ok && h == href
}

// looksLikeURL reports whether link text reads as a web address.
func looksLikeURL(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Contains(s, "://") || strings.HasPrefix(s, "www.") || strings.HasPrefix(s, "mailto:")
}

// unescape is Markdown text as it reads: backslash escapes and entity and
// numeric character references resolved, as CommonMark does.
func unescape(src []byte) string {
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src) && util.IsPunct(src[i+1]):
			b.WriteByte(src[i+1])
			i++
			continue
		case c == '&':
			if s, n := reference(src[i:]); n > 0 {
				b.WriteString(s)
				i += n - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// reference resolves the character reference src starts with, returning
// its text and length, or n == 0 when it starts with none.
func reference(src []byte) (s string, n int) {
	end := -1
	for i := 1; i < len(src) && i < 40; i++ {
		if src[i] == ';' {
			end = i
			break
		}
	}
	if end < 2 {
		return "", 0
	}
	body := string(src[1:end])
	if body[0] == '#' {
		digits, base, max := body[1:], 10, 7
		if digits != "" && (digits[0] == 'x' || digits[0] == 'X') {
			digits, base, max = digits[1:], 16, 6
		}
		if digits == "" || len(digits) > max {
			return "", 0
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return "", 0
		}
		r := rune(v)
		if r == 0 || !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		return string(r), end + 1
	}
	for _, c := range []byte(body) {
		if !util.IsAlphaNumeric(c) {
			return "", 0
		}
	}
	if e, ok := util.LookUpHTML5EntityByName(body); ok {
		return string(e.Characters), end + 1
	}
	return "", 0
}
