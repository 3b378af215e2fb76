package textparse

import (
	"strconv"
	"strings"
)

// Correction returns the short reply ask-user.md §3 asks for when a text
// reply leaves questions without an answer: it names what is missing and
// says how to reply, for example
//
//	Missing an answer for 2 (Budget). Reply with one line per question, e.g. "2: Small".
//
// o and qs are a Parse result and the questions it was parsed against. It
// returns "" unless o.Kind is Incomplete. The text is plain: the caller
// escapes it for the platform's markup, as it does all agent-supplied text.
// It is English, and the example answer drops only the English
// "(Recommended)" suffix (in any of the forms ParseWith accepts).
func Correction(o Outcome, qs []Question) string {
	if o.Kind != Incomplete || len(o.Missing) == 0 {
		return ""
	}
	if len(qs) == 1 {
		if qs[0].Multi {
			return "No answer found. Reply with option numbers separated by commas, the option text, or your own answer."
		}
		return "No answer found. Reply with the option number, the option text, or your own answer."
	}
	var names []string
	first := -1
	for _, id := range o.Missing {
		i := indexOf(qs, id)
		if i < 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		names = append(names, strconv.Itoa(i+1)+" ("+title(qs[i])+")")
	}
	if first < 0 {
		return ""
	}
	lead := "Missing an answer for "
	if len(names) > 1 {
		lead = "Missing answers for "
	}
	return lead + joinAnd(names) + ". Reply with one line per question, e.g. \"" +
		strconv.Itoa(first+1) + ": " + exampleAnswer(qs[first]) + "\"."
}

func indexOf(qs []Question, id string) int {
	for i, q := range qs {
		if q.ID == id {
			return i
		}
	}
	return -1
}

// title names a question the way the prompt shows it: by its header, or by
// its id when the header is blank.
func title(q Question) string {
	if h := strings.TrimSpace(q.Header); h != "" {
		return h
	}
	return q.ID
}

// exampleAnswer is the first declared label without its English
// "(Recommended)" suffix, so the example reads like something a person would
// type.
func exampleAnswer(q Question) string {
	words := englishVocab()
	for _, label := range q.Labels {
		label = strings.TrimSpace(label)
		if label == "" {
			continue
		}
		if base, ok := words.cutRecommended(label); ok {
			label = base
		}
		return label
	}
	return "your answer"
}

// joinAnd joins names as "a", "a and b" or "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
