package telegram_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/telegramtest"
)

// TestBurst500 sends 500 questions to 50 chats through two replicas under
// the fake's rate limits, answers every one, and checks that each 429 was
// waited out and nothing was lost. The replicas pace at Telegram's advice
// scaled up 20× (20/s per chat, 300/s per bot) while the fake lets a chat
// take only 10/s with no burst. The first hotQuestions all go to one chat,
// so 429s are certain however slow the machine: they are queued at once
// and a replica alone sends twice what that chat takes.
func TestBurst500(t *testing.T) {
	if testing.Short() {
		t.Skip("burst of 500 questions under rate limits: full tier (go test without -short)")
	}
	t.Parallel()
	const questions, chats = 500, 50
	e := newEnv(t, envOpts{
		fake:     telegramtest.Options{ChatRate: 10, ChatBurst: 1, GlobalRate: 300, GlobalBurst: 30},
		chatPace: time.Second / 20, globalPace: time.Second / 300,
	})
	for c := range chats {
		e.fake.AddChat(burstChat(c), "group", fmt.Sprint("Team ", c))
	}
	e.start("a")
	e.start("b")
	e.poller()
	start := time.Now()
	body := `{"id":"burst-%d","to":"telegram:%d","questions":[{"id":"pick","header":"Pick","question":"Question %d?","options":[{"label":"Left"},{"label":"Right"}]}]}`
	for i := range questions {
		e.Ask(fmt.Sprintf(body, i, burstChat(chatOf(i, chats)), i))
	}
	questionRe := regexp.MustCompile(`Question (\d+)\?`)
	shown := map[int]telegramtest.Message{}
	// What is checked is that nothing is lost, not how fast: how many 429s
	// a burst meets (and so how long the slowdowns last) varies a lot from
	// run to run, from about 7 s to 40 s here, and more under -race on a
	// loaded machine.
	e.eventually(180*time.Second, "all prompts shown", func() bool {
		for c := range chats {
			for _, m := range e.fake.BotMessages(burstChat(c)) {
				if g := questionRe.FindStringSubmatch(m.Text); g != nil {
					n, _ := strconv.Atoi(g[1])
					shown[n] = m
				}
			}
		}
		return len(shown) == questions
	})
	t.Logf("%d prompts shown in %s", questions, time.Since(start))
	for i := range questions {
		m := shown[i]
		if _, err := e.fake.Tap(m.ChatID, m.ID, alice, []string{"Left", "Right"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range questions {
		r := e.Result(fmt.Sprint("burst-", i), 20*time.Second)
		if r.Status != askbridge.StatusAnswered || r.Answers.Answers["pick"][0] != []string{"Left", "Right"}[i%2] {
			t.Fatalf("question %d: result %+v", i, r)
		}
	}
	e.eventually(90*time.Second, "every prompt edited", func() bool {
		for i := range questions {
			m := e.message(shown[i].ChatID, shown[i].ID)
			if len(m.Keyboard) != 0 {
				return false
			}
		}
		return true
	})
	st := e.fake.Stats()
	t.Logf("done in %s: %+v", time.Since(start), st)
	if st.Sent != questions {
		t.Errorf("%d messages sent for %d questions", st.Sent, questions)
	}
	if st.Answered != questions || st.AnswerRefused != 0 {
		t.Errorf("%d taps answered (%d refused), want %d", st.Answered, st.AnswerRefused, questions)
	}
	if st.RateLimited == 0 {
		t.Error("no 429 was given: the test did not exercise the limits")
	}
	if st.Early != 0 {
		t.Errorf("%d requests came before their retry_after passed", st.Early)
	}
	e.NoResult()
}

func burstChat(i int) int64 { return -5000 - int64(i) }

// hotQuestions of the burst go to its first chat; the rest are spread
// over the others.
const hotQuestions = 20

func chatOf(question, chats int) int {
	if question < hotQuestions {
		return 0
	}
	return 1 + question%(chats-1)
}
