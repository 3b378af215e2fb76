package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/telegram"
)

// newSendRig is a channel on a fake with one group chat, and the plan of
// the long (multi-part) request.
func newSendRig(t *testing.T, o telegramtest.Options) (*telegramtest.Server, *telegram.Channel, engine.Plan) {
	t.Helper()
	fake := telegramtest.New(o)
	t.Cleanup(fake.Close)
	fake.AddChat(opsGroup, "supergroup", "Ops")
	ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, enginetest.NewMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := askbridge.DecodeRequest([]byte(longRequest()))
	if err != nil {
		t.Fatal(err)
	}
	return fake, ch, engine.BuildPlan("long", req, ch.Capabilities())
}

// TestFailureMidPromptGoesOnFromTheFirstPartNotPosted: a 502 on the second
// part of a long prompt is returned at once, Temporary, after the first
// part went to Sent; a second Send from part 1 posts the rest, numbered on
// from there.
func TestFailureMidPromptGoesOnFromTheFirstPartNotPosted(t *testing.T) {
	t.Parallel()
	fake, ch, plan := newSendRig(t, telegramtest.Options{})
	parts := telegram.PromptParts(plan)
	chat := fmt.Sprint(opsGroup)
	fake.FailNext("sendMessage", 1, 1) // part one goes out, then one 502
	sent, err := sendAll(context.Background(), ch, chat, plan)
	var se *engine.SendError
	if !errors.As(err, &se) || se.Kind != engine.Temporary || !strings.Contains(se.Reason, "502 Bad Gateway") {
		t.Fatalf("a 502: %v", err)
	}
	if len(sent) != 1 || sent[0].Part != 0 {
		t.Fatalf("sent %+v before the 502, want part 0 only", sent)
	}
	var rest []engine.MessageRef
	err = ch.Send(context.Background(), engine.Delivery{Chat: chat, Plan: plan, From: 1, Sent: func(ref engine.MessageRef) bool {
		rest = append(rest, ref)
		return true
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []int
	for i, ref := range append(sent, rest...) {
		got, want = append(got, ref.Part), append(want, i)
	}
	if len(got) != len(parts) || !slices.Equal(got, want) {
		t.Errorf("parts %v, want %v", got, want)
	}
	msgs := fake.BotMessages(opsGroup)
	if len(msgs) != len(parts) {
		t.Fatalf("%d messages in the chat, want %d", len(msgs), len(parts))
	}
	for i, m := range msgs {
		if m.HTML != parts[i] {
			t.Errorf("message %d is not part %d:\n%s", i+1, i, m.HTML)
		}
	}
}

// TestOneTryPerCall: Send and Finish make one call and return the
// platform's refusal classified; the engine decides on retries.
func TestOneTryPerCall(t *testing.T) {
	t.Parallel()
	t.Run("429", func(t *testing.T) {
		t.Parallel()
		fake, ch, _ := newSendRig(t, telegramtest.Options{ChatRate: 0.1, ChatBurst: 1})
		req, err := askbridge.DecodeRequest([]byte(goldenShapes[0].request))
		if err != nil {
			t.Fatal(err)
		}
		plan := engine.BuildPlan("limited", req, ch.Capabilities())
		if _, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		sent, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
		var se *engine.SendError
		if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter < time.Second {
			t.Fatalf("a 429: %v", err)
		}
		if len(sent) != 0 || fake.Stats().RateLimited != 1 {
			t.Errorf("sent %v with %d 429s, want nothing after one", sent, fake.Stats().RateLimited)
		}
		if d := time.Since(start); d >= se.RetryAfter {
			t.Errorf("Send took %s: it waited out the 429 itself", d)
		}
	})
	t.Run("502", func(t *testing.T) {
		t.Parallel()
		fake, ch, plan := newSendRig(t, telegramtest.Options{})
		chat := fmt.Sprint(opsGroup)
		refs, err := sendAll(context.Background(), ch, chat, plan)
		if err != nil {
			t.Fatal(err)
		}
		// One 502 each: a second try would have gone through.
		fake.FailNext("sendMessage", 0, 1)
		fake.FailNext("editMessageText", 0, 1)
		if _, err := sendAll(context.Background(), ch, chat, plan); kindOf(err) != engine.Temporary {
			t.Errorf("send: %v", err)
		}
		err = ch.Finish(context.Background(), refs[0], engine.Ending{Plan: plan, Status: "Skipped"})
		if kindOf(err) != engine.Temporary {
			t.Errorf("finish: %v", err)
		}
		if st := fake.Stats(); st.Sent != len(refs) || st.Edited != 0 {
			t.Errorf("%d sent, %d edited after the 502s, want %d and 0", st.Sent, st.Edited, len(refs))
		}
	})
}

// TestSendStopsWhereSentSays: Send posts no part after the one Sent says
// to stop at, and succeeds; a From past the last part posts nothing.
func TestSendStopsWhereSentSays(t *testing.T) {
	t.Parallel()
	fake, ch, plan := newSendRig(t, telegramtest.Options{})
	parts := len(telegram.PromptParts(plan))
	calls := 0
	err := ch.Send(context.Background(), engine.Delivery{Chat: fmt.Sprint(opsGroup), Plan: plan, Sent: func(engine.MessageRef) bool {
		calls++
		return false
	}})
	if err != nil || calls != 1 {
		t.Errorf("Send returned %v after %d calls of Sent, want nil after 1", err, calls)
	}
	if n := len(fake.BotMessages(opsGroup)); n != 1 {
		t.Errorf("%d messages posted, want 1", n)
	}
	err = ch.Send(context.Background(), engine.Delivery{Chat: fmt.Sprint(opsGroup), Plan: plan, From: parts, Sent: func(ref engine.MessageRef) bool {
		t.Errorf("sent %+v from past the last part", ref)
		return true
	}})
	if err != nil || fake.Stats().Sent != 1 {
		t.Errorf("from past the end: %v, %d sent in all", err, fake.Stats().Sent)
	}
}

// TestFinishShowsThePartItIsTold: Finish renders ref.Part of the plan (or
// the closed reply box) without knowing anything of the question; a part
// the plan does not have is a permanent error and no edit.
func TestFinishShowsThePartItIsTold(t *testing.T) {
	t.Parallel()
	fake, ch, plan := newSendRig(t, telegramtest.Options{})
	parts := telegram.PromptParts(plan)
	refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh channel, which never saw the question, finishes it, last
	// part first.
	fresh, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, enginetest.NewMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	end := engine.Ending{Plan: plan, Outcome: askbridge.OutcomeSkipped, Status: "Skipped"}
	for _, ref := range slices.Backward(refs) {
		if err := fresh.Finish(context.Background(), ref, end); err != nil {
			t.Fatal(err)
		}
	}
	// Each message shows its own part again, without the instructions
	// (only the last part has them).
	ended := telegram.EndedParts(plan)
	if len(ended) != len(parts) || ended[0] != parts[0] || !strings.HasPrefix(parts[len(parts)-1], ended[len(ended)-1]+"\n\n<i>") {
		t.Fatalf("the ended parts are not the parts without the instructions:\n%q\n%q", ended, parts)
	}
	for i, m := range fake.BotMessages(opsGroup) {
		if want := ended[i] + "\n\n<b>Skipped</b>"; m.HTML != want || len(m.Keyboard) != 0 {
			t.Errorf("message %d after the end:\n%s\nwant\n%s", i+1, m.HTML, want)
		}
		if strings.Contains(m.Text, plan.FreeText) {
			t.Errorf("message %d still says %q", i+1, plan.FreeText)
		}
	}

	box := refs[0]
	box.Part = engine.PartReplyBox
	if err := fresh.Finish(context.Background(), box, end); err != nil {
		t.Fatal(err)
	}
	if m := fake.BotMessages(opsGroup)[0]; !strings.HasPrefix(m.Text, "Your answer to: Question 1: ") || !strings.HasSuffix(m.Text, "\n\nSkipped") {
		t.Errorf("a closed reply box shows %q", m.Text)
	}

	beyond := refs[0]
	beyond.Part = len(parts)
	calls := fake.BotMessages(opsGroup)[0].EditCalls
	if err := fresh.Finish(context.Background(), beyond, end); kindOf(err) != engine.Permanent {
		t.Errorf("a part the plan lacks: %v", err)
	}
	if fake.BotMessages(opsGroup)[0].EditCalls != calls {
		t.Error("a part the plan lacks was edited")
	}
}

// kindOf is the kind of a *engine.SendError, 0 for any other error.
func kindOf(err error) engine.ErrorKind {
	var se *engine.SendError
	if errors.As(err, &se) {
		return se.Kind
	}
	return 0
}
