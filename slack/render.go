package slack

import (
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge"
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
func Escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// unescape turns the text of a person's message, which Slack delivers
// escaped, back into what they typed.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// message is one chat.postMessage of a prompt.
type message struct {
	Text   string
	Blocks []slack.Block
}

// mrkdwn is a section of escaped text; verbatim so Slack does not turn
// names into links or mentions on its own.
func mrkdwn(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, true), nil, nil)
}

// sections renders text, escaped, as section blocks of at most
// maxSectionChars each. The text is cut before it is escaped, so an entity
// such as &amp; is never cut in two.
func sections(text string) []slack.Block {
	var out []slack.Block
	for _, part := range splitEscaped(text, maxSectionChars) {
		out = append(out, mrkdwn(part))
	}
	return out
}

// splitEscaped cuts text into parts whose escaped form fits limit, and
// returns them escaped.
func splitEscaped(text string, limit int) []string {
	var out []string
	var cut func(s string, n int)
	cut = func(s string, n int) {
		for _, part := range askbridge.SplitText(s, n) {
			esc := Escape(part)
			if askbridge.TextLength(esc) <= limit || n <= 1 {
				out = append(out, esc)
				continue
			}
			cut(part, n/2)
		}
	}
	cut(text, limit)
	return out
}

// contentBlocks renders the readable part of a plan: the intro header, a
// section per question, the free-text hint and the closing line.
func contentBlocks(plan askbridge.Plan) []slack.Block {
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, askbridge.CutLabel(plan.Intro, maxHeaderChars), false, false))}
	for _, s := range plan.Sections {
		var b strings.Builder
		b.WriteString(s.Title())
		for i, o := range s.Options {
			b.WriteString("\n")
			b.WriteString(askbridge.OptionLine(i, o))
		}
		blocks = append(blocks, sections(b.String())...)
	}
	blocks = append(blocks, sections(plan.FreeText+"\n"+plan.Closing)...)
	return blocks
}

// actionBlocks renders the buttons in declared order, Skip last, in
// actions blocks of at most maxActionElements.
func actionBlocks(plan askbridge.Plan) []slack.Block {
	var out []slack.Block
	var elems []slack.BlockElement
	flush := func() {
		if len(elems) > 0 {
			out = append(out, slack.NewActionBlock(fmt.Sprintf("askbridge_actions_%d", len(out)), elems...))
			elems = nil
		}
	}
	for i, b := range plan.Buttons() {
		label := askbridge.CutLabel(b.Label, maxButtonLabel)
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

// render lays a plan out as one or more messages of fewer than maxBlocks
// blocks, the buttons in the last one. Every message has its plain `text`
// fallback (escaped), which is what notifications show.
func render(plan askbridge.Plan) []message {
	content, actions := contentBlocks(plan), actionBlocks(plan)
	var groups [][]slack.Block
	all := append(content, actions...)
	// One block of each message is kept free for the status line its
	// end adds.
	for len(all) > maxBlocks-1 {
		groups = append(groups, all[:maxBlocks-1])
		all = all[maxBlocks-1:]
	}
	groups = append(groups, all)
	// The first message carries the whole prompt as its fallback (cut to
	// what Slack keeps); later parts name themselves.
	msgs := make([]message, len(groups))
	for i, g := range groups {
		t := splitEscaped(plan.Text(), maxTextChars)[0]
		if i > 0 {
			t = fmt.Sprintf("%s (part %d of %d)", Escape(plan.Intro), i+1, len(groups))
		}
		msgs[i] = message{Text: t, Blocks: g}
	}
	return msgs
}

// finished is message part of a plan once its question has ended: the
// buttons removed, a context block with the status line added, the text
// kept with the status appended.
func finished(m message, status string) message {
	var blocks []slack.Block
	for _, b := range m.Blocks {
		if b.BlockType() != slack.MBTAction {
			blocks = append(blocks, b)
		}
	}
	line := Escape(status)
	blocks = append(blocks, slack.NewContextBlock("askbridge_status", slack.NewTextBlockObject(slack.MarkdownType, line, false, true)))
	text := m.Text + "\n\n" + line
	if askbridge.TextLength(text) > maxTextChars {
		text = line
	}
	return message{Text: text, Blocks: blocks}
}
