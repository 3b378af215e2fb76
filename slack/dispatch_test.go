package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// stuckInbox is an inbox whose taps hang until release is closed, as they
// would in a Redis outage; it counts the taps begun.
type stuckInbox struct {
	tapInbox
	begun   chan struct{}
	release chan struct{}
}

func (i *stuckInbox) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	i.begun <- struct{}{}
	<-i.release
	return i.tapInbox.Tap(ctx, t)
}

// With every handling slot taken, a further event is answered 503 (Slack
// delivers it again) and starts nothing: no goroutine waits for a slot,
// however many events come, and the events that had slots are handled once
// they free up.
func TestDispatchShedsWhenEverySlotIsTaken(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	c := newTestChannel(t, fake)
	const slots = 2
	c.slots, c.slotWait = make(chan struct{}, slots), 20*time.Millisecond
	in := &stuckInbox{begun: make(chan struct{}, 100), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.inbox.Store(&inboxRef{ctx: ctx, in: in})
	h := c.HTTPHandler()
	post := func(i int) int {
		payload, _ := json.Marshal(press("C1", "1700000000.000100", "U1", strconv.Itoa(i)))
		body := []byte(url.Values{"payload": {string(payload)}}.Encode())
		r := httptest.NewRequest(http.MethodPost, InteractivityPath, strings.NewReader(string(body)))
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		r.Header.Set("X-Slack-Request-Timestamp", ts)
		r.Header.Set("X-Slack-Signature", Sign("s-long-enough-secret", ts, body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i := range slots {
		if code := post(i); code != http.StatusOK {
			t.Fatalf("event %d with a free slot: %d, want 200", i, code)
		}
		<-in.begun
	}
	before := runtime.NumGoroutine()
	for i := slots; i < slots+50; i++ {
		if code := post(i); code != http.StatusServiceUnavailable {
			t.Fatalf("event %d with every slot taken: %d, want 503 for Slack to deliver it again", i, code)
		}
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Errorf("goroutines %d after 50 shed events, %d before: events wait for slots", after, before)
	}
	close(in.release)
	c.handling.Wait()
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.taps) != slots {
		t.Errorf("%d taps handled, want the %d that had slots", len(in.taps), slots)
	}
	if len(in.begun) != 0 {
		t.Errorf("%d shed events were handled all the same", len(in.begun))
	}
}
