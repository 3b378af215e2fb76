package askbridge

import (
	"fmt"
	"strings"
	"unicode"
)

// DefaultPrefix is the key prefix of the protocol (redis-protocol.md), the
// bridge's default ASKUSER_REDIS_PREFIX.
const DefaultPrefix = "askuser:"

// MaxPrefixBytes bounds a key prefix.
const MaxPrefixBytes = 64

// CheckPrefix says what is wrong with a key prefix, or nil: at most
// MaxPrefixBytes, and no braces (they would break the {<id>} hash tags
// that keep a question's keys in one Redis Cluster slot), spaces or
// control characters. The empty prefix is allowed here; a bridge's
// configuration asks for one.
func CheckPrefix(p string) error {
	switch {
	case len(p) > MaxPrefixBytes:
		return fmt.Errorf("must be at most %d bytes (got %d)", MaxPrefixBytes, len(p))
	case strings.ContainsAny(p, "{}"):
		return fmt.Errorf("%q must not contain braces (they would break the {<id>} hash tags Redis Cluster needs)", p)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%q must not contain spaces or control characters", p)
	}
	return nil
}

// Keys are the public Redis keys of the protocol (redis-protocol.md) under
// one prefix. Every per-question key carries the question id as a hash tag
// ({<id>}), so the keys of one question share a Redis Cluster slot.
type Keys struct {
	Prefix string
}

// Requests is the STREAM agents push `ask` and `cancel` entries to.
func (k Keys) Requests() string { return k.Prefix + "requests" }

// Events is the capped STREAM of lifecycle events: fields event, id, at
// and, where set, platform, chat, message, by, error, to.
func (k Keys) Events() string { return k.Prefix + "events" }

// Result is the LIST the one result JSON of question id is pushed onto;
// agents BLPOP it.
func (k Keys) Result(id string) string { return k.Prefix + "result:{" + id + "}" }

// Question is the HASH holding question id (public fields status, result,
// request, created, deadline).
func (k Keys) Question(id string) string { return k.Prefix + "question:{" + id + "}" }

// Standing is the HASH of the standing answer of agent under key
// (ask-user.md §9; fields answers, shape, by, since, until, uses), which
// expires at its until. Its hash tag is StandingTag(agent), so all
// standing answers of one agent share a slot.
func (k Keys) Standing(agent, key string) string {
	return k.Prefix + "standing:{" + StandingTag(agent) + "}:" + key
}

// StandingTag is agent as it stands in the hash tag of its standing
// answers: the agent itself, with '%', '{' and '}' written %25, %7B and
// %7D (a brace would end the tag); the empty agent, which is a scope of
// its own, is "%", which no agent's tag can be (a '%' of a name is
// always followed by two hex digits).
func StandingTag(agent string) string {
	if agent == "" {
		return "%"
	}
	return tagEscaper.Replace(agent)
}

var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")
