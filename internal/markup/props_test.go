package markup

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// The checks below parse the renderers' output on their own, sharing no
// code with them, and hold for any input and any limit.

func FuzzRender(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.src, uint16(4096))
		f.Add(tc.src, uint16(24))
	}
	f.Add(mixed(MaxChars), uint16(100))
	f.Add(mixed(MaxChars), uint16(0))
	f.Add("plain words only\nsecond line   with spaces\n\nnew paragraph ผู้ใช้", uint16(17))
	f.Fuzz(func(t *testing.T, src string, limit uint16) {
		checkRender(t, src, int(limit))
	})
}

// TestRenderProperties runs the fuzz checks over more inputs and limits
// than the seed corpus holds.
func TestRenderProperties(t *testing.T) {
	inputs := []string{mixed(MaxChars), strings.Repeat("@everyone ", 300), strings.Repeat("`", 500),
		strings.Repeat("**a** ", 400), strings.Repeat("e\u0301\u0302\u0303", 50), strings.Repeat("👩‍👩‍👧‍👦", 40),
		"[" + strings.Repeat("long link text ", 20) + "](https://example.com/" + strings.Repeat("p", 300) + ")",
		"<https://example.com/" + strings.Repeat("a", 200) + ">",
		"- " + strings.Repeat("x", 100) + "\n  - " + strings.Repeat("y ", 100) + "\n    1. " + strings.Repeat("`z` ", 40),
		"```" + strings.Repeat("l", 50) + "\n" + strings.Repeat("code ", 100) + "\n```"}
	for _, tc := range cases {
		inputs = append(inputs, tc.src)
	}
	for i, src := range inputs {
		for _, limit := range []int{0, 1, 16, 17, 23, 40, 64, 100, 333, 2000, 4096} {
			t.Run(fmt.Sprintf("%d/%d", i, limit), func(t *testing.T) {
				checkRender(t, src, limit)
			})
		}
	}
}

func checkRender(t *testing.T, src string, limit int) {
	t.Helper()
	d := Parse(src)
	eff := max(limit, minLimit)
	if limit <= 0 {
		eff = 1 << 30
	}
	tg, dc, sl := d.Telegram(limit), d.Discord(limit), d.Slack(limit)
	for _, b := range tg {
		checkTelegram(t, b, eff)
	}
	for _, b := range dc {
		checkDiscord(t, b, eff)
	}
	for _, b := range sl {
		checkSlack(t, b, eff)
	}
	checkHTML(t, d.HTML())
	plain := d.Plain()
	if m := liveMention(plain); m != "" {
		t.Errorf("Plain has a mention %q:\n%s", m, plain)
	}

	// Cutting loses, adds and splits nothing: the grapheme clusters of
	// the blocks, but for spaces, are those of the uncut rendering.
	big := 1 << 20
	widest := widestCluster(telegramVisible(strings.Join(d.Telegram(big), "")))
	if widest <= eff/2 {
		sameClusters(t, "Telegram", visibleClusters(tg, telegramVisible), visibleClusters(d.Telegram(big), telegramVisible))
		if !hasLink(d) {
			sameClusters(t, "Discord", visibleClusters(dc, discordText), visibleClusters(d.Discord(big), discordText))
			sameClusters(t, "Slack", visibleClusters(sl, slackText), visibleClusters(d.Slack(big), slackText))
		}
	}

	// Text without Markdown syntax comes out whole on every platform.
	if !strings.ContainsFunc(src, func(r rune) bool { return r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r)) }) {
		want := letters(normalise(src))
		for name, got := range map[string]string{
			"Telegram": telegramVisible(strings.Join(tg, "\n")),
			"Discord":  discordVisible(strings.Join(dc, "\n")),
			"Slack":    slackVisible(strings.Join(sl, "\n")),
			"HTML":     telegramVisible(d.HTML()),
			"Plain":    plain,
		} {
			if g := letters(got); g != want {
				t.Errorf("%s text differs from the input:\n got %q\nwant %q", name, g, want)
			}
		}
	}
	if !hasLink(d) {
		if p, h := lettersOnly(plain), lettersOnly(telegramVisible(d.HTML())); p != h {
			t.Errorf("HTML text differs from Plain:\n html %q\nplain %q", h, p)
		}
	}
}

// normalise is src as Parse reads it.
func normalise(src string) string {
	src = strings.ToValidUTF8(src, "\uFFFD")
	return strings.NewReplacer("\r\n", "\n", "\r", "\n", "\x00", "\uFFFD").Replace(src)
}

// letters is s without spaces and without the invisible characters the
// renderers add.
func letters(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '\u2060' || r == '\u200B' {
			return -1
		}
		return r
	}, s)
}

// lettersOnly is the letters of s.
func lettersOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsLetter(r) {
			return -1
		}
		return r
	}, s)
}

// telegramVisibleLen is what Telegram counts of a message: the text after
// entity parsing, in UTF-16 code units.
func telegramVisibleLen(s string) int {
	return utf16Len(telegramVisible(s))
}

// telegramVisible is the text of Telegram HTML: tags dropped, entities
// decoded.
func telegramVisible(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		s = s[i+j+1:]
	}
	return html.UnescapeString(b.String())
}

func hasLink(d Doc) bool {
	var spans func([]span) bool
	spans = func(ss []span) bool {
		for _, s := range ss {
			if s.kind == linkSpan || spans(s.kids) {
				return true
			}
		}
		return false
	}
	var blocks func([]*block) bool
	blocks = func(bs []*block) bool {
		for _, b := range bs {
			if spans(b.spans) {
				return true
			}
			for _, item := range b.items {
				if blocks(item) {
					return true
				}
			}
		}
		return false
	}
	return blocks(d.blocks)
}

// liveMention is the first "@" in s followed straight by a letter, digit
// or underscore, with what follows, or "".
func liveMention(s string) string {
	for i, r := range s {
		if r != '@' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(s[i+1:])
		if next == '_' || unicode.IsLetter(next) || unicode.IsDigit(next) {
			return s[i:min(len(s), i+12)]
		}
	}
	return ""
}

var (
	telegramTag  = regexp.MustCompile(`^<(/?(b|i|code|pre|a)|a href="[^"<>]*"|code class="language-[A-Za-z0-9_+\-.#]+")>$`)
	htmlTag      = regexp.MustCompile(`^<(/?(p|strong|em|code|pre|ul|ol|li|a)|br|a href="[^"<>]*" rel="noopener noreferrer nofollow" target="_blank")>$`)
	entity       = regexp.MustCompile(`^&(amp|lt|gt|quot|#34|#39);`)
	slackEntity  = regexp.MustCompile(`^&(amp|lt|gt);`)
	slackLink    = regexp.MustCompile(`^<(https?://|mailto:)[^\s<>|]+(\|[^<>]+)?>`)
	discordLang  = regexp.MustCompile("```[A-Za-z0-9_+\\-.#]*\n")
	safeHrefHTML = []string{"http://", "https://", "mailto:"}
)

// markup walks HTML as the renderers write it: tags must match allowed
// and nest, & must start an entity, and no > stands alone. It returns
// the tags.
func markup(t *testing.T, name, s string, allowed *regexp.Regexp) []string {
	t.Helper()
	var tags, stack []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				t.Fatalf("%s: unclosed tag at %d:\n%s", name, i, s)
			}
			tag := s[i : i+j+1]
			if !allowed.MatchString(tag) {
				t.Fatalf("%s: tag %q not allowed:\n%s", name, tag, s)
			}
			tags = append(tags, tag)
			elem := strings.Trim(strings.Fields(tag)[0], "</>")
			switch {
			case tag == "<br>":
			case strings.HasPrefix(tag, "</"):
				if len(stack) == 0 || stack[len(stack)-1] != elem {
					t.Fatalf("%s: %s closes %v:\n%s", name, tag, stack, s)
				}
				stack = stack[:len(stack)-1]
			default:
				stack = append(stack, elem)
			}
			i += j
		case '>':
			t.Fatalf("%s: bare > at %d:\n%s", name, i, s)
		case '&':
			if !entity.MatchString(s[i:]) {
				t.Fatalf("%s: bare & at %d:\n%s", name, i, s)
			}
		}
	}
	if len(stack) > 0 {
		t.Fatalf("%s: unclosed %v:\n%s", name, stack, s)
	}
	return tags
}

func checkTelegram(t *testing.T, b string, limit int) {
	t.Helper()
	tags := markup(t, "Telegram", b, telegramTag)
	// Telegram's nesting rules: code and pre hold nothing (but pre the
	// <code class> of its language), a link holds no link.
	var stack []string
	for _, tag := range tags {
		elem := strings.Trim(strings.Fields(tag)[0], "</>")
		if strings.HasPrefix(tag, "</") {
			stack = stack[:len(stack)-1]
			continue
		}
		for _, open := range stack {
			if open == "code" || open == "pre" && !strings.HasPrefix(tag, "<code class=") {
				t.Fatalf("Telegram: %s inside <%s>:\n%s", tag, open, b)
			}
			if elem == "a" && open == "a" || (elem == "code" || elem == "pre") && open != "pre" {
				t.Fatalf("Telegram: %s inside <%s>:\n%s", tag, open, b)
			}
		}
		if elem == "a" {
			href := html.UnescapeString(strings.TrimSuffix(strings.TrimPrefix(tag, `<a href="`), `">`))
			if !strings.HasPrefix(href, "http://") && !strings.HasPrefix(href, "https://") {
				t.Fatalf("Telegram: link to %q:\n%s", href, b)
			}
		}
		stack = append(stack, elem)
	}
	v := telegramVisible(b)
	if n := utf16Len(v); n > limit {
		t.Fatalf("Telegram block of %d > %d:\n%s", n, limit, b)
	}
	if strings.TrimSpace(v) == "" {
		t.Fatalf("Telegram: empty block %q", b)
	}
	if m := liveMention(v); m != "" {
		t.Fatalf("Telegram: mention %q:\n%s", m, b)
	}
}

func checkDiscord(t *testing.T, b string, limit int) {
	t.Helper()
	if n := utf16Len(b); n > limit {
		t.Fatalf("Discord block of %d > %d:\n%s", n, limit, b)
	}
	for _, bad := range []string{"<@", "<#", "@everyone", "@here"} {
		if strings.Contains(b, bad) {
			t.Fatalf("Discord: %q in:\n%s", bad, b)
		}
	}
	if m := liveMention(b); m != "" {
		t.Fatalf("Discord: mention %q:\n%s", m, b)
	}
	// Fences pair up, each on a line of its own, so none is in code.
	lines := strings.Split(b, "\n")
	open := false
	for i, l := range lines {
		if !strings.Contains(l, "```") {
			continue
		}
		switch {
		case !open && strings.HasPrefix(l, "```") && strings.Count(l, "```") == 1 && i+1 < len(lines):
			open = true
		case open && l == "```":
			open = false
		default:
			t.Fatalf("Discord: stray fence on line %d:\n%s", i+1, b)
		}
	}
	if open {
		t.Fatalf("Discord: unclosed fence:\n%s", b)
	}
	if n := len(b) - len(strings.TrimRight(b, `\`)); n%2 == 1 {
		t.Fatalf("Discord: block ends in an escaping backslash:\n%s", b)
	}
	// A link's URL cannot end its syntax early or be an embed.
	for _, m := range regexp.MustCompile(`(?:^|[^\\])<(https?:[^>]*)>`).FindAllStringSubmatch(b, -1) {
		if strings.ContainsAny(m[1], " \n()<@") {
			t.Fatalf("Discord: link URL %q:\n%s", m[1], b)
		}
	}
}

func checkSlack(t *testing.T, b string, limit int) {
	t.Helper()
	if n := utf16Len(b); n > limit {
		t.Fatalf("Slack block of %d > %d:\n%s", n, limit, b)
	}
	var text strings.Builder
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '<':
			m := slackLink.FindString(b[i:])
			if m == "" {
				t.Fatalf("Slack: raw < at %d:\n%s", i, b)
			}
			if _, label, ok := strings.Cut(m, "|"); ok {
				text.WriteString(label)
			}
			i += len(m) - 1
			continue
		case '>':
			t.Fatalf("Slack: raw > at %d:\n%s", i, b)
		case '&':
			if !slackEntity.MatchString(b[i:]) {
				t.Fatalf("Slack: bare & at %d:\n%s", i, b)
			}
		}
		text.WriteByte(b[i])
	}
	if m := liveMention(text.String()); m != "" {
		t.Fatalf("Slack: mention %q:\n%s", m, b)
	}
	if strings.Count(b, "```")%2 == 1 {
		t.Fatalf("Slack: unpaired ``` in:\n%s", b)
	}
}

func checkHTML(t *testing.T, h string) {
	t.Helper()
	for _, tag := range markup(t, "HTML", h, htmlTag) {
		if !strings.HasPrefix(tag, "<a ") {
			continue
		}
		href := html.UnescapeString(strings.TrimPrefix(tag, `<a href="`)[:strings.IndexByte(tag[len(`<a href="`):], '"')])
		ok := false
		for _, p := range safeHrefHTML {
			ok = ok || strings.HasPrefix(href, p)
		}
		if !ok {
			t.Fatalf("HTML: link to %q:\n%s", href, h)
		}
	}
}

// discordText is Discord markdown without its code block languages.
func discordText(s string) string {
	return discordLang.ReplaceAllString(s, "```\n")
}

// slackText is mrkdwn with its entities decoded.
func slackText(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

// discordVisible is Discord markdown without its escapes, markup and
// code block languages, roughly what shows: good enough to compare the
// letters of two renderings.
func discordVisible(s string) string {
	return strings.Map(dropMarkup, discordText(s))
}

// slackVisible is mrkdwn with its entities decoded and its markup taken
// out.
func slackVisible(s string) string {
	return strings.Map(dropMarkup, slackText(s))
}

// dropMarkup drops ASCII punctuation and symbols, and the invisible
// characters the renderers add.
func dropMarkup(r rune) rune {
	if r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r)) || r == '\u200B' || r == '\u2060' {
		return -1
	}
	return r
}

// visibleClusters is the grapheme clusters of each block's visible text,
// but for those of white space, ASCII punctuation (which may be markup)
// and the invisible characters the renderers add.
func visibleClusters(blocks []string, visible func(string) string) []string {
	var out []string
	for _, b := range blocks {
		state := -1
		for s := visible(b); s != ""; {
			var g string
			g, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
			if strings.TrimSpace(strings.Map(dropMarkup, g)) != "" {
				out = append(out, g)
			}
		}
	}
	return out
}

func widestCluster(s string) int {
	w := 0
	state := -1
	for s != "" {
		var g string
		g, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		w = max(w, utf16Len(g))
	}
	return w
}

func sameClusters(t *testing.T, name string, cut, whole []string) {
	t.Helper()
	if strings.Join(cut, "\x00") == strings.Join(whole, "\x00") {
		return
	}
	for i := range min(len(cut), len(whole)) {
		if cut[i] != whole[i] {
			t.Fatalf("%s: cut rendering differs from the whole at cluster %d: %q, want %q\ncut:   %q\nwhole: %q",
				name, i, cut[i], whole[i], cut[max(0, i-8):min(len(cut), i+8)], whole[max(0, i-8):min(len(whole), i+8)])
		}
	}
	t.Fatalf("%s: cut rendering has %d clusters, the whole %d", name, len(cut), len(whole))
}
