//lint:file-ignore ST1005 these are the Bot API's own error texts, word for word

package telegramtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// parseHTML parses text the way Telegram reads parse_mode HTML and returns
// the plain text a person sees. It refuses what Telegram refuses, with
// Telegram's descriptions: unknown tags ("Unsupported start tag"), end tags
// that close nothing ("Unexpected end tag"), tags left open ("Can't find end
// tag corresponding to start tag"). Supported (Bot API "HTML style"): b,
// strong, i, em, u, ins, s, strike, del, span class="tg-spoiler",
// tg-spoiler, a href, code, pre, blockquote, tg-emoji; entities &lt; &gt;
// &amp; &quot; and numeric ones; other named entities stay as written.
func parseHTML(s string) (string, error) {
	var out strings.Builder
	var stack []string
	i := 0
	for i < len(s) {
		switch s[i] {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("Can't find end of the tag starting at byte offset %d", i)
			}
			tag := s[i+1 : i+end]
			if strings.HasPrefix(tag, "/") {
				name := strings.ToLower(strings.TrimSpace(tag[1:]))
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("Unexpected end tag at byte offset %d", i)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, attrs, _ := strings.Cut(tag, " ")
				name = strings.ToLower(name)
				if !supportedTag(name, attrs) {
					return "", fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, i)
				}
				stack = append(stack, name)
			}
			i += end + 1
		case '&':
			semi := strings.IndexByte(s[i:], ';')
			if semi > 0 && semi < 12 {
				if r, ok := entity(s[i+1 : i+semi]); ok {
					out.WriteString(r)
					i += semi + 1
					continue
				}
			}
			out.WriteByte('&')
			i++
		default:
			out.WriteByte(s[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	return out.String(), nil
}

func supportedTag(name, attrs string) bool {
	switch name {
	case "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler", "code", "pre", "blockquote":
		return true
	case "span":
		return strings.Contains(attrs, `class="tg-spoiler"`)
	case "a":
		return strings.Contains(attrs, "href=")
	case "tg-emoji":
		return strings.Contains(attrs, "emoji-id=")
	}
	return false
}

func entity(name string) (string, bool) {
	switch name {
	case "lt":
		return "<", true
	case "gt":
		return ">", true
	case "amp":
		return "&", true
	case "quot":
		return `"`, true
	}
	if rest, ok := strings.CutPrefix(name, "#"); ok {
		base := 10
		if hex, ok := strings.CutPrefix(strings.ToLower(rest), "x"); ok {
			rest, base = hex, 16
		}
		n, err := strconv.ParseInt(rest, base, 32)
		if err == nil && n > 0 && n <= 0x10FFFF {
			return string(rune(n)), true
		}
	}
	return "", false
}

// utf16Len counts s the way Telegram counts message length.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
