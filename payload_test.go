package askbridge

import (
	"strconv"
	"strings"
	"testing"
)

func TestPayloadRoundTrip(t *testing.T) {
	ids := []string{"a", "deploy-42", "1712345678901-0", strings.Repeat("Z", 128), "x.y:z_w-v"}
	choices := []Choice{
		{Kind: ControlOption, Option: 0}, {Kind: ControlOption, Option: 3},
		{Kind: ControlOther}, {Kind: ControlSkip}, {Kind: ControlSeen},
		{Kind: ControlKeep, Option: 0}, {Kind: ControlKeep, Option: 2},
	}
	for _, id := range ids {
		for _, c := range choices {
			s := EncodePayload(id, c)
			// Telegram: callback_data is 1-64 bytes.
			if len(s) == 0 || len(s) > 64 {
				t.Fatalf("payload %q is %d bytes", s, len(s))
			}
			p, err := DecodePayload(s)
			if err != nil {
				t.Fatalf("DecodePayload(%q): %v", s, err)
			}
			if p.Choice != c || !p.Matches(id) {
				t.Errorf("DecodePayload(%q) = %+v, want %+v of %q", s, p, c, id)
			}
			if p.Matches(id + "x") {
				t.Errorf("payload of %q matches another id", id)
			}
		}
	}
}

func TestDecodePayloadRejects(t *testing.T) {
	good := EncodePayload("deploy-42", Choice{Kind: ControlOption, Option: 1})
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"other bot's data", "vote:yes"},
		{"wrong version", "q2" + good[2:]},
		{"option out of range", good[:len(good)-1] + "4"},
		{"unknown control", good[:len(good)-1] + "x"},
		{"bad digest alphabet", "q1:" + strings.Repeat("*", 16) + ":1"},
		{"missing separator", "q1" + good[3:] + "1"},
		{"too long", good + "0"},
		{"keep past the offers", "k1" + good[2:len(good)-1] + "3"},
		{"keep of a control", "k1" + good[2:len(good)-1] + "s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := DecodePayload(tt.in); err == nil {
				t.Errorf("DecodePayload(%q) accepted: %+v", tt.in, p)
			}
		})
	}
}

func FuzzDecodePayload(f *testing.F) {
	f.Add(EncodePayload("deploy-42", Choice{Kind: ControlSkip}))
	f.Add(EncodePayload("x", Choice{Kind: ControlOption, Option: 2}))
	f.Add(EncodePayload("x", Choice{Kind: ControlKeep, Option: 1}))
	f.Add("q1::")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePayload(s)
		if err != nil {
			return
		}
		if p.Choice.Kind == ControlOption && (p.Choice.Option < 0 || p.Choice.Option >= MaxOptions) {
			t.Fatalf("option %d out of range", p.Choice.Option)
		}
		if p.Choice.Kind == ControlKeep && (p.Choice.Option < 0 || p.Choice.Option >= MaxOffers) {
			t.Fatalf("keep duration %d out of range", p.Choice.Option)
		}
		// Whatever decodes re-encodes to the same bytes.
		again := "q1:" + p.Digest + ":" + choiceCode(p.Choice)
		if p.Choice.Kind == ControlKeep {
			again = "k1:" + p.Digest + ":" + strconv.Itoa(p.Choice.Option)
		}
		if again != s {
			t.Fatalf("re-encoded %q as %q", s, again)
		}
	})
}

func TestRevokePayload(t *testing.T) {
	for _, gen := range []string{"AbC-_9xy", "a", strings.Repeat("Z", 32)} {
		s := EncodeRevokePayload(gen)
		if len(s) > 64 { // Telegram: callback_data is 1-64 bytes
			t.Fatalf("payload %q is %d bytes", s, len(s))
		}
		got, err := DecodeRevokePayload(s)
		if err != nil || got != gen {
			t.Errorf("DecodeRevokePayload(%q) = %q, %v", s, got, err)
		}
		if _, err := DecodePayload(s); err == nil {
			t.Errorf("DecodePayload took the revoke payload %q", s)
		}
	}
	for _, bad := range []string{"", "r1:", "r2:abc", "r1:a b", "r1:" + strings.Repeat("Z", 33), "r1:é", EncodePayload("x", Choice{Kind: ControlSkip})} {
		if gen, err := DecodeRevokePayload(bad); err == nil {
			t.Errorf("DecodeRevokePayload(%q) accepted: %q", bad, gen)
		}
	}
}

func FuzzDecodeRevokePayload(f *testing.F) {
	f.Add(EncodeRevokePayload("AbC-_9xy"))
	f.Add("r1:")
	f.Add("q1:x:0")
	f.Fuzz(func(t *testing.T, s string) {
		gen, err := DecodeRevokePayload(s)
		if err != nil {
			return
		}
		if gen == "" || len(gen) > 32 || EncodeRevokePayload(gen) != s {
			t.Fatalf("decoded %q as gen %q", s, gen)
		}
	})
}
