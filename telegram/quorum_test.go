package telegram_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/telegram"
)

// longTallyRecord is a quorum question of three multi-select questions,
// each with four options of the longest label, for 50 answerers, with a
// context of n characters; votes gives it that many votes, each a
// different combination of options (every option of the first question,
// some of the others'), so its tally lists that many long answers.
func longTallyRecord(t *testing.T, context, votes int) engine.Record {
	t.Helper()
	var qs, answerers []string
	for q := range 3 {
		var opts []string
		for o := range 4 {
			opts = append(opts, fmt.Sprintf(`{"label":"%c%d %s"}`, 'A'+q, o, strings.Repeat("x", askbridge.MaxLabelChars-3)))
		}
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","header":"H%d","question":"Which?","multiSelect":true,"options":[%s]}`, q, q, strings.Join(opts, ",")))
	}
	for i := range askbridge.MaxAnswerers {
		answerers = append(answerers, fmt.Sprintf(`"telegram:%d"`, 1001+i))
	}
	req, err := askbridge.DecodeRequest([]byte(fmt.Sprintf(`{"context":%q,"quorum":%d,"answerers":[%s],"questions":[%s]}`,
		strings.Repeat("c", context), askbridge.MaxAnswerers, strings.Join(answerers, ","), strings.Join(qs, ","))))
	if err != nil {
		t.Fatal(err)
	}
	target := askbridge.Target{Platform: telegram.Platform, Chat: fmt.Sprint(opsGroup)}
	rec := engine.Record{ID: "long-tally", Status: askbridge.StatusPending, Request: req, Target: target, Created: time.Now(),
		Places: []askbridge.Place{{Name: target.String(), Target: target}}}
	labels := func(q askbridge.Question, mask int) []string {
		var out []string
		for o, opt := range q.Options {
			if mask&(1<<o) != 0 {
				out = append(out, opt.Label)
			}
		}
		return out
	}
	for i := range votes {
		rec.Votes = append(rec.Votes, askbridge.Vote{
			By: askbridge.Person{Platform: telegram.Platform, ID: fmt.Sprint(1001 + i)},
			Answers: map[string][]string{
				"q0": labels(req.Questions[0], 15),
				"q1": labels(req.Questions[1], 1+i%15),
				"q2": labels(req.Questions[2], 1+i/15),
			},
			At: int64(i),
		})
	}
	return rec
}

// TestLongTallyFits: a quorum question's tally grows with the answers
// given; on a prompt whose last part is as full as a part gets, a tally of
// 50 different answers of the longest labels (some 25,000 characters) is
// cut to the room the message has left, with "…", so Telegram takes the
// prompt with it, and the ended prompt with it and the longest status
// line: its buttons go.
func TestLongTallyFits(t *testing.T) {
	t.Parallel()
	fake, ch := newReachRig(t, telegramtest.Options{})
	ctx := context.Background()
	caps := ch.Capabilities()
	// The longest context that leaves the prompt in one part.
	full := sort.Search(askbridge.MaxContextChars+1, func(n int) bool {
		return len(telegram.PromptParts(longTallyRecord(t, n, 0).PlanFor(0, caps))) > 1
	}) - 1
	rec := longTallyRecord(t, full, 0)
	refs, err := sendAll(ctx, ch, fmt.Sprint(opsGroup), rec.PlanFor(0, caps))
	if err != nil {
		t.Fatal(err)
	}
	rec = longTallyRecord(t, full, askbridge.MaxAnswerers)
	voted := rec.PlanFor(0, caps)
	if n := engine.TextLength(strings.Join(voted.Notes, "\n")); n < 5*telegramtest.MessageChars {
		t.Fatalf("the tally is only %d characters long", n)
	}
	last := refs[len(refs)-1]
	if err := ch.Update(ctx, last, voted); err != nil {
		t.Fatalf("Telegram refused the prompt with its tally: %v", err)
	}
	if msgs := fake.BotMessages(opsGroup); !strings.HasSuffix(msgs[len(msgs)-1].Text, "…") || len(msgs[len(msgs)-1].Keyboard) == 0 {
		t.Errorf("the open prompt does not end with its tally cut, above its buttons:\n%s", msgs[len(msgs)-1].Text)
	}
	var labels []string
	for _, q := range rec.Request.Questions {
		for _, o := range q.Options {
			labels = append(labels, o.Label)
		}
	}
	end := engine.Ending{Plan: voted, Outcome: askbridge.OutcomeAnswered, Status: fmt.Sprintf("Answered by %s in %s: %s",
		strings.Repeat("B", 129), strings.Repeat("p", askbridge.MaxToChars), strings.Join(labels, ", "))}
	for _, ref := range refs {
		if err := ch.Finish(ctx, ref, end); err != nil {
			t.Fatalf("Telegram refused the ended prompt with its tally: %v", err)
		}
	}
	msgs := fake.BotMessages(opsGroup)
	m := msgs[len(msgs)-1]
	if m.Edits != 2 || len(m.Keyboard) != 0 {
		t.Errorf("the last part: %d edits, buttons %v", m.Edits, m.Keyboard)
	}
	tally, _, _ := strings.Cut(voted.Notes[0], "—")
	if !strings.Contains(m.Text, "\n\n"+tally+"— A0 ") || !strings.Contains(m.Text, "…\n\n"+end.Status) || engine.TextLength(m.Text) > telegramtest.MessageChars {
		t.Errorf("the ended last part (%d characters) does not show the tally cut, then the status line:\n%s", engine.TextLength(m.Text), m.Text)
	}
}
