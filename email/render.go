package email

import (
	_ "embed"
	"html/template"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/locale"
)

// letter is what one email says, before it is put into MIME: the subject
// and the same words as plain text and as HTML.
type letter struct {
	Subject string
	Text    string
	HTML    string
}

// view is what the HTML and text renderings of an email are made from.
// Every field but Context is plain text, escaped by the renderer; Context
// is the sanitised HTML of internal/markup.
type view struct {
	Lang    string
	Subject string
	// Lead is the first line, in bold: who asks, the reminder, the end.
	Lead string
	// Lines follow the lead, one paragraph each.
	Lines []string
	// Context is the agent's Markdown context: ContextText in the text
	// part, Context (sanitised by internal/markup) in the HTML part.
	ContextText string
	Context     template.HTML
	Sections    []section
	Notes       []string
	// Button is the label of the link's button; empty: no button.
	Button   string
	LinkText string
	Link     string
	Footer   string
}

// section is one question as an email shows it.
type section struct {
	Title    string
	Header   string
	Question string
	Number   int
	Hint     string
	// Options are the question's options, labels as the agent wrote
	// them (a recommended one carries its "(Recommended)").
	Options []askbridge.Option
}

// maxSubject bounds a subject line in characters: a longer question is
// cut with "…" (the whole question is in the body).
const maxSubject = 140

// subject is the subject of a prompt: the first question's header and
// text, and how many more questions the email holds.
func subject(p engine.Plan) string {
	if len(p.Sections) == 0 {
		return oneLine(p.Intro)
	}
	s := p.Sections[0]
	out := oneLine(s.Header + ": " + s.Question)
	if utf8.RuneCountInString(out) > maxSubject {
		out = string([]rune(out)[:maxSubject-1]) + "…"
	}
	if more := len(p.Sections) - 1; more > 0 {
		out += " " + locale.For(p.Locale).Count("EmailSubjectMore", more, nil)
	}
	return out
}

// oneLine turns every run of spaces and control characters into one
// space: a header field holds one line.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

// sections are the questions of p, with their options.
func sections(p engine.Plan, withOptions bool) []section {
	out := make([]section, 0, len(p.Sections))
	for _, s := range p.Sections {
		v := section{Title: s.Title(), Header: s.Header, Question: s.Question, Number: s.Number, Hint: s.MultiHint}
		if withOptions {
			v.Options = s.Options
		}
		out = append(out, v)
	}
	return out
}

// promptView is the email that asks: who asks, the context, every
// question with its options, the notes, and the answer link.
func promptView(p engine.Plan, link string) view {
	w := locale.For(p.Locale)
	doc := markup.Parse(p.Context)
	return view{
		Lang: w.Tag(), Subject: subject(p), Lead: p.Intro,
		ContextText: doc.Plain(), Context: template.HTML(doc.HTML()), // #nosec: sanitised by markup
		Sections: sections(p, true), Notes: p.Notes,
		Button: w.Get("EmailAnswer"), LinkText: w.Get("EmailLinkText"), Link: link,
		Footer: w.Get("EmailFooter"),
	}
}

// reminderView is a reminder: its text, the questions it is about, and
// the same link.
func reminderView(p engine.Plan, text, link string) view {
	w := locale.For(p.Locale)
	return view{
		Lang: w.Tag(), Subject: w.Get("EmailReminderPrefix") + " " + subject(p), Lead: text,
		Sections: sections(p, false),
		Button:   w.Get("EmailAnswer"), LinkText: w.Get("EmailLinkText"), Link: link,
		Footer: w.Get("EmailFooter"),
	}
}

// endedView is the follow-up of an ended question: that it ended, its
// status line, who answered (when the status line does not say), the
// questions, and the link, whose page shows the outcome.
func endedView(p engine.Plan, status, by, link string) view {
	w := locale.For(p.Locale)
	lines := []string{status}
	if by != "" {
		lines = append(lines, w.Format("EmailEndedBy", map[string]any{"Who": by}))
	}
	return view{
		Lang: w.Tag(), Subject: w.Get("EmailEndedPrefix") + " " + subject(p), Lead: w.Get("EmailEndedIntro"),
		Lines: lines, Sections: sections(p, false),
		LinkText: w.Get("EmailEndedLink"), Link: link,
		Footer: w.Get("EmailFooter"),
	}
}

// render writes v as a letter.
func render(v view) (letter, error) {
	var b strings.Builder
	if err := htmlPage.Execute(&b, v); err != nil {
		return letter{}, err
	}
	return letter{Subject: v.Subject, Text: text(v), HTML: b.String()}, nil
}

// text is the plain-text part of v.
func text(v view) string {
	var b strings.Builder
	b.WriteString(v.Lead + "\n")
	for _, l := range v.Lines {
		b.WriteString("\n" + l + "\n")
	}
	if v.ContextText != "" {
		b.WriteString("\n" + v.ContextText + "\n")
	}
	for _, s := range v.Sections {
		b.WriteString("\n" + s.Title + "\n")
		for i, o := range s.Options {
			b.WriteString(engine.OptionLine(i, o) + "\n")
		}
	}
	for i, n := range v.Notes {
		if i == 0 {
			b.WriteString("\n")
		}
		b.WriteString(n + "\n")
	}
	b.WriteString("\n" + v.LinkText + "\n" + v.Link + "\n")
	b.WriteString("\n-- \n" + v.Footer + "\n")
	return b.String()
}

// pageHTML is the HTML part: inline CSS only, no image, nothing loaded
// from anywhere, every text escaped by html/template.
//
//go:embed page.html
var pageHTML string

var htmlPage = template.Must(template.New("email").Parse(pageHTML))
