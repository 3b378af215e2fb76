package markup

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/askbridge/askbridge/internal/golden"
)

// buildFailure is the kind of context an agent sends with a question.
const buildFailure = "Build **#4821** failed on `release/2.3`. The integration suite timed out:\n" +
	"\n" +
	"```\n" +
	"--- FAIL: TestCheckout (30.01s)\n" +
	"    checkout_test.go:88: context deadline exceeded\n" +
	"FAIL\tshop/checkout\t30.214s\n" +
	"```\n" +
	"\n" +
	"Full log: [CI run 4821](https://ci.example.com/runs/4821?tab=log&attempt=2)\n" +
	"\n" +
	"What changed since the last green build:\n" +
	"\n" +
	"- bumped `pgx` to v5.6\n" +
	"- new retry policy in *payments*\n" +
	"- @dana's cache change\n"

// cases are the golden inputs, also the fuzzer's seeds.
var cases = []struct {
	name string
	src  string
}{
	{"bold", "Deploy **now** or __later__."},
	{"italic", "It is *probably* fine, _probably_."},
	{"inline_code", "Run `make test` and ``a ` tick`` and `` `edge` ``."},
	{"code_fenced", "```go\nfunc main() {\n\tfmt.Println(\"<hi> & bye\")\n}\n```"},
	{"code_indented", "Output:\n\n    line one\n    line two\n"},
	{"code_backticks", "```\nuse ``` to fence, or ````\n`\n```"},
	{"link", "See [the docs](https://example.com/docs?a=1&b=2 \"title\") and [mail](mailto:ops@example.com)."},
	{"autolink", "<https://example.com/a_b> and <ops@example.com> and https://example.org/x?y=1 and www.example.net."},
	{"bullet_list", "- one\n- two\n- three"},
	{"ordered_list", "3. three\n4. four\n\n   more about four\n5. five"},
	{"nested_list", "- fruit\n  - apple\n  - pear\n    1. green\n    2. red\n- veg\n\n  ```\n  code in item\n  ```"},
	{"unsupported", "# Heading *one*\n\n> quoted **text**\n\n---\n\n![alt text](https://example.com/a.png)\n\nSetext\n===\n\n| a | b |\n|---|---|\n| 1 | 2 |"},
	{"breaks", "log line 1\nlog line 2  \nlog line 3\\\nlog line 4"},
	{"entities", "&amp; &lt;b&gt; &copy; &#64;everyone &#x3C;@123&#x3E; \\*not italic\\* 1\\. not a list"},
	{"build_failure", buildFailure},
	{"mentions", "@everyone @here <@123> <@!123> <@&456> <#789> <!channel> <!here> <@U123ABC> <!subteam^S1> @username @_x @9 a@b " +
		"and `@everyone <@123>` and @ชื่อ ผู้ใช้\n\n```\n@here <@&1> <#2>\n```"},
	{"raw_html", "<script>alert(1)</script>\n\nInline <b onclick=\"steal()\">bold?</b> and <a href=\"javascript:alert(1)\">click</a> <!-- note -->"},
	{"bad_links", "[click](javascript:alert(1)) [x](JaVaScRiPt:alert(1)) [y](&#106;avascript:alert(1)) [d](data:text/html,hi) " +
		"[rel](/etc/passwd) [user](https://user@evil.example.com) [tg](tg://user?id=1) [ftp](ftp://example.com) [](https://example.com/empty)"},
	{"phishing_link", "[https://bank.example.com](https://evil.example.net/login)"},
	{"unclosed_fence", "Before\n\n```sh\nrm -rf /tmp/x\necho done"},
	{"nested_emphasis", "***both*** and **bold *italic* bold** and *it **bo** it* and **a**__b__ and foo**bar**baz and **`code` in bold**"},
	{"thai", "ผู้ใช้ **สำคัญ** ต้องตรวจสอบ `ข้อมูล` ก่อน ส่งต่อ @ผู้ดูแล กรุณา"},
	{"discord_syntax", "1. real list\n\n2\\. fake list\n\\- dash\n\\# not heading\n\\> not quote\n||spoiler|| ~~strike~~ __under__ -# sub <t:1700000000> :smile: <:emoji:123>"},
}

// render writes every rendering of d, each chat block under a header
// with its length as the platform counts it.
func blocksFile(blocks []string, width func(string) int) []byte {
	var b strings.Builder
	for i, s := range blocks {
		fmt.Fprintf(&b, "=== block %d (%d) ===\n%s\n", i+1, width(s), s)
	}
	return []byte(b.String())
}

func checkAll(t *testing.T, name string, d Doc, tg, dc, sl int) {
	t.Helper()
	golden.Check(t, name+".telegram.html", blocksFile(d.Telegram(tg), telegramVisibleLen))
	golden.Check(t, name+".discord.md", blocksFile(d.Discord(dc), utf16Len))
	golden.Check(t, name+".slack.txt", blocksFile(d.Slack(sl), utf16Len))
	golden.Check(t, name+".html", []byte(d.HTML()))
	golden.Check(t, name+".txt", []byte(d.Plain()))
}

func TestGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAll(t, tc.name, Parse(tc.src), 4096, 2000, 3000)
		})
	}
}

// TestHeadingIsPlainText: a heading, ATX or setext, is not a format of
// the contract (ask-user.md §7): it shows as a paragraph of its text on
// every platform, not bold; emphasis inside it stays emphasis.
func TestHeadingIsPlainText(t *testing.T) {
	for _, src := range []string{"# Deploy failed\n\nRetry?", "### Deploy failed ###\n\nRetry?", "Deploy failed\n===\n\nRetry?", "Deploy failed\n---\n\nRetry?"} {
		d := Parse(src)
		for platform, got := range map[string]string{
			"telegram": strings.Join(d.Telegram(4096), "\n"),
			"discord":  strings.Join(d.Discord(2000), "\n"),
			"slack":    strings.Join(d.Slack(3000), "\n"),
			"web":      d.HTML(),
			"plain":    d.Plain(),
		} {
			want := map[string]string{"telegram": "Deploy failed\n", "discord": "Deploy failed\n", "slack": "Deploy failed\n", "web": "<p>Deploy failed</p>", "plain": "Deploy failed\n"}[platform]
			if !strings.HasPrefix(got, want) {
				t.Errorf("%q on %s: %q, want it to start with %q", src, platform, got, want)
			}
		}
	}
	if got := Parse("## Step **2** failed").Telegram(4096); len(got) != 1 || got[0] != "Step <b>2</b> failed" {
		t.Errorf("emphasis in a heading on Telegram: %q", got)
	}
}

// mixed is n characters of everything at once, as a long context is.
func mixed(n int) string {
	parts := []string{
		"Step **N** of the rollout touched `svc-N` and *worked* on most hosts, see [run N](https://ci.example.com/r/N).\n\n",
		"- host-N: ok\n- host-N: **failed** with `exit 1`\n\n",
		"```\n[N] error: connection refused (attempt 1)\n[N] error: connection refused (attempt 2)\n```\n\n",
		"Ask @oncall-N before retrying; ผู้ดูแล N ตรวจสอบแล้ว.\n\n",
	}
	var b strings.Builder
	for i := 0; utf8.RuneCountInString(b.String()) < n; i++ {
		b.WriteString(strings.ReplaceAll(parts[i%len(parts)], "N", strconv.Itoa(i)))
	}
	return string([]rune(b.String())[:n])
}

func TestGoldenSplit(t *testing.T) {
	long := mixed(MaxChars)
	if n := len([]rune(long)); n != MaxChars {
		t.Fatalf("mixed(%d) has %d runes", MaxChars, n)
	}
	d := Parse(long)
	checkAll(t, "split/mixed_3000_at_500", d, 500, 500, 500)
	checkAll(t, "split/mixed_3000_at_40", d, 40, 40, 40)

	para := strings.Repeat("**bold words that go on** and *italic ones* with `code spans` and [a link](https://example.com/l) ", 8)
	checkAll(t, "split/long_paragraph_at_100", Parse(para), 100, 100, 100)

	thai := strings.Repeat("ผู้ใช้ที่สำคัญต้องตรวจสอบข้อมูลก่อน", 6) + " **" + strings.Repeat("น้ำ", 30) + "**"
	checkAll(t, "split/thai_at_40", Parse(thai), 40, 40, 40)

	code := "```\n" + strings.Repeat("x := compute(\"value\") // a long line of code that cannot fit ```\n", 4) + "```"
	checkAll(t, "split/code_at_60", Parse(code), 60, 60, 60)
}

func TestLinkURL(t *testing.T) {
	for _, tc := range []struct {
		dest, href string // href "" means not a live link
	}{
		{"https://example.com/a?b=1&c=2#d", "https://example.com/a?b=1&c=2#d"},
		{"HTTP://Example.com", "http://Example.com"},
		{"http://example.com:8080/x", "http://example.com:8080/x"},
		{"https://example.com/a b<c>\"d|e`f", "https://example.com/a%20b%3Cc%3E%22d%7Ce%60f"},
		{"https://ru.wikipedia.org/wiki/Тест", "https://ru.wikipedia.org/wiki/%D0%A2%D0%B5%D1%81%D1%82"},
		{"https://example.com/100%", "https://example.com/100%25"},
		{"mailto:ops@example.com", "mailto:ops@example.com"},
		{"javascript:alert(1)", ""},
		{"JaVaScRiPt:alert(1)", ""},
		{" javascript:alert(1)", ""},
		{"java\tscript:alert(1)", ""},
		{"data:text/html,<script>", ""},
		{"vbscript:x", ""},
		{"file:///etc/passwd", ""},
		{"tg://user?id=1", ""},
		{"ftp://example.com", ""},
		{"//evil.example.com", ""},
		{"/relative", ""},
		{"http://", ""},
		{"http:example.com", ""},
		{"https://user:pw@evil.example.com", ""},
		{"https://exa mple.com", ""},
		{"https://example.com:99999", ""},
		{"mailto:", ""},
	} {
		href, ok := linkURL(tc.dest)
		if ok != (tc.href != "") || href != tc.href {
			t.Errorf("linkURL(%q) = %q, %v; want %q", tc.dest, href, ok, tc.href)
		}
	}
}

func TestTelegramLinks(t *testing.T) {
	// Telegram refuses a message with a link it finds invalid: only web
	// addresses under a top-level domain are links there.
	for src, want := range map[string]string{
		"[a](https://example.com/x)":  `<a href="https://example.com/x">a</a>`,
		"[a](http://localhost:8080/)": "a (http://localhost:8080/)",
		"[a](https://10.0.0.1/)":      "a (https://10.0.0.1/)",
		"[a](mailto:ops@example.com)": "a (mailto:ops@\u2060example.com)",
		"<https://example.com/&amp;>": `<a href="https://example.com/&amp;amp;">https://example.com/&amp;amp;</a>`,
	} {
		if got := Parse(src).Telegram(4096); len(got) != 1 || got[0] != want {
			t.Errorf("Telegram(%q) = %q, want %q", src, got, want)
		}
	}
}

func TestLimitsCountUTF16(t *testing.T) {
	// Each emoji is two UTF-16 code units: 8 fit in 16.
	d := Parse(strings.Repeat("😀", 20))
	for name, blocks := range map[string][]string{"Telegram": d.Telegram(16), "Discord": d.Discord(16), "Slack": d.Slack(16)} {
		var n []int
		for _, b := range blocks {
			n = append(n, utf8.RuneCountInString(b))
		}
		if fmt.Sprint(n) != "[8 8 4]" {
			t.Errorf("%s cuts 20 emoji at 16 into %v runes, want [8 8 4]", name, n)
		}
	}
}

func TestCutReopensFormatting(t *testing.T) {
	d := Parse("**" + strings.TrimSpace(strings.Repeat("bold words ", 30)) + "**")
	for name, tc := range map[string]struct {
		blocks      []string
		open, close string
	}{
		"Telegram": {d.Telegram(50), "<b>", "</b>"},
		"Discord":  {d.Discord(50), "**", "**"},
		"Slack":    {d.Slack(50), "*", "*"},
	} {
		if len(tc.blocks) < 5 {
			t.Errorf("%s: %d blocks, want the text cut", name, len(tc.blocks))
		}
		for _, b := range tc.blocks {
			inner := strings.TrimSuffix(strings.TrimPrefix(b, tc.open), tc.close)
			if len(inner) != len(b)-len(tc.open)-len(tc.close) || strings.TrimSpace(inner) != inner || strings.Contains(inner, "*") {
				t.Errorf("%s block %q is not one bold run cut between words", name, b)
			}
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, src := range []string{"", " \n\n\t", "` `", "```\n\n```", "![](x.png)", "<!-- -->"[:0]} {
		d := Parse(src)
		if tg, dc, sl, h, p := d.Telegram(100), d.Discord(100), d.Slack(100), d.HTML(), d.Plain(); len(tg)+len(dc)+len(sl) > 0 || h != "" || p != "" {
			t.Errorf("Parse(%q) renders %q %q %q %q %q, want nothing", src, tg, dc, sl, h, p)
		}
	}
	var zero Doc
	if zero.Telegram(100) != nil || zero.HTML() != "" || zero.Plain() != "" {
		t.Error("the zero Doc renders something")
	}
}
