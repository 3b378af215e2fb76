package textparse

import (
	"strings"
)

// Example returns what a person would type to answer q in a correction's
// example line: its first declared label without its recommended suffix
// (in any language of o.Words, in any of the forms ParseWith accepts), or ""
// when q has no label. The caller writes the correction itself, in the
// prompt's language (ask-user.md §3: it names what is missing and shows one
// line to copy).
func Example(q Question, o Options) string {
	words := newVocab(o)
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
	return ""
}
