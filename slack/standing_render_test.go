package slack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/golden"
	"github.com/askbridge/askbridge/locale"
)

// offerOf is the offer to keep the answer of question id for 1 h or 7
// days, in lang's words, with buttons or (buttons false) only its hint.
func offerOf(id, lang string, buttons bool) *engine.OfferView {
	w := locale.For(lang)
	o := &engine.OfferView{Hint: w.Format("OfferHint", map[string]any{"Replies": w.List([]string{`"keep 1h"`, `"keep 7d"`})})}
	if !buttons {
		return o
	}
	var row []engine.Button
	for i, d := range []time.Duration{time.Hour, 7 * 24 * time.Hour} {
		c := askbridge.Choice{Kind: askbridge.ControlKeep, Option: i}
		label := w.Format("ButtonKeep", map[string]any{"For": engine.KeepDuration(w, d)})
		row = append(row, engine.Button{Label: label, Choice: c, Payload: askbridge.EncodePayload(id, c)})
	}
	o.Rows = [][]engine.Button{row}
	return o
}

// The ended message with the offer to keep its answer: the answered end
// of the prompt with descriptions, then an actions block of the keep
// buttons (end_answered_offer.json); without the offer (RemoveOffer) it
// is the answered end itself.
func TestGoldenOffer(t *testing.T) {
	s := shapes[1]
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			req := decode(t, body(s, lang))
			p := plan(t, "q-end", body(s, lang))
			end := engine.Ending{Plan: p, Status: engine.StatusLine(req, result(req, "answered")), Offer: offerOf("q-end", lang, true)}
			msgs := renderEnding(end)
			checkLimits(t, msgs)
			blocks := msgs[len(msgs)-1].Blocks
			checkEnded(t, p, render(p), []message{{Text: msgs[0].Text, Blocks: blocks[:len(blocks)-1]}}, end.Status)
			last, ok := blocks[len(blocks)-1].(*slack.ActionBlock)
			if !ok || len(last.Elements.ElementSet) != 2 {
				t.Fatalf("the offer is not the last block: %s", pretty(t, msgs))
			}
			for i, el := range last.Elements.ElementSet {
				if b := el.(*slack.ButtonBlockElement); b.Value != end.Offer.Rows[0][i].Payload || !strings.HasPrefix(b.ActionID, actionIDPrefix) {
					t.Errorf("keep button %d: %+v", i, b)
				}
			}
			golden.Check(t, goldenName("end_answered_offer", lang), pretty(t, msgs))

			end.Offer = nil
			if got, want := pretty(t, renderEnding(end)), pretty(t, renderEnded(p, end.Status)); string(got) != string(want) {
				t.Errorf("without the offer:\n%s\nwant the answered end:\n%s", got, want)
			}
		})
	}
}

// An offer without buttons, or on a part with no block left for them,
// shows its hint on the line after the status line instead.
func TestOfferHint(t *testing.T) {
	full := engine.Plan{ID: "full", Mode: engine.ModeText, Intro: "Questions for you:"}
	// The header and 48 questions: 49 blocks, and the status line makes 50.
	for i := range 48 {
		full.Sections = append(full.Sections, engine.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1)})
	}
	cases := []struct {
		name string
		p    engine.Plan
		o    *engine.OfferView
	}{
		{"no buttons", plan(t, "q", shapes[0].body), offerOf("q", "en", false)},
		{"no block left", full, offerOf("full", "en", true)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := renderEnding(engine.Ending{Plan: c.p, Status: "Answered: A", Offer: c.o})
			checkLimits(t, msgs)
			m := msgs[len(msgs)-1]
			want := "Answered: A\n" + Escape(c.o.Hint)
			if got := blockText(m.Blocks[len(m.Blocks)-1]); got != want || !strings.HasSuffix(m.Text, want) {
				t.Errorf("ends with %q, text %q; want %q", got, m.Text, want)
			}
			if b := slices.IndexFunc(m.Blocks, func(b slack.Block) bool { return b.BlockType() == slack.MBTAction }); b >= 0 {
				t.Errorf("block %d holds buttons", b)
			}
		})
	}
}

// standingAnswer is a standing answer kept by a person whose name, like
// the agent and the key, holds Slack's control characters.
func standingAnswer(lang string) engine.StandingAnswer {
	since := time.Date(2026, 5, 1, 15, 5, 0, 0, time.UTC)
	return engine.StandingAnswer{
		Agent: "deploy-bot", Key: "deploy:<prod>&co", Answers: map[string][]string{"deploy_target": {"Production"}},
		By: askbridge.Person{Platform: Platform, ID: "UALICE", Name: "alice <@U0BOSS>"}, Since: since, Until: since.Add(time.Hour),
		Gen: "g1", From: "q-kept", Target: askbridge.Target{Platform: Platform, Chat: "C0OPS"}, Locale: lang,
	}
}

// The standing answer's message as ShowStanding posts it and EditStanding
// edits it: kept with its Revoke button, used, revoked without it
// (standing_<state>.json).
func TestGoldenStanding(t *testing.T) {
	states := []struct {
		name  string
		state engine.StandingState
		uses  int
	}{{"kept", engine.StandingKept, 0}, {"used", engine.StandingKept, 3}, {"revoked", engine.StandingRevoked, 3}}
	ch := &Channel{}
	for _, lang := range langs {
		for _, st := range states {
			t.Run(st.name+"/"+lang, func(t *testing.T) {
				s := standingAnswer(lang)
				s.Uses, s.LastUse = st.uses, s.Since.Add(15*time.Minute)
				m := renderStanding(engine.ViewStanding(s, st.state, ch.Capabilities()))
				checkLimits(t, []message{m})
				raw, _ := json.Marshal(m.Blocks)
				if revoke := `"value":"` + askbridge.EncodeRevokePayload(s.Gen) + `"`; strings.Contains(string(raw), revoke) != (st.state == engine.StandingKept) {
					t.Errorf("Revoke button shown %v in state %s: %s", !(st.state == engine.StandingKept), st.name, raw)
				}
				golden.Check(t, goldenName("standing_"+st.name, lang), pretty(t, []message{m}))
			})
		}
	}
}
