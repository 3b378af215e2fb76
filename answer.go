package askbridge

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rivo/uniseg"

	"github.com/askbridge/askbridge/internal/lazyre"
)

// PlatformMCP names the place an agent shows a question itself: the form
// the MCP server puts in the agent's own client. It is a target ("mcp",
// which takes no chat: the bridge posts nothing for it), the platform of
// the people who answer there ("mcp:<id>" in answerers), and the platform
// of an AnswerEntry's By.
const PlatformMCP = "mcp"

// MaxNameChars bounds the display name of the person of an answer entry,
// in characters as a person counts them (Telegram: a first and a last
// name of 64 each).
const MaxNameChars = 128

// mcpUserPattern is the form of a person's id in the agent's client, the
// form of a web page id: 1 to 128 letters, digits and '_', '.', '@', '+',
// '-', starting with a letter or digit.
var mcpUserPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$`)

// ValidMCPUser reports whether id can name a person in the agent's own
// client: "mcp:<id>" in answerers, the id of an AnswerEntry's By.
func ValidMCPUser(id string) bool { return mcpUserPattern().MatchString(id) }

// AnswerEntry is the JSON of an `answer` entry of the requests stream
// (redis-protocol.md): the answer a person gave to question ID in the
// agent's own client, or their skip. Exactly one of Answers and Skip is
// set. Only DecodeAnswerEntry checks one.
type AnswerEntry struct {
	ID string `json:"id"`
	// By is who answered: platform "mcp", their id there, and the name
	// to show, if any.
	By Person `json:"by"`
	// Answers maps question ids to the chosen labels or the person's own
	// words, as ask-user.md §2 keys them; the bridge reads each value as
	// it reads the web page's (an option's number or label, else own
	// words).
	Answers map[string][]string `json:"answers,omitempty"`
	Skip    bool                `json:"skip,omitempty"`
}

// DecodeAnswerEntry strictly decodes the JSON of an answer entry: an
// object of id (a question id), by (an object of platform "mcp", id and
// an optional name), and either answers (an object of 1 to MaxQuestions
// question ids, each a list of strings) or skip (true). Unknown fields
// are errors at every level. Every problem names its field, in a
// *ValidationError; any input gives an entry or that error, never a
// panic. Whether the answers fit the question is the bridge's to check.
func DecodeAnswerEntry(data []byte) (AnswerEntry, error) {
	v := &validator{}
	raw, ok := v.parseAs("answer", MaxEntryBytes, data)
	if !ok {
		return AnswerEntry{}, v.err()
	}
	a := v.answerEntry(raw)
	if len(v.problems) > 0 {
		return AnswerEntry{}, v.err()
	}
	return a, nil
}

// CheckAnswerBy says what is wrong with by as the person of an answer
// entry, nil when nothing: the checks DecodeAnswerEntry makes of by.
func CheckAnswerBy(by Person) error {
	v := &validator{}
	v.answerBy(map[string]any{"platform": by.Platform, "id": by.ID, "name": by.Name})
	if len(v.problems) > 0 {
		return v.err()
	}
	return nil
}

func (v *validator) answerEntry(raw any) AnswerEntry {
	var a AnswerEntry
	obj, ok := v.object("answer", raw)
	if !ok {
		return a
	}
	v.unknown("", obj, "id", "by", "answers", "skip")
	if s, ok := v.requiredString("id", obj, "id"); ok {
		if !ValidRequestID(s) {
			v.addf("id must be a question id: 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit")
		}
		a.ID = s
	}
	if raw, present := obj["by"]; !present {
		v.addf("by is required: who answered, {\"platform\":%q,\"id\":\"…\"}", PlatformMCP)
	} else if by, ok := v.object("by", raw); ok {
		v.unknown("by.", by, "platform", "id", "name")
		a.By = v.answerBy(by)
	}
	rawAnswers, hasAnswers := obj["answers"]
	rawSkip, hasSkip := obj["skip"]
	switch {
	case hasAnswers && hasSkip:
		v.addf("answers and skip: give one of them, not both")
	case !hasAnswers && !hasSkip:
		v.addf("answers or skip is required: the person's answers, or \"skip\": true")
	case hasSkip:
		if b, ok := rawSkip.(bool); !ok || !b {
			v.addf("skip must be true when present (leave it out and give answers to answer)")
		}
		a.Skip = true
	default:
		a.Answers = v.entryAnswers(rawAnswers)
	}
	return a
}

// answerBy checks the by object of an answer entry.
func (v *validator) answerBy(by map[string]any) Person {
	var p Person
	if s, ok := v.requiredString("by.platform", by, "platform"); ok {
		if s != PlatformMCP {
			v.addf("by.platform must be %q (got %s): an answer entry hands in an answer given in the agent's own client", PlatformMCP, quoteCut(s))
		}
		p.Platform = s
	}
	if s, ok := v.requiredString("by.id", by, "id"); ok {
		if !ValidMCPUser(s) {
			v.addf("by.id must be 1 to 128 letters, digits, '_', '.', '@', '+' or '-', starting with a letter or digit")
		}
		p.ID = s
	}
	if raw, present := by["name"]; present {
		s, ok := raw.(string)
		s = strings.TrimSpace(s)
		switch {
		case !ok:
			v.addf("by.name must be a string")
		case uniseg.GraphemeClusterCount(s) > MaxNameChars:
			v.addf("by.name must be at most %d characters", MaxNameChars)
		case hasControl(s):
			v.addf("by.name must not contain control characters or line breaks")
		default:
			p.Name = s
		}
	}
	return p
}

// entryAnswers checks the answers object of an answer entry: 1 to
// MaxQuestions question ids, each with a list of strings.
func (v *validator) entryAnswers(raw any) map[string][]string {
	obj, ok := v.object("answers", raw)
	if !ok {
		return nil
	}
	if len(obj) == 0 || len(obj) > MaxQuestions {
		v.addf("answers must answer 1 to %d questions (got %d)", MaxQuestions, len(obj))
		return nil
	}
	out := make(map[string][]string, len(obj))
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		if !questionIDPattern.MatchString(key) || len(key) > MaxQuestionIDChars {
			v.addf("answers: %s is not a question id", quoteCut(key))
			continue
		}
		path := "answers." + key
		list, ok := obj[key].([]any)
		if !ok {
			v.addf("%s must be a list of strings (got %s)", path, jsonKind(obj[key]))
			continue
		}
		vals := make([]string, 0, len(list))
		for i, item := range list {
			s, ok := item.(string)
			if !ok {
				v.addf("%s[%d] must be a string", path, i)
				continue
			}
			vals = append(vals, s)
		}
		out[key] = vals
	}
	return out
}

// quoteCut quotes s for a problem, cut to its first maxKeyBytes bytes.
func quoteCut(s string) string { return strconv.Quote(shortKey(s)) }
