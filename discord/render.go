package discord

import (
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
)

// Discord limits (discord-api-docs, developers/resources/message.mdx and
// developers/components/reference.mdx).
const (
	// maxContent: a message's content is at most 2000 characters.
	maxContent = 2000
	// maxRows: a (non components-v2) message holds at most 5 action rows.
	maxRows = 5
	// maxRowButtons: an action row holds at most 5 buttons.
	maxRowButtons = 5
	// maxLabel: a button label is at most 80 characters.
	maxLabel = 80
	// maxCustomID: a custom_id is 1 to 100 characters.
	maxCustomID = 100
)

// statusReserve is room kept free in every part of a prompt for the status
// line the message gets when its question ends, so the text can be kept
// whole (a longer status still fits: the text then gives way, see
// finished).
const statusReserve = 200

// caps is what Discord can show, for the shared planner.
var caps = engine.Capabilities{
	Buttons:        true,
	ButtonsPerRow:  maxRowButtons,
	MaxButtonLabel: maxLabel,
	PayloadBytes:   maxCustomID,
	ReplyBox:       false,
}

// noPings is sent with every message: Discord parses no mention at all,
// so @everyone, @here, roles and users in agent text never notify anyone,
// and a reply does not ping the person replied to.
func noPings() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// noEmbeds is set on every message the bridge posts or edits
// (SUPPRESS_EMBEDS, 1<<2): no link in a question or its context unfurls
// into a preview. An edit that cannot say it (an interaction's @original)
// keeps the flag the message was posted with.
const noEmbeds = discordgo.MessageFlagsSuppressEmbeds

// escape makes agent text show as text in Discord markdown: every markup
// character gets a backslash (Discord hides a backslash before any ASCII
// punctuation), "<" so <@id>, <@&role> and <#channel> stay text, "@" so
// @everyone and @here are not even highlighted, and line starts that would
// open a list, heading, quote or subtext ("- ", "+ ", "1. ", "-# ").
func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	lineStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '*', '_', '~', '`', '|', '[', ']', '(', ')', '<', '>', '@', '#':
			b.WriteByte('\\')
		case '-', '+':
			if lineStart {
				b.WriteByte('\\')
			}
		case '.':
			// "12. " at a line start is an ordered list item.
			if digitsBefore(s, i) {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
		switch {
		case c == '\n':
			lineStart = true
		case c == ' ' || c == '\t':
			// Indentation keeps the line start.
		default:
			lineStart = false
		}
	}
	return b.String()
}

// digitsBefore reports whether s[i] follows a run of digits that starts a
// line (after optional indentation).
func digitsBefore(s string, i int) bool {
	j := i
	for j > 0 && s[j-1] >= '0' && s[j-1] <= '9' {
		j--
	}
	if j == i {
		return false
	}
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	return j == 0 || s[j-1] == '\n'
}

// partLimit is the most text a part of a prompt holds: Discord's limit
// less the room kept for the status line.
const partLimit = maxContent - statusReserve

// line is one piece of a prompt's text: the intro, a block of context, a
// question's first line, an option, an instruction. A part of a prompt
// ends only between two lines, so a part's text with or without its
// instructions is whole Discord markdown.
type line struct {
	text string
	// gap joins the line to the one before it in the same part: "\n", or
	// "\n\n" between blocks.
	gap string
	// instr marks the instructions (Plan.FreeText, Plan.Closing), which the
	// messages of an ended question no longer show.
	instr bool
	// fresh starts a part: the line continues one too long for a part.
	fresh bool
	// glue keeps the line in the part of the line after it, when the two
	// fit in one: a question stays with its first option, the free-text
	// line with the closing.
	glue bool
	// note marks a line the question's state adds (Plan.Notes): under the
	// instructions of the last part, and kept when the question ends.
	note bool
}

// lines is the whole prompt in Discord markdown, agent text escaped: the
// intro, the context (internal/markup, mentions neutralised, links that
// show no embed), the questions with their options, the instructions.
// Every word of the bridge comes from the plan, in its language.
func lines(p engine.Plan) []line {
	var ls []line
	add := func(l line) {
		if l.text != "" {
			ls = append(ls, fit(l)...)
		}
	}
	intro := "**" + escape(p.Intro) + "**"
	add(line{text: intro})
	if p.Context != "" {
		// Blocks that fit a part next to the intro, so the first part
		// is not the intro alone.
		room := max(partLimit-engine.TextLength(intro)-2, partLimit/2)
		for _, b := range markup.Parse(p.Context).Discord(room) {
			add(line{text: b, gap: "\n\n"})
		}
	}
	for _, s := range p.Sections {
		var b strings.Builder
		if s.Number > 0 {
			fmt.Fprintf(&b, "%d\\) ", s.Number)
		}
		b.WriteString("**" + escape(s.Header) + "** " + escape(s.Question))
		if s.MultiHint != "" {
			b.WriteString(" *" + escape(s.MultiHint) + "*")
		}
		add(line{text: b.String(), gap: "\n\n", glue: true})
		for i, o := range s.Options {
			opt := fmt.Sprintf("%d\\. %s", i+1, escape(o.Label))
			if o.Description != "" {
				opt += " — " + escape(o.Description)
			}
			add(line{text: opt, gap: "\n"})
		}
	}
	// The instructions are one paragraph, in one part when it fits: the
	// closing's lines (an example answer per question) stay together.
	if p.FreeText != "" {
		add(line{text: escape(p.FreeText), gap: "\n\n", instr: true, glue: p.Closing != ""})
	}
	if p.Closing != "" {
		gap := "\n"
		if p.FreeText == "" {
			gap = "\n\n"
		}
		add(line{text: escape(p.Closing), gap: gap, instr: true})
	}
	return ls
}

// fit cuts a line longer than a part (a long question with many escapes)
// into lines that each start a part; a cut never separates a backslash
// from the character it escapes.
func fit(l line) []line {
	if engine.TextLength(l.text) <= partLimit {
		return []line{l}
	}
	// One less than the limit: a backslash may move to the next piece.
	pieces := engine.SplitText(l.text, partLimit-1)
	for i := 0; i < len(pieces)-1; i++ {
		if n := trailingBackslashes(pieces[i]); n%2 == 1 {
			pieces[i] = pieces[i][:len(pieces[i])-1]
			pieces[i+1] = `\` + pieces[i+1]
		}
	}
	out := make([]line, len(pieces))
	for i, s := range pieces {
		out[i] = line{text: s, gap: "\n", instr: l.instr, fresh: i > 0}
	}
	out[0].gap = l.gap
	out[len(out)-1].glue = l.glue
	return out
}

// layout packs the prompt's lines into parts of at most partLimit, in
// order, each as full as the next line allows (a glued line goes on only
// with the line after it). The prompt and its ended state both come from
// this one split, so part k is the same message in both.
func layout(p engine.Plan) [][]line {
	ls := lines(p)
	var parts [][]line
	n := 0 // the width of the last part
	for i, l := range ls {
		w := engine.TextLength(l.text)
		need := engine.TextLength(l.gap) + w
		for j := i; ls[j].glue && j+1 < len(ls) && !ls[j+1].fresh; j++ {
			need += engine.TextLength(ls[j+1].gap) + engine.TextLength(ls[j+1].text)
		}
		if last := len(parts) - 1; last >= 0 && !l.fresh && n+need <= partLimit {
			parts[last] = append(parts[last], l)
			n += engine.TextLength(l.gap) + w
			continue
		}
		parts = append(parts, []line{l})
		n = w
	}
	return parts
}

// join is the text of lines in one part.
func join(ls []line) string {
	var b strings.Builder
	for _, l := range ls {
		if b.Len() > 0 {
			b.WriteString(l.gap)
		}
		b.WriteString(l.text)
	}
	return b.String()
}

// noteRoom is the most the notes of a prompt take, a quarter of a
// message: the lines a question's state adds are short, and a longer one
// is cut, so the text and the status line keep their room.
const noteRoom = maxContent / 4

// shown is the prompt as Send posts it, line by line: layout's parts, with
// the plan's notes under the last one (the part with the buttons). The
// notes never move a line to another part, so part k is the same message
// whatever notes the question's state adds later (Update).
func shown(p engine.Plan) [][]line {
	parts := layout(p)
	last := len(parts) - 1
	room := min(noteRoom, maxContent-engine.TextLength(join(parts[last]))-len("\n\n"))
	parts[last] = append(parts[last], noteLines(p.Notes, room)...)
	return parts
}

// noteLines are notes as lines: each escaped on a line of its own, the
// first a paragraph apart, all together at most room characters (the
// note that would pass it is cut with "…", those after it are left out).
func noteLines(notes []string, room int) []line {
	var out []line
	used := 0
	for _, n := range notes {
		text := escape(strings.Join(strings.Fields(n), " "))
		if text == "" {
			continue
		}
		gap := "\n\n" // counted in room
		if len(out) > 0 {
			gap = "\n"
			used += len(gap)
		}
		if w := engine.TextLength(text); used+w > room {
			if left := room - used - 1; left > 0 {
				out = append(out, line{text: cutTo(text, left) + "…", gap: gap, note: true})
			}
			break
		}
		used += engine.TextLength(text)
		out = append(out, line{text: text, gap: gap, note: true})
	}
	return out
}

// renderParts is the prompt as Send posts it: one text per message, cut
// only between lines, each at most partLimit but for the notes under the
// last one.
func renderParts(p engine.Plan) []string {
	parts := shown(p)
	out := make([]string, len(parts))
	for i, ls := range parts {
		out[i] = join(ls)
	}
	return out
}

// endedPart is the text of part i of the prompt once its question ended
// with status: the part without its instructions, its notes (on the last
// part), then the status line. ok is false when the prompt has no such
// part (a reply box, which Discord never has).
func endedPart(p engine.Plan, i int, status string) (text string, ok bool) {
	parts := shown(p)
	if i < 0 || i >= len(parts) {
		return "", false
	}
	return finished(parts[i], status), true
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// components are the plan's buttons as Discord action rows (rowsComponents).
func components(p engine.Plan) []discordgo.MessageComponent { return rowsComponents(p.Rows) }

// rowsComponents are rows of buttons (a plan's, an offer's keep buttons,
// a standing answer's Revoke) as Discord action rows: options primary, in
// declared order, Revoke red (danger), the rest (Skip, keep) secondary;
// custom_id is the payload. Rows and buttons beyond Discord's limits are
// dropped (the engine never makes that many: at most 4 options and one
// control row, 3 keep buttons, one Revoke).
func rowsComponents(rows [][]engine.Button) []discordgo.MessageComponent {
	var out []discordgo.MessageComponent
	for _, row := range rows {
		if len(out) == maxRows {
			break
		}
		var btns []discordgo.MessageComponent
		for _, b := range row {
			if len(btns) == maxRowButtons {
				break
			}
			btns = append(btns, discordgo.Button{
				Label: engine.CutLabel(b.Label, maxLabel), Style: buttonStyle(b), CustomID: b.Payload,
			})
		}
		if len(btns) > 0 {
			out = append(out, discordgo.ActionsRow{Components: btns})
		}
	}
	return out
}

// buttonStyle: an option is primary, a Revoke button (its payload a
// revoke payload) danger, any other secondary.
func buttonStyle(b engine.Button) discordgo.ButtonStyle {
	if b.Choice.Kind == askbridge.ControlOption {
		return discordgo.PrimaryButton
	}
	if _, err := askbridge.DecodeRevokePayload(b.Payload); err == nil {
		return discordgo.DangerButton
	}
	return discordgo.SecondaryButton
}

// statusLine is the status line of an ended question, bold. A status of
// more than a quarter of a message (a dozen long labels) is cut, so that
// escaped it takes at most half of one.
func statusLine(status string) string {
	if engine.TextLength(status) > maxContent/4 {
		status = engine.SplitText(status, maxContent/4-1)[0] + "…"
	}
	return "**" + escape(status) + "**"
}

// finished is a part of an ended question: its lines without the
// instructions, then its notes, then the status line (the notes and the
// status line alone when the part held only instructions). When all do
// not fit, the last lines of the text give way to "…"; a single line too
// long is cut. The notes and the status line stay whole.
func finished(part []line, status string) string {
	tail := statusLine(status)
	var keep, notes []line
	for _, l := range part {
		switch {
		case l.note:
			notes = append(notes, l)
		case !l.instr:
			keep = append(keep, l)
		}
	}
	if len(notes) > 0 {
		tail = join(notes) + "\n\n" + tail
	}
	if len(keep) == 0 {
		return tail
	}
	room := maxContent - engine.TextLength(tail) - len("\n\n")
	text := join(keep)
	for engine.TextLength(text) > room {
		if len(keep) == 1 {
			text = cutTo(keep[0].text, room-1) + "…"
			break
		}
		keep = keep[:len(keep)-1]
		text = join(keep) + "\n…"
	}
	return text + "\n\n" + tail
}

// cutTo keeps the longest prefix of s of at most n UTF-16 code units, not
// ending in an unpaired escaping backslash.
func cutTo(s string, n int) string {
	if n <= 0 {
		return ""
	}
	head := engine.SplitText(s, n)[0]
	if trailingBackslashes(head)%2 == 1 {
		head = head[:len(head)-1]
	}
	return head
}
