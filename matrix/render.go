package matrix

import (
	"html"
	"regexp"
	"strings"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
)

// Event types and content keys of what the channel posts. Polls go out
// with the unstable MSC3381 event types (org.matrix.msc3381.poll.*), the
// ones every poll-capable client renders today (Element X's SDK renders
// no other start type); their content carries every poll block and text
// both ways, unstable and stable (m.poll.start, m.poll.end, m.text), the
// same values under both keys, so a client reading either renders it.
// Responses are read in both forms (see pollResponseKeys).
const (
	typeMessage        = "m.room.message"
	typePollStart      = "org.matrix.msc3381.poll.start"
	typePollEnd        = "org.matrix.msc3381.poll.end"
	keyPollStart       = "org.matrix.msc3381.poll.start"
	keyPollStartStable = "m.poll.start"
	keyPollEnd         = "org.matrix.msc3381.poll.end"
	keyPollEndStable   = "m.poll.end"
	keyText            = "org.matrix.msc1767.text"
	keyTextStable      = "m.text"
	pollDisclosed      = "org.matrix.msc3381.poll.disclosed"
	formatHTML         = "org.matrix.custom.html"
	relReplace         = "m.replace"
	relReference       = "m.reference"
	relThread          = "m.thread"
	msgText            = "m.text"
	msgNotice          = "m.notice"
	keyMentions        = "m.mentions"
	keyRelatesTo       = "m.relates_to"
	keyNewContent      = "m.new_content"
	editBodyPrefix     = "* "
)

// line is one line of a prompt in both forms: plain for body (and the
// poll's text fallback) and HTML for formatted_body. instruction marks how
// to answer, which an ended prompt no longer says.
type line struct {
	plain, html string
	instruction bool
}

// text is a rendered message: body and formatted_body.
type text struct{ plain, html string }

// promptLines renders plan p as lines: the intro, the context, each
// question with its numbered options, the instructions, then the notes,
// a blank line ({}) between the blocks. Everything from the agent is
// escaped; nothing links to a person or a room.
func promptLines(p engine.Plan) []line {
	var ls []line
	blank := func() { ls = append(ls, line{}) }
	ls = append(ls, line{plain: p.Intro, html: "<strong>" + esc(p.Intro) + "</strong>"})
	if p.Context != "" {
		blank()
		doc := markup.Parse(p.Context)
		ls = append(ls, line{plain: strings.TrimSpace(doc.Plain()), html: defusePills(strings.TrimSpace(doc.HTML()))})
	}
	for _, s := range p.Sections {
		blank()
		prefix, title := s.Lead(), s.Asked()
		ls = append(ls, line{
			plain: prefix + "[" + s.Header + "] " + title,
			html:  esc(prefix) + "<strong>[" + esc(s.Header) + "]</strong> " + esc(title),
		})
		for i, o := range s.Options {
			l := engine.OptionLine(i, o)
			ls = append(ls, line{plain: l, html: esc(l)})
		}
	}
	blank()
	ls = append(ls, line{plain: p.FreeText, html: "<em>" + esc(p.FreeText) + "</em>", instruction: true})
	for _, c := range strings.Split(p.Closing, "\n") {
		ls = append(ls, line{plain: c, html: esc(c), instruction: true})
	}
	var notes []line
	for _, n := range p.Notes {
		if strings.TrimSpace(n) != "" {
			notes = append(notes, line{plain: n, html: esc(n)})
		}
	}
	if len(notes) > 0 {
		blank()
		ls = append(ls, notes...)
	}
	return ls
}

// joinText joins lines into a message, leaving the instructions out when
// ended and adding status (bold) when it is not empty. Lines are joined
// with newlines in body and <br> in formatted_body; a blank line between
// blocks stays one blank line.
func joinText(ls []line, ended bool, status string) text {
	var kept []line
	for _, l := range ls {
		switch {
		case ended && l.instruction:
		case l.plain == "" && l.html == "" && (len(kept) == 0 || isBlank(kept[len(kept)-1])):
		default:
			kept = append(kept, l)
		}
	}
	for len(kept) > 0 && isBlank(kept[len(kept)-1]) {
		kept = kept[:len(kept)-1]
	}
	if status != "" {
		if len(kept) > 0 {
			kept = append(kept, line{})
		}
		kept = append(kept, line{plain: status, html: "<strong>" + esc(status) + "</strong>"})
	}
	var plain, htm []string
	for _, l := range kept {
		plain = append(plain, l.plain)
		htm = append(htm, l.html)
	}
	return text{plain: unpill(strings.Join(plain, "\n")), html: unpill(strings.Join(htm, "<br>\n"))}
}

func isBlank(l line) bool { return l.plain == "" && l.html == "" }

// esc makes text safe for formatted_body: &, <, > and quotes become
// entities, so nothing an agent writes becomes markup, a link or a pill.
func esc(s string) string { return html.EscapeString(s) }

// matrixTo matches a link to a Matrix permalink (matrix.to or a matrix:
// URI), which clients show as a pill: the context's Markdown may hold one.
var matrixTo = regexp.MustCompile(`<a href="(?:https?://matrix\.to/|matrix:)[^"]*"[^>]*>(.*?)</a>`)

// defusePills turns links to Matrix permalinks in rendered context back
// into their text, so no user, room or event is ever shown as a pill.
func defusePills(h string) string { return matrixTo.ReplaceAllString(h, "$1") }

// unpill breaks every Matrix permalink left in s (a matrix.to URL in the
// agent's text) with an invisible word joiner, so no client links it or
// shows it as a pill.
func unpill(s string) string { return strings.ReplaceAll(s, "matrix.to/", "matrix\u2060.to/") }

// noMentions is m.mentions with nothing in it: the message pings nobody,
// not even a user or @room its text names (intentional mentions, MSC3952).
func noMentions() map[string]any { return map[string]any{} }

// textContent is the content of a ModeText prompt or an edit's new
// content: an m.text message with HTML.
func textContent(t text, msgtype string) map[string]any {
	return map[string]any{
		"msgtype":        msgtype,
		"body":           t.plain,
		"format":         formatHTML,
		"formatted_body": t.html,
		keyMentions:      noMentions(),
	}
}

// pollQuestion is the question a poll asks: the plan's one section.
func pollQuestion(p engine.Plan) string {
	if len(p.Sections) == 0 {
		return unpill(p.Intro)
	}
	s := p.Sections[0]
	if s.Header == "" {
		return unpill(s.Question)
	}
	return unpill("[" + s.Header + "] " + s.Question)
}

// texts is s under both text keys, the unstable org.matrix.msc1767.text
// and the stable m.text, with more (such as body) added.
func texts(s string, more map[string]any) map[string]any {
	m := map[string]any{keyText: s, keyTextStable: s}
	for k, v := range more {
		m[k] = v
	}
	return m
}

// pollContent is the content of a ModeButtons prompt: a disclosed poll
// with one answer per button, each answer's id the button's payload, so
// a vote maps back to the tap it stands for. The poll block goes under
// both org.matrix.msc3381.poll.start and m.poll.start (one value: a
// client reading either key sees the same poll) and every text under both
// text keys. The text fallback (body and the text keys) is the whole
// prompt with numbered options, for clients that show no polls; status,
// when set, is added to it (the poll as edited when the question ends).
func pollContent(p engine.Plan, status string) map[string]any {
	t := joinText(promptLines(p), status != "", status)
	var answers []map[string]any
	for _, b := range p.Buttons() {
		answers = append(answers, texts(unpill(b.Label), map[string]any{"id": b.Payload}))
	}
	poll := map[string]any{
		"kind":           pollDisclosed,
		"max_selections": 1,
		"question":       texts(pollQuestion(p), map[string]any{"body": pollQuestion(p), "msgtype": msgText}),
		"answers":        answers,
	}
	return texts(t.plain, map[string]any{
		"body":             t.plain,
		keyPollStart:       poll,
		keyPollStartStable: poll,
		keyMentions:        noMentions(),
	})
}

// pollEndContent ends poll (an event id) with the status line as its
// text, marked as an end both ways (org.matrix.msc3381.poll.end and
// m.poll.end).
func pollEndContent(poll, status string) map[string]any {
	return texts(status, map[string]any{
		"body":           status,
		keyPollEnd:       map[string]any{},
		keyPollEndStable: map[string]any{},
		keyRelatesTo:     map[string]any{"rel_type": relReference, "event_id": poll},
		keyMentions:      noMentions(),
	})
}

// editContent replaces message orig with content (m.replace): the edit's
// own body is the new body marked with "* ", as clients that show no
// edits show it.
func editContent(orig string, content map[string]any) map[string]any {
	edit := map[string]any{}
	for k, v := range content {
		edit[k] = v
	}
	if b, ok := content["body"].(string); ok {
		edit["body"] = editBodyPrefix + b
		for _, k := range []string{keyText, keyTextStable} {
			if _, ok := content[k]; ok {
				edit[k] = editBodyPrefix + b
			}
		}
	}
	if h, ok := content["formatted_body"].(string); ok {
		edit["formatted_body"] = editBodyPrefix + h
	}
	edit[keyNewContent] = content
	edit[keyRelatesTo] = map[string]any{"rel_type": relReplace, "event_id": orig}
	return edit
}

// noticeContent is a notice the bridge posts in a room (an engine's
// answer to a vote or a reply), plain text escaped, in the thread of
// prompt (and as a reply to it, for clients without threads), pinging
// nobody.
func noticeContent(prompt, words string) map[string]any {
	c := textContent(text{plain: words, html: esc(words)}, msgNotice)
	if prompt != "" {
		c[keyRelatesTo] = map[string]any{
			"rel_type": relThread, "event_id": prompt, "is_falling_back": true,
			"m.in_reply_to": map[string]any{"event_id": prompt},
		}
	}
	return c
}
