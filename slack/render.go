package slack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
)

// Limits of Block Kit and chat.postMessage, each from Slack's reference.
const (
	// Slack: "You can include up to 50 blocks in each message"
	// (reference/block-kit/blocks).
	maxBlocks = 50
	// Slack: an actions block holds at most 25 elements (actions-block).
	maxActionElements = 25
	// Slack: a section block's text is at most 3000 characters (section block).
	maxSectionChars = 3000
	// Slack: a button's text is at most 75 characters (button-element).
	maxButtonLabel = 75
	// Slack: a button's value is at most 2000 characters (button-element).
	maxButtonValue = 2000
	// Slack: a header block's text is at most 150 characters (header block).
	maxHeaderChars = 150
	// Slack: chat.postMessage truncates `text` above 40,000 characters
	// (changelog 2018-04, truncating really long messages).
	maxTextChars = 40000
)

// actionIDPrefix starts the action_id of every button the bridge makes;
// Slack: action_id is at most 255 characters and unique in its block.
const actionIDPrefix = "askbridge_"

// Escape makes agent text safe for mrkdwn: Slack's control characters are
// &, < and >, and every mention (<!channel>, <!here>, <@U…>) needs a "<", so
// escaped text can never notify anyone (Slack: "Escaping text" in
// formatting messages).
func Escape(s string) string { return escaper.Replace(s) }

var (
	escaper   = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// unescape turns the text of a person's message, which Slack delivers
// escaped, back into what they typed.
func unescape(s string) string { return unescaper.Replace(s) }

// message is one chat.postMessage of a prompt.
type message struct {
	Text   string
	Blocks []slack.Block
}

// piece is one block of a prompt. A live piece (the instructions,
// Plan.FreeText and Plan.Closing, and the buttons) is shown only while the
// question is open; the others stay in the message when it ends.
type piece struct {
	block slack.Block
	live  bool
}

// mrkdwn is a section of escaped text; verbatim so Slack does not turn
// names into links or mentions on its own.
func mrkdwn(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, true), nil, nil)
}

// sections renders text, escaped, as section blocks of at most
// maxSectionChars each. The text is cut before it is escaped, so an entity
// such as &amp; is never cut in two. A blank part makes no block: Slack
// refuses a section without text (invalid_blocks).
func sections(text string) []slack.Block {
	var out []slack.Block
	for _, part := range splitEscaped(text, maxSectionChars) {
		if strings.TrimSpace(part) != "" {
			out = append(out, mrkdwn(part))
		}
	}
	return out
}

// splitEscaped cuts text into parts whose escaped form fits limit, and
// returns them escaped.
func splitEscaped(text string, limit int) []string {
	var out []string
	var cut func(s string, n int)
	cut = func(s string, n int) {
		for _, part := range engine.SplitText(s, n) {
			esc := Escape(part)
			if engine.TextLength(esc) <= limit || n <= 1 {
				out = append(out, esc)
				continue
			}
			cut(part, n/2)
		}
	}
	cut(text, limit)
	return out
}

// introBlocks is the intro as a header block (none for a blank intro:
// Slack refuses a header without text).
func introBlocks(plan engine.Plan) []slack.Block {
	if strings.TrimSpace(plan.Intro) == "" {
		return nil
	}
	return []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, engine.CutLabel(plan.Intro, maxHeaderChars), false, false))}
}

// contextBlocks renders the plan's Markdown context as mrkdwn sections:
// markup's Slack blocks, each at most a section's maxSectionChars, packed
// into one section (joined by a blank line, as markup's blocks are meant
// to be) while they fit. Its links are <url|text> links, which no message
// of the channel unfurls (see quiet); it can mention no one.
func contextBlocks(doc markup.Doc) []slack.Block {
	var out []slack.Block
	cur := ""
	for _, b := range doc.Slack(maxSectionChars) {
		if strings.TrimSpace(b) == "" {
			continue
		}
		if cur != "" && engine.TextLength(cur)+2+engine.TextLength(b) <= maxSectionChars {
			cur += "\n\n" + b
			continue
		}
		if cur != "" {
			out = append(out, mrkdwn(cur))
		}
		cur = b
	}
	if cur != "" {
		out = append(out, mrkdwn(cur))
	}
	return out
}

// questionText is a section of the plan as text: its title (with the
// plan's MultiHint for a multi-select question) and its numbered options.
func questionText(s engine.Section) string {
	var b strings.Builder
	b.WriteString(s.Title())
	for i, o := range s.Options {
		b.WriteString("\n")
		b.WriteString(engine.OptionLine(i, o))
	}
	return b.String()
}

// instructions is the free-text hint and the closing lines, "" when the
// plan has neither.
func instructions(plan engine.Plan) string {
	var lines []string
	for _, s := range []string{plan.FreeText, plan.Closing} {
		if strings.TrimSpace(s) != "" {
			lines = append(lines, s)
		}
	}
	return strings.Join(lines, "\n")
}

// actionBlocks renders the buttons in declared order, Skip last, in
// actions blocks of at most maxActionElements.
func actionBlocks(plan engine.Plan) []slack.Block {
	var out []slack.Block
	var elems []slack.BlockElement
	flush := func() {
		if len(elems) > 0 {
			out = append(out, slack.NewActionBlock(fmt.Sprintf("askbridge_actions_%d", len(out)), elems...))
			elems = nil
		}
	}
	for i, b := range plan.Buttons() {
		label := engine.CutLabel(b.Label, maxButtonLabel)
		btn := slack.NewButtonBlockElement(fmt.Sprintf("%s%d", actionIDPrefix, i), b.Payload, slack.NewTextBlockObject(slack.PlainTextType, label, false, false))
		if b.Choice.Kind == askbridge.ControlSkip {
			btn = btn.WithStyle(slack.StyleDanger)
		}
		elems = append(elems, btn)
		if len(elems) == maxActionElements {
			flush()
		}
	}
	flush()
	return out
}

// layout lays a plan out once, in the order a person reads it: the intro
// header, the context, a section per question, the instructions, the
// buttons; and cuts it into messages of fewer than maxBlocks blocks, one
// block of each kept free for the notes (on the last part of the prompt)
// or the status line its end adds. The prompt and its ended form both
// come from this one cut, whatever the plan's notes and whether it still
// offers Seen, so part k of an ended question, or of a prompt edited in
// place, is the same message as part k of the prompt posted.
func layout(plan engine.Plan, doc markup.Doc) [][]piece {
	var all []piece
	add := func(live bool, blocks []slack.Block) {
		for _, b := range blocks {
			all = append(all, piece{block: b, live: live})
		}
	}
	add(false, introBlocks(plan))
	add(false, contextBlocks(doc))
	for _, s := range plan.Sections {
		add(false, sections(questionText(s)))
	}
	add(true, sections(instructions(plan)))
	add(true, actionBlocks(plan))
	var parts [][]piece
	for len(all) > maxBlocks-1 {
		parts = append(parts, all[:maxBlocks-1])
		all = all[maxBlocks-1:]
	}
	return append(parts, all)
}

// fallback is the plain `text` of a prompt's first message, which
// notifications and screen readers show: the whole prompt as plain text
// (the context as markup's Plain), escaped, cut to what Slack keeps. With
// live false it leaves the instructions out, as an ended message does.
func fallback(plan engine.Plan, doc markup.Doc, live bool) string {
	var b strings.Builder
	b.WriteString(plan.Intro)
	if ctx := doc.Plain(); strings.TrimSpace(ctx) != "" {
		b.WriteString("\n\n" + ctx)
	}
	for _, s := range plan.Sections {
		b.WriteString("\n\n" + questionText(s))
	}
	if text := instructions(plan); live && text != "" {
		b.WriteString("\n\n" + text)
	}
	return splitEscaped(b.String(), maxTextChars)[0]
}

// render lays a plan out as one or more messages of at most maxBlocks
// blocks, the buttons and the plan's notes in the last one. Every message
// has its plain `text` fallback (escaped), which is what notifications
// show: the first one the whole prompt, later ones the intro and which
// part they are; the last one ends with the notes.
func render(plan engine.Plan) []message {
	return messages(plan, false, "")
}

// renderEnded is every message of plan once its question has ended, part
// for part as render cut the prompt: the instructions and the buttons
// removed, a context block with the status line added (after the plan's
// notes on the last part), the rest kept. A part that held only
// instructions and buttons shows the status line alone.
func renderEnded(plan engine.Plan, status string) []message {
	return messages(plan, true, status)
}

// messages renders every part of plan's one layout: as the prompt, or,
// ended, without its live pieces and with the status line. The plan's
// notes go on the last part, after the cut (so they never move it): on the
// prompt as a context block before the buttons, on an ended message on the
// line before the status line, in the one context block that ends it.
func messages(plan engine.Plan, ended bool, status string) []message {
	doc := markup.Parse(plan.Context)
	parts := layout(plan, doc)
	notes := noteLines(plan)
	msgs := make([]message, len(parts))
	for i, part := range parts {
		var blocks []slack.Block
		for _, p := range part {
			if !ended || !p.live {
				blocks = append(blocks, p.block)
			}
		}
		// Later parts name themselves in figures, which read the same in
		// every language.
		text := fmt.Sprintf("%s (%d/%d)", Escape(plan.Intro), i+1, len(parts))
		if i == 0 {
			text = fallback(plan, doc, !ended)
		}
		var tail []string
		if i == len(parts)-1 {
			tail = notes
		}
		m := message{Text: text, Blocks: blocks}
		if ended {
			m = withStatus(m, tail, status)
		} else {
			m = withNotes(m, tail)
		}
		msgs[i] = m
	}
	return msgs
}

// noteLines are the plan's notes that are not blank.
func noteLines(plan engine.Plan) []string {
	var lines []string
	for _, n := range plan.Notes {
		if strings.TrimSpace(n) != "" {
			lines = append(lines, n)
		}
	}
	return lines
}

// withNotes adds notes to a part of an open prompt: a context block of
// them, one a line, after the instructions and before the buttons, and
// the same lines at the end of the text while it fits what Slack keeps.
// The part had at most maxBlocks-1 blocks (layout keeps one free), so it
// still fits.
func withNotes(m message, notes []string) message {
	line := contextText(strings.Join(notes, "\n"))
	if strings.TrimSpace(line) == "" {
		return m
	}
	at := slices.IndexFunc(m.Blocks, func(b slack.Block) bool { return b.BlockType() == slack.MBTAction })
	if at < 0 {
		at = len(m.Blocks)
	}
	m.Blocks = slices.Insert(m.Blocks, at, slack.Block(contextBlock("askbridge_notes", line)))
	if engine.TextLength(m.Text)+2+engine.TextLength(line) <= maxTextChars {
		m.Text += "\n\n" + line
	}
	return m
}

// withStatus ends a part of an ended question with its notes, if any,
// then the status line, in one context block (so an ended part fits
// wherever its prompt did), and with the same lines at the end of the
// text. The status line is kept whole; the notes get what room is left
// in the block.
func withStatus(m message, notes []string, status string) message {
	var lines []string
	line, room := contextText(status), maxSectionChars
	if strings.TrimSpace(line) != "" {
		room -= engine.TextLength(line) + 1
	}
	if len(notes) > 0 && room > 0 {
		lines = append(lines, splitEscaped(strings.Join(notes, "\n"), room)[0])
	}
	if strings.TrimSpace(line) != "" {
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return m
	}
	text := strings.Join(lines, "\n")
	m.Blocks = append(m.Blocks, contextBlock("askbridge_status", text))
	// The status line matters most: alone when the rest does not fit.
	m.Text += "\n\n" + text
	if engine.TextLength(m.Text) > maxTextChars {
		m.Text = text
	}
	return m
}

// contextBlock is a context block of one mrkdwn text, verbatim.
func contextBlock(id, text string) *slack.ContextBlock {
	return slack.NewContextBlock(id, slack.NewTextBlockObject(slack.MarkdownType, text, false, true))
}

// contextText is text escaped, cut to what a text object holds (Slack: a
// text object's text is at most 3000 characters).
func contextText(text string) string {
	return splitEscaped(text, maxSectionChars)[0]
}
