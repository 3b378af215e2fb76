package markup

import (
	"html"
	"strings"
)

// HTML returns sanitised HTML for the web page, safe to insert with
// innerHTML by construction: only <p>, <strong>, <em>, <code>, <pre>,
// <ul>, <ol>, <li>, <br> and <a href rel="noopener noreferrer nofollow"
// target="_blank"> with an http, https or mailto href, and all text
// escaped with html.EscapeString.
func (d Doc) HTML() string {
	var b strings.Builder
	htmlBlocks(&b, d.blocks, false)
	return b.String()
}

func htmlBlocks(b *strings.Builder, blocks []*block, tight bool) {
	for i, n := range blocks {
		switch n.kind {
		case paraBlock:
			if tight {
				if i > 0 && blocks[i-1].kind == paraBlock {
					b.WriteString("<br>\n")
				}
				htmlSpans(b, n.spans)
				continue
			}
			b.WriteString("<p>")
			htmlSpans(b, n.spans)
			b.WriteString("</p>\n")
		case codeBlock:
			b.WriteString("<pre><code>" + html.EscapeString(n.code) + "</code></pre>\n")
		case listBlock:
			tag := "ul"
			if n.ordered {
				tag = "ol"
			}
			b.WriteString("<" + tag + ">\n")
			for _, item := range n.items {
				b.WriteString("<li>")
				htmlBlocks(b, item, n.tight)
				b.WriteString("</li>\n")
			}
			b.WriteString("</" + tag + ">\n")
		}
	}
}

func htmlSpans(b *strings.Builder, spans []span) {
	for _, s := range spans {
		switch s.kind {
		case textSpan:
			b.WriteString(html.EscapeString(s.text))
		case breakSpan:
			b.WriteString("<br>\n")
		case boldSpan:
			b.WriteString("<strong>")
			htmlSpans(b, s.kids)
			b.WriteString("</strong>")
		case italicSpan:
			b.WriteString("<em>")
			htmlSpans(b, s.kids)
			b.WriteString("</em>")
		case codeSpan:
			b.WriteString("<code>" + html.EscapeString(s.text) + "</code>")
		case linkSpan:
			b.WriteString(`<a href="` + html.EscapeString(s.href) + `" rel="noopener noreferrer nofollow" target="_blank">` +
				html.EscapeString(s.text) + "</a>")
		}
	}
}
