package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/locale"
)

// Capabilities describe what a channel can show. They are data, so one
// planner serves every platform.
type Capabilities struct {
	// Buttons is true when the channel has native buttons.
	Buttons bool
	// ButtonsPerRow is how many option buttons share a row; 1 gives one
	// full-width row per option (Telegram), 0 means no limit.
	ButtonsPerRow int
	// MaxButtonLabel is the longest button text in characters; 0 means no
	// limit. Longer labels are cut on a grapheme boundary with "…".
	MaxButtonLabel int
	// PayloadBytes is the largest button payload the platform takes.
	PayloadBytes int
	// ReplyBox is true when the channel can open a reply box for an
	// "Other…" answer (Telegram's force reply).
	ReplyBox bool
	// Local is true for a channel that shows a question without posting
	// it anywhere: recording its one message is the showing (the web
	// page). Shown twice, it records the same message twice, which the
	// store takes as one, so the delivery of a question just created there
	// takes no delivery lease.
	Local bool
}

// Mode is how a prompt is answered.
type Mode int

const (
	// ModeButtons: one single-select question, answered by a tap (or text).
	ModeButtons Mode = iota + 1
	// ModeText: everything else, answered by a text reply.
	ModeText
)

// Button is one native control of a prompt.
type Button struct {
	Label   string
	Choice  askbridge.Choice
	Payload string
}

// Section is one question as shown.
type Section struct {
	// Number is the 1-based position of the question when there are
	// several, 0 when the prompt has one question.
	Number   int
	ID       string
	Header   string
	Question string
	Multi    bool
	// MultiHint follows the question of a multi-select section, in the
	// plan's language: "(choose one or more)". Empty otherwise.
	MultiHint string
	Options   []askbridge.Option
}

// Lead is what a text prompt shows before the section's header: "2) " when
// the prompt has several questions, "" when it has one.
func (s Section) Lead() string {
	if s.Number == 0 {
		return ""
	}
	return strconv.Itoa(s.Number) + ") "
}

// Asked is the section's question as a text prompt shows it: with the
// hint of a multi-select section after it.
func (s Section) Asked() string {
	if s.MultiHint == "" {
		return s.Question
	}
	return s.Question + " " + s.MultiHint
}

// Plan is what a channel shows for a question: the readable text in parts,
// so each platform can apply its own markup, and the buttons, if any.
type Plan struct {
	ID   string
	Mode Mode
	// Locale is the catalog every word of the bridge in the plan comes
	// from (locale.For); a renderer takes its own words from it too.
	Locale string
	Intro  string
	// Context is the request's Markdown context, shown between the intro
	// and the questions; each renderer formats it for its platform
	// (internal/markup). Empty when the request has none.
	Context  string
	Sections []Section
	// FreeText says free text is accepted. It and Closing are the
	// instructions: a message of an ended question shows neither
	// (ask-user.md §3, §7).
	FreeText string
	// Closing says exactly how to answer; it may hold several lines.
	Closing string
	// Notes are lines the question's state adds (ask-user.md §5): why an
	// escalation step asks here ("No answer after 15 min…"), who has seen
	// it ("Seen by Alice"). A channel shows them after the instructions,
	// on the part with the buttons (the last), and keeps them when the
	// question ends.
	Notes []string
	// Rows holds the buttons row by row: the option buttons, then a last row
	// of controls (Other…, Skip, and Seen for a request with reminders or
	// escalation). Empty in ModeText unless the channel shows a Skip button
	// for text prompts.
	Rows [][]Button
}

// BuildPlan decides how request req, question id, is shown on a channel with
// capabilities caps, in the words of req.Locale's catalog. It is pure: the
// same input gives the same plan, on every replica.
func BuildPlan(id string, req askbridge.Request, caps Capabilities) Plan {
	w := locale.For(req.Locale)
	p := Plan{ID: id, Mode: ModeText, Locale: w.Tag(), Intro: intro(w, req), Context: req.Context}
	several := len(req.Questions) > 1
	for i, q := range req.Questions {
		s := Section{ID: q.ID, Header: q.Header, Question: q.Question, Multi: q.MultiSelect, Options: q.Options}
		if several {
			s.Number = i + 1
		}
		if q.MultiSelect {
			s.MultiHint = w.Get("ChooseMany")
		}
		p.Sections = append(p.Sections, s)
	}
	buttons := caps.Buttons && caps.PayloadBytes >= askbridge.PayloadLen
	if buttons && !several && !req.Questions[0].MultiSelect {
		p.Mode = ModeButtons
		p.Rows = optionRows(id, req.Questions[0].Options, caps)
	}
	if buttons {
		row := controlRow(w, id, p.Mode, caps)
		if req.Pings() {
			c := askbridge.Choice{Kind: askbridge.ControlSeen}
			row = append(row, Button{Label: CutLabel(w.Get("ButtonSeen"), caps.MaxButtonLabel), Choice: c, Payload: askbridge.EncodePayload(id, c)})
		}
		p.Rows = append(p.Rows, row)
	}
	p.FreeText = w.Get("FreeText")
	p.Closing = closing(w, req, p.Mode)
	return p
}

func intro(w *locale.Words, req askbridge.Request) string {
	if req.Agent != "" {
		return w.Count("IntroFrom", len(req.Questions), map[string]any{"Agent": req.Agent})
	}
	return w.Count("IntroAnon", len(req.Questions), nil)
}

func optionRows(id string, opts []askbridge.Option, caps Capabilities) [][]Button {
	per := caps.ButtonsPerRow
	if per <= 0 {
		per = len(opts)
	}
	var rows [][]Button
	for i, o := range opts {
		if i%per == 0 {
			rows = append(rows, nil)
		}
		c := askbridge.Choice{Kind: askbridge.ControlOption, Option: i}
		b := Button{Label: CutLabel(o.Label, caps.MaxButtonLabel), Choice: c, Payload: askbridge.EncodePayload(id, c)}
		rows[len(rows)-1] = append(rows[len(rows)-1], b)
	}
	return rows
}

// controlRow holds Other… (only where a reply box opens, and only next to
// option buttons) and Skip (wherever there are buttons).
func controlRow(w *locale.Words, id string, mode Mode, caps Capabilities) []Button {
	var row []Button
	if caps.ReplyBox && mode == ModeButtons {
		c := askbridge.Choice{Kind: askbridge.ControlOther}
		row = append(row, Button{Label: CutLabel(w.Get("ButtonOther"), caps.MaxButtonLabel), Choice: c, Payload: askbridge.EncodePayload(id, c)})
	}
	c := askbridge.Choice{Kind: askbridge.ControlSkip}
	return append(row, Button{Label: CutLabel(w.Get("ButtonSkip"), caps.MaxButtonLabel), Choice: c, Payload: askbridge.EncodePayload(id, c)})
}

func closing(w *locale.Words, req askbridge.Request, mode Mode) string {
	if mode == ModeButtons {
		return w.Get("ClosingButtons")
	}
	if len(req.Questions) == 1 {
		if req.Questions[0].MultiSelect {
			return w.Get("ClosingMulti")
		}
		return w.Get("ClosingOne")
	}
	var b strings.Builder
	b.WriteString(w.Get("ClosingSeveral"))
	for i, q := range req.Questions {
		example := "1"
		if q.MultiSelect {
			example = "1, 2"
		}
		fmt.Fprintf(&b, "\n%d: %s", i+1, example)
	}
	b.WriteString("\n" + w.Get("ClosingSeveralEnd"))
	return b.String()
}

// Text renders the plan as plain text, the way a channel without markup
// shows it.
func (p Plan) Text() string {
	var b strings.Builder
	b.WriteString(p.Intro)
	if p.Context != "" {
		b.WriteString("\n\n")
		b.WriteString(markup.Parse(p.Context).Plain())
	}
	for _, s := range p.Sections {
		b.WriteString("\n\n")
		b.WriteString(s.Title())
		for i, o := range s.Options {
			fmt.Fprintf(&b, "\n%s", OptionLine(i, o))
		}
	}
	b.WriteString("\n\n")
	b.WriteString(p.FreeText)
	b.WriteString("\n")
	b.WriteString(p.Closing)
	for _, n := range p.Notes {
		b.WriteString("\n")
		b.WriteString(n)
	}
	return b.String()
}

// PlanFor is the plan of the question for place k on a channel with caps:
// BuildPlan's, with the notes the question's state adds (why an
// escalation step asks there, who has seen it) and, once someone has seen
// it, without the Seen button.
func (r Record) PlanFor(k int, caps Capabilities) Plan {
	p := placePlan(r.ID, r.Request, r.Places, k, r.Acknowledged, caps)
	if r.Request.Quorum > 0 {
		// The tally, in every place, open or ended (ask-user.md §6).
		p.Notes = append(p.Notes, tallyLine(locale.For(r.Request.Locale), r.Request, r))
	}
	return p
}

func placePlan(id string, req askbridge.Request, places []askbridge.Place, k int, seen *askbridge.Person, caps Capabilities) Plan {
	p := BuildPlan(id, req, caps)
	w := locale.For(req.Locale)
	if k >= 0 && k < len(places) {
		if st := places[k].Step; st > 0 && st <= len(req.Escalate) {
			after := time.Duration(req.Escalate[st-1].AfterSeconds) * time.Second
			p.Notes = append(p.Notes, w.Format("EscalatedWhy", map[string]any{"After": HumanDuration(w, after)}))
		}
	}
	if seen != nil {
		p.Notes = append(p.Notes, w.Format("SeenBy", map[string]any{"Who": seen.Display()}))
		for i, row := range p.Rows {
			p.Rows[i] = slices.DeleteFunc(row, func(b Button) bool { return b.Choice.Kind == askbridge.ControlSeen })
		}
		p.Rows = slices.DeleteFunc(p.Rows, func(row []Button) bool { return len(row) == 0 })
	}
	return p
}

// HumanDuration says d the way a person reads it, in w's words: "45 s",
// "15 min", "2 h", "1 h 30 min".
func HumanDuration(w *locale.Words, d time.Duration) string {
	switch {
	case d < time.Minute:
		return w.Count("DurationSeconds", max(int(d.Round(time.Second)/time.Second), 0), nil)
	case d < time.Hour:
		return w.Count("DurationMinutes", int(d.Round(time.Minute)/time.Minute), nil)
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return w.Count("DurationHours", h, nil)
	}
	return w.Count("DurationHours", h, nil) + " " + w.Count("DurationMinutes", m, nil)
}

// Title is the first line of a section: its number when there are several,
// its header as a chip, the question, and a hint for multi-select.
func (s Section) Title() string {
	return s.Lead() + "[" + s.Header + "] " + s.Asked()
}

// OptionLine renders option i (zero-based) as a numbered line.
func OptionLine(i int, o askbridge.Option) string {
	line := fmt.Sprintf("  %d. %s", i+1, o.Label)
	if o.Description != "" {
		line += " — " + o.Description
	}
	return line
}

// Buttons lists every button of the plan in order.
func (p Plan) Buttons() []Button {
	var all []Button
	for _, row := range p.Rows {
		all = append(all, row...)
	}
	return all
}

// CutLabel cuts a label to at most n characters on a grapheme boundary,
// ending it with "…" when cut. n <= 0 means no limit.
func CutLabel(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	var b strings.Builder
	count := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		r := len(g.Runes())
		if count+r > n-1 {
			break
		}
		b.WriteString(g.Str())
		count += r
	}
	return strings.TrimSpace(b.String()) + "…"
}

// StatusLine is the line added to every message of a question when it ends,
// in the words of req.Locale: "Answered: <declared labels>" (free text is
// never echoed back), "Skipped", "Expired", "Cancelled".
func StatusLine(req askbridge.Request, res askbridge.Result) string {
	w := locale.For(req.Locale)
	switch res.Outcome() {
	case askbridge.OutcomeAnswered:
		labels := AnsweredLabels(req, res)
		if res.Place != "" && res.AnsweredBy != nil {
			// Several places: who answered, and where.
			where := res.Place
			if where == askbridge.PlatformMCP {
				where = w.Get("PlaceAgentClient")
			}
			args := map[string]any{"Who": res.AnsweredBy.Display(), "Where": where}
			if len(labels) == 0 {
				return w.Format("StatusAnsweredByIn", args)
			}
			args["Labels"] = strings.Join(labels, w.Get("ListSeparator"))
			return w.Format("StatusAnsweredByInWith", args)
		}
		if len(labels) == 0 {
			return w.Get("StatusAnswered")
		}
		return w.Format("StatusAnsweredWith", map[string]any{"Labels": strings.Join(labels, w.Get("ListSeparator"))})
	case askbridge.OutcomeSkipped:
		return w.Get("StatusSkipped")
	case askbridge.OutcomeCancelled:
		return w.Get("StatusCancelled")
	case askbridge.OutcomeUndeliverable:
		return w.Get("StatusUndeliverable")
	case askbridge.OutcomeRejected:
		return w.Get("StatusRefused")
	case askbridge.OutcomeNoQuorum:
		return w.Get("StatusNoQuorum")
	}
	return w.Get("StatusExpired")
}

// AnsweredLabels lists the declared labels chosen in an answer, in question
// order then answer order; free-text values are left out.
func AnsweredLabels(req askbridge.Request, res askbridge.Result) []string {
	if res.Answers == nil {
		return nil
	}
	var labels []string
	for _, q := range req.Questions {
		for _, v := range res.Answers.Answers[q.ID] {
			for _, o := range q.Options {
				if o.Label == v {
					labels = append(labels, v)
					break
				}
			}
		}
	}
	return labels
}

// TextLength counts s the way the platforms count a message limit: in
// UTF-16 code units.
func TextLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// SplitText cuts a message into parts of at most limit UTF-16 code units,
// preferring to cut between paragraphs, then between lines, and never inside
// a grapheme cluster. limit <= 0 means no limit.
func SplitText(s string, limit int) []string {
	if limit <= 0 || TextLength(s) <= limit {
		return []string{s}
	}
	var parts []string
	for TextLength(s) > limit {
		cut := cutPoint(s, limit)
		part := strings.TrimRight(s[:cut], "\n")
		if part != "" {
			parts = append(parts, part)
		}
		s = strings.TrimLeft(s[cut:], "\n")
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}

// cutPoint finds the byte offset to cut s at so the head fits limit.
func cutPoint(s string, limit int) int {
	// The longest prefix that fits, on grapheme boundaries.
	fit, n := 0, 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		w := TextLength(g.Str())
		if n+w > limit {
			break
		}
		n += w
		_, fit = g.Positions()
	}
	if fit == 0 {
		// One grapheme longer than the limit: cut it on a rune boundary.
		_, size := utf8.DecodeRuneInString(s)
		return size
	}
	head := s[:fit]
	if i := strings.LastIndex(head, "\n\n"); i > 0 {
		return i + 1
	}
	if i := strings.LastIndex(head, "\n"); i > 0 {
		return i + 1
	}
	return fit
}
