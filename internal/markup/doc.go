// Package markup renders an agent's context, a short Markdown text shown
// above its questions, in each platform's own formatting: Telegram HTML,
// Discord markdown, Slack mrkdwn, sanitised HTML for the web page, and
// plain text.
//
// Bold, italic, inline code, code blocks, links (http, https and mailto)
// and lists keep their meaning; everything else Markdown has shows as
// plain text, raw HTML included (a heading is a paragraph of its text). No output can mention anyone, and the
// chat renderings cut long context into blocks that each fit a message.
package markup

import (
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// MaxChars is the most characters of context a request may carry. The
// caller enforces it; Parse reads text of any length.
const MaxChars = 3000

// Doc is parsed context, ready to render for any platform. The zero Doc
// is empty and renders as nothing.
type Doc struct {
	blocks []*block
}

type blockKind uint8

const (
	paraBlock blockKind = iota
	codeBlock
	listBlock
)

// block is a paragraph, a code block or a list.
type block struct {
	kind    blockKind
	spans   []span     // paragraph
	code    string     // code block, without its final newline
	lang    string     // code block
	ordered bool       // list
	start   int        // ordered list: the first number
	tight   bool       // list: items without blank lines between them
	items   [][]*block // list
}

type spanKind uint8

const (
	textSpan spanKind = iota
	breakSpan
	boldSpan
	italicSpan
	codeSpan
	linkSpan
)

// span is inline content: text, a line break, bold or italic around
// other spans, inline code, or a link (with plain text only).
type span struct {
	kind spanKind
	text string // text, code, link text
	href string // link: a URL linkURL allowed
	bare bool   // link: the text is the URL itself
	kids []span // bold, italic
}

// md parses CommonMark, turning bare URLs and e-mail addresses into
// links (so none is left for a platform to unfurl) and nothing else.
var md = goldmark.New(goldmark.WithExtensions(extension.Linkify))

// newlines makes every line break "\n" and a NUL the replacement character.
var newlines = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\x00", "\uFFFD")

// Parse reads Markdown context; it never fails and never panics.
func Parse(src string) Doc {
	src = strings.ToValidUTF8(src, "\uFFFD")
	src = newlines.Replace(src)
	blocks, ok := parse(src)
	if !ok {
		// Not expected from goldmark; show the text as it came.
		blocks = para(textSpans(src))
	}
	return Doc{blocks: blocks}
}

// parse reads src with goldmark; ok is false if goldmark panicked.
func parse(src string) (blocks []*block, ok bool) {
	defer func() {
		if recover() != nil {
			blocks, ok = nil, false
		}
	}()
	source := []byte(src)
	root := md.Parser().Parse(text.NewReader(source))
	return converter{src: source}.blocks(root), true
}

// converter turns goldmark's tree into blocks and spans.
type converter struct {
	src []byte
}

func (c converter) blocks(parent ast.Node) []*block {
	var out []*block
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		out = append(out, c.block(n)...)
	}
	return out
}

func (c converter) block(n ast.Node) []*block {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return para(c.inlines(n))
	case *ast.Heading:
		// Not a format of the contract (ask-user.md §7): plain text, as a
		// paragraph, not bold.
		return para(c.inlines(n))
	case *ast.ThematicBreak:
		return para([]span{{kind: textSpan, text: "---"}})
	case *ast.CodeBlock:
		return code("", c.lines(n))
	case *ast.FencedCodeBlock:
		return code(language(unescape(n.Language(c.src))), c.lines(n))
	case *ast.HTMLBlock:
		s := c.lines(n)
		if n.HasClosure() {
			s += "\n" + strings.TrimSuffix(string(n.ClosureLine.Value(c.src)), "\n")
		}
		return para(textSpans(s))
	case *ast.List:
		l := &block{kind: listBlock, ordered: n.IsOrdered(), start: n.Start, tight: n.IsTight}
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			l.items = append(l.items, c.blocks(item))
		}
		return []*block{l}
	}
	// A blockquote, or a node no parser here makes: its content.
	if first := n.FirstChild(); first != nil && first.Type() == ast.TypeInline {
		return para(c.inlines(n))
	}
	return c.blocks(n)
}

// lines is the text of a code or HTML block, without its final newline.
func (c converter) lines(n ast.Node) string {
	var b strings.Builder
	for i := range n.Lines().Len() {
		seg := n.Lines().At(i)
		b.Write(seg.Value(c.src))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (c converter) inlines(parent ast.Node) []span {
	var out []span
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Text:
			v := n.Segment.Value(c.src)
			if n.IsRaw() {
				out = append(out, textSpans(string(v))...)
			} else {
				out = append(out, textSpans(unescape(v))...)
			}
			if n.SoftLineBreak() || n.HardLineBreak() {
				out = append(out, span{kind: breakSpan})
			}
		case *ast.String:
			if n.IsCode() || n.IsRaw() {
				out = append(out, textSpans(string(n.Value))...)
			} else {
				out = append(out, textSpans(unescape(n.Value))...)
			}
		case *ast.CodeSpan:
			out = append(out, span{kind: codeSpan, text: c.plain(n)})
		case *ast.Emphasis:
			kind := italicSpan
			if n.Level >= 2 {
				kind = boldSpan
			}
			out = append(out, emphasis(kind, c.inlines(n))...)
		case *ast.Link:
			out = append(out, link(c.plain(n), unescape(n.Destination), "")...)
		case *ast.AutoLink:
			label := string(n.Label(c.src))
			dest := string(n.URL(c.src))
			alt := ""
			switch {
			case n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(dest), "mailto:"):
				dest = "mailto:" + dest
			case n.Protocol != nil:
				alt = dest // www.example.com stands for http://www.example.com
			}
			out = append(out, link(label, dest, alt)...)
		case *ast.Image:
			out = append(out, textSpans(c.plain(n))...)
		case *ast.RawHTML:
			var b strings.Builder
			for i := range n.Segments.Len() {
				seg := n.Segments.At(i)
				b.Write(seg.Value(c.src))
			}
			out = append(out, textSpans(b.String())...)
		default:
			out = append(out, c.inlines(n)...)
		}
	}
	return out
}

// plain is the text of inline content with its formatting dropped and
// line breaks as spaces: a link's text, an image's alt text, a code span.
func (c converter) plain(parent ast.Node) string {
	var b strings.Builder
	var walk func(ast.Node)
	walk = func(parent ast.Node) {
		for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
			switch n := n.(type) {
			case *ast.Text:
				v := n.Segment.Value(c.src)
				switch {
				case parent.Kind() == ast.KindCodeSpan:
					b.WriteString(strings.ReplaceAll(string(v), "\n", " "))
				case n.IsRaw():
					b.Write(v)
				default:
					b.WriteString(unescape(v))
				}
				if n.SoftLineBreak() || n.HardLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				if n.IsCode() || n.IsRaw() {
					b.Write(n.Value)
				} else {
					b.WriteString(unescape(n.Value))
				}
			case *ast.AutoLink:
				b.Write(n.Label(c.src))
			case *ast.RawHTML:
				for i := range n.Segments.Len() {
					seg := n.Segments.At(i)
					b.Write(seg.Value(c.src))
				}
			default:
				walk(n)
			}
		}
	}
	walk(parent)
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// para is a paragraph of spans, or nothing when they show nothing.
func para(spans []span) []*block {
	if !visible(spans) {
		return nil
	}
	return []*block{{kind: paraBlock, spans: spans}}
}

func visible(spans []span) bool {
	for _, s := range spans {
		switch s.kind {
		case textSpan, codeSpan:
			if strings.TrimFunc(s.text, unicode.IsSpace) != "" {
				return true
			}
		case linkSpan:
			return true
		case boldSpan, italicSpan:
			if visible(s.kids) {
				return true
			}
		}
	}
	return false
}

// code is a code block, or nothing when it shows nothing.
func code(lang, s string) []*block {
	if strings.TrimFunc(s, unicode.IsSpace) == "" {
		return nil
	}
	return []*block{{kind: codeBlock, code: s, lang: lang}}
}

// language keeps a code block's language when it is a plain name such as
// "go" or "c++"; anything else is dropped.
func language(s string) string {
	if len(s) > 20 {
		return ""
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_+-.#", r)) {
			return ""
		}
	}
	return s
}

// textSpans is text as spans, its newlines as line breaks.
func textSpans(s string) []span {
	var out []span
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			out = append(out, span{kind: breakSpan})
		}
		if line != "" {
			out = append(out, span{kind: textSpan, text: line})
		}
	}
	return out
}

// emphasis wraps spans in bold or italic. Spaces at its edges move
// outside (a platform would not close "*a *"), the same emphasis inside
// it is dropped, and emphasis of nothing is no emphasis.
func emphasis(kind spanKind, kids []span) []span {
	kids = unwrap(kind, kids)
	var lead, trail []span
	for len(kids) > 0 {
		k := kids[0]
		if k.kind == breakSpan {
			lead, kids = append(lead, k), kids[1:]
			continue
		}
		if k.kind != textSpan {
			break
		}
		rest := strings.TrimLeftFunc(k.text, unicode.IsSpace)
		if rest != k.text {
			lead = append(lead, span{kind: textSpan, text: k.text[:len(k.text)-len(rest)]})
		}
		if rest != "" {
			kids = append([]span{{kind: textSpan, text: rest}}, kids[1:]...)
			break
		}
		kids = kids[1:]
	}
	for len(kids) > 0 {
		k := kids[len(kids)-1]
		if k.kind == breakSpan {
			trail, kids = append([]span{k}, trail...), kids[:len(kids)-1]
			continue
		}
		if k.kind != textSpan {
			break
		}
		rest := strings.TrimRightFunc(k.text, unicode.IsSpace)
		if rest != k.text {
			trail = append([]span{{kind: textSpan, text: k.text[len(rest):]}}, trail...)
		}
		if rest != "" {
			kids = append(kids[:len(kids)-1:len(kids)-1], span{kind: textSpan, text: rest})
			break
		}
		kids = kids[:len(kids)-1]
	}
	out := lead
	if visible(kids) {
		out = append(out, span{kind: kind, kids: kids})
	} else {
		out = append(out, kids...)
	}
	return append(out, trail...)
}

// unwrap replaces emphasis of the given kind inside spans by its content.
func unwrap(kind spanKind, spans []span) []span {
	var out []span
	for _, s := range spans {
		switch {
		case s.kind == kind:
			out = append(out, unwrap(kind, s.kids)...)
		case s.kind == boldSpan || s.kind == italicSpan:
			s.kids = unwrap(kind, s.kids)
			out = append(out, s)
		default:
			out = append(out, s)
		}
	}
	return out
}

// link is a link with the given text to dest, or plain text when dest may
// not be a live link ("text (dest)", or the text alone when it is the
// destination). alt is another URL the text stands for, as "www.x.org"
// does for "http://www.x.org".
func link(label, dest, alt string) []span {
	href, ok := linkURL(dest)
	if !ok {
		if dest == "" || dest == label || alt != "" {
			return textSpans(label)
		}
		if label == "" {
			return textSpans(dest)
		}
		return textSpans(label + " (" + dest + ")")
	}
	if label == "" {
		label = href
	}
	bare := sameURL(label, href) || alt != "" && sameURL(alt, href) ||
		strings.HasPrefix(href, "mailto:") && sameURL("mailto:"+label, href)
	if !bare && looksLikeURL(label) {
		// Text that reads as another address than the link's: show both.
		return []span{
			{kind: textSpan, text: label + " ("},
			{kind: linkSpan, text: href, href: href, bare: true},
			{kind: textSpan, text: ")"},
		}
	}
	return []span{{kind: linkSpan, text: label, href: href, bare: bare}}
}
