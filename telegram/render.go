package telegram

import (
	"html"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/locale"
)

// Limits of the Bot API that shape what is sent.
const (
	// messageChars: Telegram: sendMessage text is 1-4096 characters after
	// entities parsing.
	messageChars = 4096
	// statusReserve is kept free in every part of a prompt so the status
	// line fits when the message is edited at the end: "Answered: " and up
	// to 3 × 4 labels of 64 characters (ask-user.md §1) come to about 800.
	// The notes of the last part (ask-user.md §5, §6: why an escalation
	// step asks, who has seen it, a quorum's tally) take what the message
	// has left besides, cut to fit (withNotes).
	statusReserve = 1000
	// partLimit is the longest part of a prompt, as Telegram counts it.
	partLimit = messageChars - statusReserve
	// placeholderChars: Telegram: ForceReply input_field_placeholder is
	// 1-64 characters.
	placeholderChars = 64
	// noticeChars: Telegram: answerCallbackQuery text is 0-200 characters.
	noticeChars = 200
)

// wordJoiner (U+2060) after an "@" keeps Telegram from reading a mention,
// so agent text never pings anyone; it is invisible.
const wordJoiner = "\u2060"

// esc makes agent text safe for parse_mode HTML: &, <, > and quotes become
// entities, and "@name" can no longer mention (and notify) anyone.
func esc(s string) string {
	return html.EscapeString(defuseMentions(s))
}

// defuseMentions puts a word joiner after every "@" that starts a word
// character, which breaks Telegram's @username (and @all-style) mentions.
func defuseMentions(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		b.WriteRune(r)
		if r != '@' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(s[i+1:])
		if next == '_' || unicode.IsLetter(next) || unicode.IsDigit(next) {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}

// promptLine is one line of a prompt's HTML, or one block of its context
// (balanced markup that may hold newlines of its own); "" is a blank line.
// A prompt is cut into messages only between two of them, so every part is
// balanced markup.
type promptLine struct {
	html string
	// instruction marks the plan's FreeText and Closing: how to answer,
	// which a message of an ended question no longer says.
	instruction bool
}

// promptParts renders a plan as the HTML text of its messages, in order.
// Each part holds at most partLimit characters as Telegram counts them
// (after entities parsing), but for the notes under the last one, which
// take at most what the message has left (withNotes).
func promptParts(p engine.Plan) []string {
	packed := packPrompt(p)
	parts := make([]string, len(packed))
	for i, ls := range packed {
		parts[i] = joinLines(ls, false)
	}
	last := len(parts) - 1
	parts[last] = withNotes(parts[last], p.Notes, 0)
	return parts
}

// endedParts is the text of each part of the prompt of p once the
// question has ended: the same split as promptParts, so part k is the same
// message, without the instructions, and without the notes (see
// finishedText). A part that held only instructions is "".
func endedParts(p engine.Plan) []string {
	packed := packPrompt(p)
	parts := make([]string, len(packed))
	for i, ls := range packed {
		parts[i] = joinLines(ls, true)
	}
	return parts
}

// packPrompt renders the lines of p — the intro, the context, each
// question with its options, then the instructions, with a blank line
// between them — and packs them into parts of at most partLimit; there is
// always one. The notes are left out of the packing (see withNotes), so a
// note that comes later ("Seen by Alice", a tally) moves no line to
// another part: part k of the plan with the note is the message posted as
// part k without it, and an edit (Update, Finish) of that message fits.
func packPrompt(p engine.Plan) [][]promptLine {
	var lines []promptLine
	blank := func() { lines = append(lines, promptLine{}) }
	add := func(prefix, plain, suffix string, instruction bool) {
		line := prefix + esc(plain) + suffix
		if plainLen(line) <= partLimit {
			lines = append(lines, promptLine{html: line, instruction: instruction})
			return
		}
		// Only a plan that breaks the request limits gets here: cut the
		// text itself into pieces that fit.
		for _, piece := range engine.SplitText(plain, partLimit-plainLen(prefix+suffix)) {
			lines = append(lines, promptLine{html: prefix + esc(piece) + suffix, instruction: instruction})
		}
	}
	add("<b>", p.Intro, "</b>", false)
	if p.Context != "" {
		// Each block fits a part on its own and is balanced markup, so a
		// part may end between any two (internal/markup).
		for _, block := range markup.Parse(p.Context).Telegram(partLimit) {
			blank()
			lines = append(lines, promptLine{html: block})
		}
	}
	for _, s := range p.Sections {
		blank()
		prefix, title := s.Lead(), s.Asked()
		add(prefix+"<b>["+esc(s.Header)+"]</b> ", title, "", false)
		for i, o := range s.Options {
			add("", engine.OptionLine(i, o), "", false)
		}
	}
	blank()
	add("<i>", p.FreeText, "</i>", true)
	for _, line := range strings.Split(p.Closing, "\n") {
		add("", line, "", true)
	}
	parts := packLines(lines, partLimit)
	if len(parts) == 0 {
		parts = append(parts, nil)
	}
	return parts
}

// withNotes puts notes, one a line, escaped, at the end of part (the HTML
// of the last part of a prompt, the one with the buttons; "" for a part
// that showed only instructions), after a blank line. They take what room
// the message has left, reserve characters kept free after them (the
// status line of an ended prompt): a note that does not fit is cut with
// "…" and those after it are left out. The notes a question's state adds
// are short lines ("Seen by Alice", the escalation's why) but for a
// quorum's tally, which grows with the answers given (ask-user.md §6).
func withNotes(part string, notes []string, reserve int) string {
	text := strings.Join(slices.DeleteFunc(slices.Clone(notes), func(n string) bool { return strings.TrimSpace(n) == "" }), "\n")
	if text == "" {
		return part
	}
	room := messageChars - reserve
	if part != "" {
		room -= plainLen(part) + len("\n\n")
	}
	if room < 2 {
		return part // not even one character and "…"
	}
	// The mentions defused first, so the cut counts the word joiners;
	// escaping changes no length Telegram counts.
	notesHTML := html.EscapeString(cutText(defuseMentions(text), room))
	if part == "" {
		return notesHTML
	}
	return part + "\n\n" + notesHTML
}

// packLines packs lines into parts of at most limit characters (as
// plainLen counts, with a newline between two lines), given that no line
// is longer than limit. The lines between two blank lines are a paragraph
// (a question with its options, a context block, the instructions): a
// paragraph that does not fit in what is left of a part starts the next
// one, and only a paragraph longer than a whole part is cut, between two
// of its lines. Parts neither start nor end with a blank line.
func packLines(lines []promptLine, limit int) [][]promptLine {
	var paras [][]promptLine
	var para []promptLine
	for _, l := range lines {
		if l.html == "" {
			if len(para) > 0 {
				paras = append(paras, para)
			}
			para = nil
			continue
		}
		para = append(para, l)
	}
	if len(para) > 0 {
		paras = append(paras, para)
	}
	var parts [][]promptLine
	var cur []promptLine
	size := 0 // plainLen of cur's lines joined with newlines
	flush := func() {
		if len(cur) > 0 {
			parts = append(parts, cur)
		}
		cur, size = nil, 0
	}
	for _, para := range paras {
		n := len(para) - 1 // the newlines
		for _, l := range para {
			n += plainLen(l.html)
		}
		if len(cur) > 0 && size+2+n > limit {
			flush()
		}
		for i, l := range para {
			sep := 1
			if i == 0 {
				sep = 2 // a blank line before the paragraph
			}
			if len(cur) > 0 && size+sep+plainLen(l.html) > limit {
				flush()
			}
			if len(cur) > 0 {
				if i == 0 {
					cur = append(cur, promptLine{})
				}
				size += sep
			}
			cur = append(cur, l)
			size += plainLen(l.html)
		}
	}
	flush()
	return parts
}

// joinLines is the HTML of a part; ended leaves the instructions out,
// with the blank lines they leave behind.
func joinLines(ls []promptLine, ended bool) string {
	var out []string
	for _, l := range ls {
		switch {
		case ended && l.instruction:
		case l.html == "" && (len(out) == 0 || out[len(out)-1] == ""):
		default:
			out = append(out, l.html)
		}
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

// tagRe matches the tags the renderer writes.
var tagRe = regexp.MustCompile(`<[^>]*>`)

// plainLen is the length Telegram counts for rendered HTML: tags dropped,
// entities decoded, in UTF-16 code units.
func plainLen(h string) int {
	return engine.TextLength(html.UnescapeString(tagRe.ReplaceAllString(h, "")))
}

// withStatus is a part of an ended prompt (from endedParts, the notes
// added to the last): its text kept, the status line added in bold. A part
// that held only instructions shows the status line alone.
func withStatus(part, status string) string {
	if part == "" {
		return statusHTML(status)
	}
	return part + "\n\n" + statusHTML(status)
}

// statusHTML is the status line of an ended prompt, in bold.
func statusHTML(status string) string {
	return "<b>" + esc(status) + "</b>"
}

// replyBoxText is the text of the force-reply message an "Other…" tap
// opens, in the words of w. In a group it mentions the tapper by id, which
// (with selective) shows the reply box to that person only.
func replyBoxText(w *locale.Words, question string, tapper askbridge.Person, group bool) string {
	text := esc(w.Get("ReplyBoxLead")) + " <i>" + esc(question) + "</i>\n" + esc(w.Get("ReplyBoxHint"))
	if group {
		return `<a href="tg://user?id=` + html.EscapeString(tapper.ID) + `">` + esc(displayName(w, tapper)) + "</a>, " + lowerFirst(text)
	}
	return text
}

// replyBoxClosed is what the reply box message shows once the question
// has ended: what it asked, without telling anyone to reply, and the
// status line.
func replyBoxClosed(w *locale.Words, question, status string) string {
	return esc(w.Get("ReplyBoxLead")) + " <i>" + esc(question) + "</i>\n\n<b>" + esc(status) + "</b>"
}

func displayName(w *locale.Words, p askbridge.Person) string {
	if p.Name != "" {
		return p.Name
	}
	return w.Get("SomeoneYou")
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// inlineKeyboard is Telegram's InlineKeyboardMarkup with callback buttons
// only. It is used instead of models.InlineKeyboardMarkup, whose buttons
// always carry an empty copy_text object.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// keyboard renders the plan's rows, one row per option then the controls
// (Telegram: callback_data is 1-64 bytes; the payloads are 21). It is nil
// when the plan has no buttons.
func keyboard(p engine.Plan) *inlineKeyboard { return rowsKeyboard(p.Rows) }

// rowsKeyboard renders rows of buttons (a plan's, an offer's, a standing
// answer's Revoke), nil when there are none.
func rowsKeyboard(rows [][]engine.Button) *inlineKeyboard {
	if len(rows) == 0 {
		return nil
	}
	kb := &inlineKeyboard{}
	for _, row := range rows {
		var r []inlineButton
		for _, b := range row {
			r = append(r, inlineButton{Text: b.Label, CallbackData: b.Payload})
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, r)
	}
	return kb
}

// noKeyboard removes an inline keyboard in an edit.
var noKeyboard = &inlineKeyboard{InlineKeyboard: [][]inlineButton{}}

// cutText cuts s to at most n characters as Telegram counts them (UTF-16
// code units), on a grapheme boundary, ending it with "…" when cut.
func cutText(s string, n int) string {
	if engine.TextLength(s) <= n {
		return s
	}
	var b strings.Builder
	g := uniseg.NewGraphemes(s)
	used := 1 // the "…"
	for g.Next() {
		w := engine.TextLength(g.Str())
		if used+w > n {
			break
		}
		b.WriteString(g.Str())
		used += w
	}
	return b.String() + "…"
}
