package chaos

import (
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
)

// TestRedisOutageLosesNoTapOrReply makes Redis unreachable from the
// replicas for five seconds (every connection dropped, new ones refused)
// while people tap buttons and reply in text. Nothing is lost without a
// word: each tap and each reply either answered its question once Redis
// was back, or the person was told to try again (and trying again then
// answers it). Every question ends exactly once, and no buttons stay live.
func TestRedisOutageLosesNoTapOrReply(t *testing.T) {
	const questions = 12 // even ones tapped, odd ones replied to
	e := newEnv(t, envOpts{proxy: true, chats: questions})
	e.start("a")
	e.start("b")
	e.waitPoller("")
	prompts := map[int]telegramtest.Message{}
	for i := range questions {
		e.ask(i, e.chatOf(i), 600)
	}
	for i := range questions {
		prompts[i] = e.prompt(i)
	}

	// The outage lasts five seconds, longer than the retries; taps and
	// replies spread over it, as people's would be.
	over := e.proxy.PauseFor(5 * time.Second)
	outage := time.Now()
	queries := map[int]string{}
	replies := map[int]int{}
	pace(5*time.Second, questions, func(i int) {
		if i%2 == 0 {
			queries[i] = e.tap(prompts[i], choice(i))
			return
		}
		id, err := e.fake.Reply(prompts[i].ChatID, alice, prompts[i].ID, choice(i))
		if err != nil {
			t.Fatal(err)
		}
		replies[i] = id
	})
	<-over
	t.Logf("Redis unreachable for %s", time.Since(outage).Round(time.Millisecond))

	// Each action is settled: its question answered, or the person told
	// to try again.
	tryAgain := map[int]bool{}
	e.eventually(30*time.Second, "every tap and reply settled", func() bool {
		for i := range questions {
			if tryAgain[i] {
				continue
			}
			if c, _, err := e.results(qid(i)); err == nil && c > 0 {
				if i%2 == 1 || e.hasAnswer(queries[i]) {
					continue
				}
				return false // answered; the tap's notice is still on its way
			}
			if i%2 == 0 {
				a, ok := e.fake.Answer(queries[i])
				if !ok {
					return false
				}
				if a.Text != en(engine.NoticeTryAgain) {
					t.Errorf("question %d: tap told %q but the question has no result", i, a.Text)
				}
				tryAgain[i] = true
				continue
			}
			if !e.toldTryAgain(prompts[i].ChatID, replies[i]) {
				return false
			}
			tryAgain[i] = true
		}
		return true
	})
	// Trying again now answers.
	for i := range questions {
		if !tryAgain[i] {
			continue
		}
		if c, _, _ := e.results(qid(i)); c > 0 {
			continue // the held update was handled meanwhile
		}
		if i%2 == 0 {
			if n := e.notice(e.tap(prompts[i], choice(i)), 10*time.Second); n.Text != en(engine.NoticeRecorded) && n.Text != en(engine.NoticeAlreadyAnswered) {
				t.Errorf("question %d: tap after the outage told %q", i, n.Text)
			}
		} else if _, err := e.fake.Reply(prompts[i].ChatID, alice, prompts[i].ID, choice(i)); err != nil {
			t.Fatal(err)
		}
	}
	e.ended(seq(questions), 20*time.Second)
	e.noLiveButtons(20 * time.Second)
	// An update is confirmed (by the next poll's offset) only once handled.
	e.eventually(20*time.Second, "every update confirmed", func() bool { return e.fake.Pending() == 0 })
	e.stopAll()
	told := 0
	for i := range questions {
		e.answered(i)
		if tryAgain[i] {
			told++
		}
	}
	t.Logf("%d of %d people were told to try again", told, questions)
}

// hasAnswer reports whether a callback query was answered.
func (e *env) hasAnswer(query string) bool {
	_, ok := e.fake.Answer(query)
	return ok
}

// toldTryAgain reports whether the bot replied "try again" to message msg
// in chat.
func (e *env) toldTryAgain(chat int64, msg int) bool {
	for _, m := range e.fake.BotMessages(chat) {
		if m.ReplyTo == msg && m.Text == en(engine.NoticeTryAgain) {
			return true
		}
	}
	return false
}
