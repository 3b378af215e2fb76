package askbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rivo/uniseg"
)

// Remember is a request's `remember` (ask-user.md §9): the kind of
// decision a standing answer is kept under, and the durations the person
// who answers is offered.
type Remember struct {
	// Key names the kind of decision, scoped by the request's agent.
	Key string `json:"key"`
	// Offer lists 1 to MaxOffers durations in seconds, strictly
	// increasing, each MinStandingSeconds to MaxStandingSeconds.
	Offer []int `json:"offer"`
}

// Limits of remember (ask-user.md §9).
const (
	MaxRememberKeyChars = 128
	MinOffers           = 1
	MaxOffers           = 3
	MinStandingSeconds  = 60
	MaxStandingSeconds  = 30 * 24 * 3600
)

// rememberKeyPattern is the form of remember.key: it is part of a Redis
// key, so no spaces and no braces.
var rememberKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// ValidRememberKey reports whether key can be a remember.key.
func ValidRememberKey(key string) bool {
	return len(key) <= MaxRememberKeyChars && rememberKeyPattern.MatchString(key)
}

// Durations are the offered durations.
func (r Remember) Durations() []time.Duration {
	out := make([]time.Duration, len(r.Offer))
	for i, s := range r.Offer {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}

// Longest is the longest offered duration.
func (r Remember) Longest() time.Duration {
	if len(r.Offer) == 0 {
		return 0
	}
	return time.Duration(r.Offer[len(r.Offer)-1]) * time.Second
}

// remember checks a request's remember object.
func (v *validator) remember(raw any) *Remember {
	obj, ok := v.object("remember", raw)
	if !ok {
		return nil
	}
	v.unknown("remember.", obj, "key", "offer")
	r := &Remember{}
	if s, ok := v.requiredString("remember.key", obj, "key"); ok {
		if !ValidRememberKey(s) {
			v.addf("remember.key must be 1 to %d characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit", MaxRememberKeyChars)
		}
		r.Key = s
	}
	r.Offer = v.offer(obj)
	return r
}

// offer checks remember.offer.
func (v *validator) offer(obj map[string]any) []int {
	raw, present := obj["offer"]
	if !present {
		v.addf("remember.offer is required: a list of %d to %d durations in seconds", MinOffers, MaxOffers)
		return nil
	}
	list, ok := raw.([]any)
	if !ok || len(list) < MinOffers || len(list) > MaxOffers {
		v.addf("remember.offer must be a list of %d to %d durations in seconds", MinOffers, MaxOffers)
		return nil
	}
	out := make([]int, 0, len(list))
	for i, item := range list {
		num, isNum := item.(json.Number)
		n, err := strconv.Atoi(num.String())
		switch {
		case !isNum || err != nil:
			v.addf("remember.offer[%d] must be an integer number of seconds", i)
			continue
		case n < MinStandingSeconds || n > MaxStandingSeconds:
			v.addf("remember.offer[%d] must be %d to %d seconds (got %d)", i, MinStandingSeconds, MaxStandingSeconds, n)
			continue
		case len(out) > 0 && n <= out[len(out)-1]:
			v.addf("remember.offer[%d] must be greater than remember.offer[%d]", i, i-1)
			continue
		}
		out = append(out, n)
	}
	return out
}

// Shape is what a standing answer must match in a later request: the
// question ids, the option labels in order and the multiSelect flags
// (the question texts, headers and descriptions may differ), as a
// hex SHA-256 of their canonical JSON.
func Shape(qs []Question) string {
	type q struct {
		ID     string   `json:"id"`
		Labels []string `json:"labels"`
		Multi  bool     `json:"multi"`
	}
	canon := make([]q, len(qs))
	for i, x := range qs {
		canon[i] = q{ID: x.ID, Multi: x.MultiSelect, Labels: make([]string, len(x.Options))}
		for j, o := range x.Options {
			canon[i].Labels[j] = o.Label
		}
	}
	b, _ := json.Marshal(canon) // strings, bools and lists always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Standing is a result's `standing` (ask-user.md §9): the standing answer
// that answered the request.
type Standing struct {
	By Person `json:"by"`
	// Since and Until are unix milliseconds: when it was kept, and when it
	// ends.
	Since int64 `json:"since"`
	Until int64 `json:"until"`
}

// RevokeEntry is the JSON of a `revoke` entry of the requests stream
// (redis-protocol.md, v1.2): the standing answer of Agent ("" for
// requests without one) under Key is revoked.
type RevokeEntry struct {
	Agent string `json:"agent"`
	Key   string `json:"key"`
}

// MaxRevokeBytes bounds a revoke entry's JSON: an agent and a key, with
// room for escapes.
const MaxRevokeBytes = 4 << 10

// DecodeRevokeEntry strictly decodes the JSON of a revoke entry: an
// object of key (a remember.key) and agent (optional, as a request's
// agent; absent is ""), nothing else. Every problem names its field, in a
// *ValidationError; any input gives an entry or that error, never a
// panic.
func DecodeRevokeEntry(data []byte) (RevokeEntry, error) {
	v := &validator{}
	raw, ok := v.parseAs("revoke", MaxRevokeBytes, data)
	if !ok {
		return RevokeEntry{}, v.err()
	}
	var r RevokeEntry
	obj, ok := v.object("revoke", raw)
	if !ok {
		return RevokeEntry{}, v.err()
	}
	v.unknown("", obj, "agent", "key")
	r.Agent = v.agent(obj)

	if s, ok := v.requiredString("key", obj, "key"); ok {
		if !ValidRememberKey(s) {
			v.addf("key must be a remember.key: 1 to %d characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit", MaxRememberKeyChars)
		}
		r.Key = s
	}
	if len(v.problems) > 0 {
		return RevokeEntry{}, v.err()
	}
	return r, nil
}

// agent reads obj's optional agent, trimmed: at most MaxAgentChars
// characters, with no control characters ("" when absent).
func (v *validator) agent(obj map[string]any) string {
	s, ok := v.optionalString("agent", obj)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	switch {
	case uniseg.GraphemeClusterCount(s) > MaxAgentChars:
		v.addf("agent must be at most %d characters", MaxAgentChars)
	case hasControl(s):
		v.addf("agent must not contain control characters or line breaks")
	}
	return s
}
