package matrix_test

import (
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/askbridge/askbridge/internal/dendritetest"
)

// TestRateLimitThroughTheEngine: the homeserver answers the prompt's send
// with 429 and retry_after_ms; the engine waits it out and the prompt is
// posted once, and answered.
func TestRateLimitThroughTheEngine(t *testing.T) {
	e := newEnv(t, "limits")
	proxy := dendritetest.NewProxy(t, e.srv.URL)
	e.url = proxy.URL
	e.syncing(e.start("r1"))
	proxy.LimitSends(e.room, 2, 400*time.Millisecond)
	start := time.Now()
	qid := e.ask("qlimit02", "", multiQuestions)
	prompt := e.next(ofType("m.room.message"))
	if waited := time.Since(start); waited < 700*time.Millisecond {
		t.Errorf("the prompt was posted after %s, before two 429s of 400ms were waited out", waited)
	}
	e.reply(e.alice, prompt.ID, "2", false)
	if res := e.Result(qid, 20*time.Second); !answered(res, "checks", "Load") {
		t.Fatalf("result %+v, want Load", res)
	}
	var prompts int
	for _, ev := range e.botEvents(e.marker()) {
		if ev.Type == event.EventMessage && ev.Content.Raw["m.relates_to"] == nil && ev.Content.Raw["msgtype"] == "m.text" {
			prompts++
		}
	}
	if prompts != 0 {
		t.Errorf("%d more prompts were posted after the first", prompts)
	}
}
