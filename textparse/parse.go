package textparse

import (
	"strings"
	"unicode/utf8"
)

// MaxTextBytes bounds the text Parse reads. Slack cuts a message's text at
// 40,000 characters, the largest limit of the supported platforms (Telegram
// 4,096, Discord 2,000 or 4,000); at up to 4 UTF-8 bytes a character that is
// 160,000 bytes. Longer text cannot be one chat message, so Parse cuts it here
// (at a character boundary) to keep its work and its output bounded.
const MaxTextBytes = 160_000

// Question is one question as the parser sees it. The engine converts its
// request questions into this shape (ask-user.md §1); Parse expects the ids to
// be unique, as validation guarantees, but never panics when they are not.
type Question struct {
	// ID is the answer key, e.g. "deploy_target". It also keys a line.
	ID string
	// Header is the short chip label, e.g. "Target". It also keys a line.
	Header string
	// Labels are the declared option labels in order: option n is Labels[n-1].
	Labels []string
	// Multi marks a multi-select question: a reply may pick several options.
	Multi bool
}

// Kind says what a reply amounts to.
type Kind int

const (
	// Empty is a message with no text (only whitespace): it is no reply at
	// all, and the caller should ignore it rather than send a correction.
	Empty Kind = iota
	// Answer means every question has at least one value.
	Answer
	// Skip declines the whole prompt (ask-user.md §3): the result is
	// no_answer with reason skipped.
	Skip
	// Incomplete means some questions were left without an answer; Missing
	// names them and Answers holds what was understood.
	Incomplete
	// Acknowledge means the person saw the question and will answer later
	// (ask-user.md §5): it neither answers nor declines. Only ParseWith with
	// Options.Acknowledge set returns it.
	Acknowledge
)

// String returns the lower-case name of k, for logs and test output.
func (k Kind) String() string {
	switch k {
	case Empty:
		return "empty"
	case Answer:
		return "answer"
	case Skip:
		return "skip"
	case Incomplete:
		return "incomplete"
	case Acknowledge:
		return "acknowledge"
	}
	return "invalid"
}

// Outcome is what a text reply means.
type Outcome struct {
	Kind Kind
	// Answers maps a question id to its values: a chosen option is its label
	// exactly as declared, free text is the trimmed text. A multi-select
	// question keeps the order given without duplicates; a single-select one
	// has exactly one value. Only answered questions are present. It is nil
	// for Empty, Skip and Acknowledge.
	Answers map[string][]string
	// Missing lists, in question order, the ids of the questions left
	// without an answer. It is non-empty exactly when Kind is Incomplete.
	Missing []string
}

// Parse reads one text reply to a prompt of questions qs and says what it
// means, following ask-user.md §3 "Text replies" as detailed in the package
// documentation, with the English reply words ([EnglishWords]) and no
// acknowledging: it is ParseWith with zero Options, and like it pure, safe
// for concurrent use and free of panics whatever the text.
func Parse(text string, qs []Question) Outcome {
	return ParseWith(text, qs, Options{})
}

// ParseWith reads one text reply to a prompt of questions qs like Parse,
// understanding the reply words of every language in o.Words at once
// (ask-user.md §7) and, when o.Acknowledge is set, acknowledgements. It is
// pure and safe for concurrent use, and it never panics, whatever the text:
// invalid UTF-8 is replaced with U+FFFD, and text beyond MaxTextBytes is cut
// off.
func ParseWith(text string, qs []Question, o Options) Outcome {
	text = clean(text)
	if trim(text) == "" {
		return Outcome{Kind: Empty}
	}
	p := newPrompt(qs, newVocab(o))
	if kind, ok := p.command(text); ok {
		return Outcome{Kind: kind}
	}
	var values [][]string
	switch len(p.qs) {
	case 0:
	case 1:
		values = [][]string{p.single(text)}
	default:
		values = p.lines(text)
	}
	return p.outcome(values)
}

// lineBreaks turns every line ending a person's device may send into "\n":
// CRLF and lone CR (Windows, old Mac clients), NEL, and the Unicode line and
// paragraph separators some mobile keyboards insert.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// clean bounds the text, makes it valid UTF-8 and unifies line endings, so
// every later step sees well-formed text and values are safe to encode as
// JSON without loss.
func clean(text string) string {
	if len(text) > MaxTextBytes {
		cut := MaxTextBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	return lineBreaks.Replace(strings.ToValidUTF8(text, "\uFFFD"))
}

// outcome turns per-question values into an Outcome.
func (p *prompt) outcome(values [][]string) Outcome {
	o := Outcome{Kind: Answer, Answers: make(map[string][]string, len(p.qs))}
	for i, q := range p.qs {
		if i < len(values) && len(values[i]) > 0 {
			o.Answers[q.ID] = values[i]
			continue
		}
		o.Missing = append(o.Missing, q.ID)
	}
	if len(o.Missing) > 0 {
		o.Kind = Incomplete
	}
	return o
}
