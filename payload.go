package askbridge

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// ControlKind is what a button does.
type ControlKind int

const (
	// ControlOption picks one option of the single question.
	ControlOption ControlKind = iota + 1
	// ControlOther asks for a free-text answer.
	ControlOther
	// ControlSkip declines the whole prompt.
	ControlSkip
	// ControlSeen acknowledges the prompt without answering it
	// (ask-user.md §5).
	ControlSeen
	// ControlKeep keeps the answer of an ended question for the
	// Option-th duration of its remember.offer (ask-user.md §9).
	ControlKeep
)

// Choice is what a button press means: a kind and, for ControlOption, the
// zero-based option index (for ControlKeep, the index of the duration in
// remember.offer).
type Choice struct {
	Kind   ControlKind
	Option int
}

// Payload is a decoded button payload.
type Payload struct {
	// Digest names the question: the first 96 bits of SHA-256 of its id,
	// so any id (up to 128 characters) fits the tightest platform limit.
	Digest string
	Choice Choice
}

// The codec: "q1" + ":" + 16 base64url digest characters + ":" + choice,
// where the choice is the option digit 0-3, "o" for Other, "s" for Skip or
// "a" for Seen (acknowledge); a keep button of an ended question
// (ControlKeep) is "k1" + ":" + digest + ":" + the duration's index 0-2.
// 21 bytes in all — Telegram: callback_data is 1-64 bytes; Discord: custom_id
// at most 100 characters; Slack: value at most 2000 characters.
const (
	payloadVersion = "q1"
	keepVersion    = "k1"
	digestChars    = 16
	// PayloadLen is the length of every encoded payload.
	PayloadLen = len(payloadVersion) + 1 + digestChars + 2
)

// ErrPayload is returned for a payload the bridge did not make.
var ErrPayload = errors.New("not a button payload of this bridge")

// QuestionDigest names a question id in a payload.
func QuestionDigest(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// EncodePayload makes the payload of a button of question id.
func EncodePayload(id string, c Choice) string {
	if c.Kind == ControlKeep {
		return keepVersion + ":" + QuestionDigest(id) + ":" + strconv.Itoa(c.Option)
	}
	return payloadVersion + ":" + QuestionDigest(id) + ":" + choiceCode(c)
}

func choiceCode(c Choice) string {
	switch c.Kind {
	case ControlOther:
		return "o"
	case ControlSkip:
		return "s"
	case ControlSeen:
		return "a"
	}
	return strconv.Itoa(c.Option)
}

// DecodePayload parses a payload made by EncodePayload. It checks the shape
// only: the caller must still check Digest against the question the message
// showed (Matches) and the option against its options.
func DecodePayload(s string) (Payload, error) {
	if len(s) != PayloadLen {
		return Payload{}, ErrPayload
	}
	version, rest, _ := strings.Cut(s, ":")
	digest, code, ok := strings.Cut(rest, ":")
	if !ok || (version != payloadVersion && version != keepVersion) || len(digest) != digestChars || len(code) != 1 {
		return Payload{}, ErrPayload
	}
	if _, err := base64.RawURLEncoding.DecodeString(digest); err != nil {
		return Payload{}, ErrPayload
	}
	p := Payload{Digest: digest}
	if version == keepVersion {
		if c := code[0]; c < '0' || c >= '0'+MaxOffers {
			return Payload{}, ErrPayload
		}
		p.Choice = Choice{Kind: ControlKeep, Option: int(code[0] - '0')}
		return p, nil
	}
	switch c := code[0]; {
	case c == 'o':
		p.Choice = Choice{Kind: ControlOther}
	case c == 's':
		p.Choice = Choice{Kind: ControlSkip}
	case c == 'a':
		p.Choice = Choice{Kind: ControlSeen}
	case c >= '0' && c < '0'+MaxOptions:
		p.Choice = Choice{Kind: ControlOption, Option: int(c - '0')}
	default:
		return Payload{}, ErrPayload
	}
	return p, nil
}

// Matches reports whether the payload names question id.
func (p Payload) Matches(id string) bool {
	return p.Digest == QuestionDigest(id)
}

// The revoke button of a standing answer's message (ask-user.md §9):
// "r1:" + the gen of the keep it shows (the engine finds the standing
// answer by it), 1 to maxGenChars base64url characters: 11 bytes for
// the engine's gens — Telegram: callback_data is 1-64 bytes.
const (
	revokePrefix = "r1:"
	maxGenChars  = 32
)

// EncodeRevokePayload makes the payload of the Revoke button of the keep
// gen. gen must be 1 to 32 base64url characters.
func EncodeRevokePayload(gen string) string { return revokePrefix + gen }

// DecodeRevokePayload parses a payload made by EncodeRevokePayload and
// returns the keep's gen; any other string is ErrPayload.
func DecodeRevokePayload(s string) (gen string, err error) {
	gen, ok := strings.CutPrefix(s, revokePrefix)
	if !ok || gen == "" || len(gen) > maxGenChars {
		return "", ErrPayload
	}
	for _, c := range []byte(gen) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", ErrPayload
		}
	}
	return gen, nil
}
