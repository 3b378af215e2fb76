package discord

import (
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
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
// whole (a longer status still fits: the text is then cut, see finished).
const statusReserve = 200

// caps is what Discord can show, for the shared planner.
var caps = askbridge.Capabilities{
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

// renderText is the whole prompt in Discord markdown, agent text escaped.
func renderText(p askbridge.Plan) string {
	var b strings.Builder
	b.WriteString("**" + escape(p.Intro) + "**")
	for _, s := range p.Sections {
		b.WriteString("\n\n")
		if s.Number > 0 {
			fmt.Fprintf(&b, "%d\\) ", s.Number)
		}
		b.WriteString("**" + escape(s.Header) + "** " + escape(s.Question))
		if s.Multi {
			b.WriteString(" *\\(choose one or more\\)*")
		}
		for i, o := range s.Options {
			fmt.Fprintf(&b, "\n%d\\. %s", i+1, escape(o.Label))
			if o.Description != "" {
				b.WriteString(" — " + escape(o.Description))
			}
		}
	}
	b.WriteString("\n\n" + escape(p.FreeText))
	b.WriteString("\n" + escape(p.Closing))
	return b.String()
}

// renderParts cuts the prompt into messages that fit Discord's limit with
// room for a status line; a cut never separates a backslash from the
// character it escapes.
func renderParts(p askbridge.Plan) []string {
	parts := askbridge.SplitText(renderText(p), maxContent-statusReserve)
	for i := 0; i < len(parts)-1; i++ {
		if n := trailingBackslashes(parts[i]); n%2 == 1 {
			parts[i] = parts[i][:len(parts[i])-1]
			parts[i+1] = `\` + parts[i+1]
		}
	}
	return parts
}

// part is the text of part i of the prompt, as Send posted it; ok is false
// when the prompt has no such part (a reply box, which Discord never has).
func part(p askbridge.Plan, i int) (text string, ok bool) {
	parts := renderParts(p)
	if i < 0 || i >= len(parts) {
		return "", false
	}
	return parts[i], true
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// components are the plan's buttons as Discord action rows: options
// primary, in declared order, Skip secondary; custom_id is the payload.
// Rows and buttons beyond Discord's limits are dropped (the planner never
// makes that many: at most 4 options and one control row).
func components(p askbridge.Plan) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	for _, row := range p.Rows {
		if len(rows) == maxRows {
			break
		}
		var btns []discordgo.MessageComponent
		for _, b := range row {
			if len(btns) == maxRowButtons {
				break
			}
			style := discordgo.PrimaryButton
			if b.Choice.Kind != askbridge.ControlOption {
				style = discordgo.SecondaryButton
			}
			btns = append(btns, discordgo.Button{
				Label: askbridge.CutLabel(b.Label, maxLabel), Style: style, CustomID: b.Payload,
			})
		}
		if len(btns) > 0 {
			rows = append(rows, discordgo.ActionsRow{Components: btns})
		}
	}
	return rows
}

// statusSuffix is what an ended question's messages get appended.
func statusSuffix(status string) string {
	return "\n\n**" + escape(status) + "**"
}

// finished is the content of a message whose question ended: its text kept,
// the status line added; when both do not fit, the text is cut.
func finished(content, status string) string {
	suffix := statusSuffix(status)
	if strings.HasSuffix(content, suffix) {
		return content
	}
	room := maxContent - askbridge.TextLength(suffix)
	if askbridge.TextLength(content) > room {
		content = cutTo(content, room-1) + "…"
	}
	return content + suffix
}

// cutTo keeps the longest prefix of s of at most n UTF-16 code units, not
// ending in an unpaired escaping backslash.
func cutTo(s string, n int) string {
	if n <= 0 {
		return ""
	}
	head := askbridge.SplitText(s, n)[0]
	if trailingBackslashes(head)%2 == 1 {
		head = head[:len(head)-1]
	}
	return head
}
