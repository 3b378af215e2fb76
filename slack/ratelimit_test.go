package slack

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/cooldowntest"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// callsTo counts the chat.* calls the fake received for channel.
func callsTo(fake *slacktest.Server, channel string) int {
	n := 0
	for _, m := range []string{"chat.postMessage", "chat.update", "chat.postEphemeral"} {
		for _, c := range fake.Calls(m) {
			if c.Form.Get("channel") == channel {
				n++
			}
		}
	}
	return n
}

// A 429 for one channel holds that channel only, for its Retry-After, and
// every caller of it waits it out: concurrent edits and posts that come
// after the 429 make no call before it has passed (on a simulated clock),
// then all go, and none runs into the limit again. A caller whose deadline
// comes first is refused at once, as rate limited, without a call; another
// channel goes at once all along.
func TestRateLimitHoldsTheChannelOnly(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	fake.AddChannel("C2")
	c := newTestChannel(t, fake)
	clock := clockwork.NewFakeClock()
	c.gate.clock = clock
	p := plan(t, "q", shapes[0].body)
	ctx := context.Background()
	// A deadline turns a hold where there should be none into an error
	// instead of a hang; nothing here depends on how long anything takes.
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 20*time.Second) }

	// 10 s is within the HTTP client's timeout (30 s), which the wait
	// counts toward.
	fake.SetRateLimit(1, time.Hour, 10)
	if err := c.Notify(ctx, "C1", "", "first"); err != nil {
		t.Fatal(err)
	}
	err := c.Notify(ctx, "C1", "", "second")
	var se *engine.SendError
	if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter != 10*time.Second {
		t.Fatalf("the call Slack limited: %v", err)
	}
	fake.SetRateLimit(0, 0, 0)

	other, cancel := bounded()
	defer cancel()
	if err := c.Notify(other, "C2", "", "another channel"); err != nil {
		t.Fatalf("another channel was held by C1's 429: %v", err)
	}

	before := callsTo(fake, "C1")
	const callers = 6
	errs := make(chan error, callers)
	for i := range callers {
		go func() {
			if i%2 == 0 {
				errs <- c.Notify(ctx, "C1", "", "after the 429")
				return
			}
			ref := engine.MessageRef{Platform: Platform, Chat: "C1", Message: "1.1"}
			errs <- c.Finish(ctx, ref, ending(p, "Expired"))
		}()
	}
	wait, cancel := bounded()
	defer cancel()
	if err := clock.BlockUntilContext(wait, callers); err != nil {
		t.Fatalf("the callers of C1 do not all wait for its Retry-After: %v", err)
	}
	if n := callsTo(fake, "C1") - before; n != 0 {
		t.Fatalf("%d calls to C1 went out within its Retry-After", n)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = c.Notify(short, "C1", "", "cannot wait that long")
	if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter <= 0 || se.RetryAfter > 10*time.Second {
		t.Fatalf("a call whose deadline comes before the gate opens: %v", err)
	}
	if err := c.Notify(other, "C2", "", "still free"); err != nil {
		t.Fatalf("another channel, with C1's callers waiting: %v", err)
	}

	clock.Advance(10 * time.Second)
	for range callers {
		if err := <-errs; err != nil {
			t.Errorf("a caller after the Retry-After: %v", err)
		}
	}
	if n := callsTo(fake, "C1") - before; n != callers {
		t.Errorf("%d calls to C1 after its Retry-After, want %d", n, callers)
	}
	if n := fake.RateLimited(); n != 1 {
		t.Errorf("%d 429s, want the first only", n)
	}
}

// A later 429 moves the gate on for the callers already waiting.
func TestGateMovesOn(t *testing.T) {
	clock := clockwork.NewFakeClock()
	g := newGate(clock)
	g.hold("C1", 5*time.Second)
	done := make(chan error, 1)
	go func() { done <- g.wait(context.Background(), "C1") }()
	if err := clock.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	g.hold("C1", 10*time.Second)
	g.hold("C1", 2*time.Second) // shorter: changes nothing
	clock.Advance(5 * time.Second)
	// The waiter looks again and waits for the rest.
	if err := clock.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("the waiter went when the first Retry-After passed, within the second")
	default:
	}
	clock.Advance(5 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestChannelOfACall(t *testing.T) {
	form := url.Values{"token": {"xoxb-1"}, "channel": {"C0 1&x"}, "blocks": {`[{"type":"section","text":{"text":"channel=C9&"}}]`}}
	cases := []struct {
		name string
		req  func() *http.Request
		want string
	}{
		{"form with GetBody", func() *http.Request {
			r, _ := http.NewRequest("POST", "https://slack.test/api/chat.postMessage", strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, "C0 1&x"},
		{"form without GetBody", func() *http.Request {
			r, _ := http.NewRequest("POST", "https://slack.test/api/chat.update", strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.GetBody = nil
			return r
		}, "C0 1&x"},
		{"query", func() *http.Request {
			r, _ := http.NewRequest("GET", "https://slack.test/api/conversations.history?channel=C7&limit=1", nil)
			return r
		}, "C7"},
		{"no channel", func() *http.Request {
			r, _ := http.NewRequest("POST", "https://slack.test/api/conversations.open", strings.NewReader("users=U1"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req()
			got, out, err := channelOf(req)
			if err != nil || got != tc.want {
				t.Fatalf("channel %q, %v; want %q", got, err, tc.want)
			}
			if out.Body != nil {
				// The body still goes out whole.
				b, err := io.ReadAll(out.Body)
				if err != nil || (tc.want != "" && string(b) != form.Encode()) {
					t.Errorf("body after reading the channel: %q, %v", b, err)
				}
			}
		})
	}
}

// A 429 one replica gets for a channel holds the other replicas' calls to
// that channel too, for its Retry-After, though Slack never limited them:
// they do not run into the limit in turn. Other channels stay free.
func TestRateLimitSharedWithOtherReplicas(t *testing.T) {
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	defer fake.Close()
	fake.AddChannel("C1")
	fake.AddChannel("C2")
	bus := cooldowntest.NewBus()
	clock := clockwork.NewFakeClock()
	replica := func() *Channel {
		coord := enginetest.NewMemCoord()
		coord.Cool.Bus = bus
		c, err := New(Config{BotToken: "xoxb-1", SigningSecret: "s-long-enough-secret", APIURL: fake.APIURL()}, coord, discard())
		if err != nil {
			t.Fatal(err)
		}
		c.gate.clock = clock
		return c
	}
	a, b := replica(), replica()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, c := range []*Channel{a, b} {
		go func() { _ = c.Run(ctx, nil); done <- struct{}{} }()
	}
	defer func() { cancel(); <-done; <-done }()
	eventually(t, "both replicas listen", func() bool { return bus.Listening(Platform) == 2 })

	fake.SetRateLimit(1, time.Hour, 10)
	if err := a.Notify(ctx, "C1", "", "first"); err != nil {
		t.Fatal(err)
	}
	var se *engine.SendError
	if err := a.Notify(ctx, "C1", "", "second"); !errors.As(err, &se) || se.Kind != engine.RateLimited {
		t.Fatalf("the call Slack limited: %v", err)
	}
	fake.SetRateLimit(0, 0, 0)
	eventually(t, "b holds C1", func() bool {
		b.gate.mu.Lock()
		defer b.gate.mu.Unlock()
		return b.gate.until["C1"].Sub(clock.Now()) == 10*time.Second
	})
	if got := bus.Shared(); len(got) != 1 || got[0] != (cooldowntest.Shared{Platform: Platform, Bucket: "C1", D: 10 * time.Second}) {
		t.Fatalf("shared %+v, want C1 for 10s once", got)
	}

	before := callsTo(fake, "C1")
	errs := make(chan error, 1)
	go func() { errs <- b.Notify(ctx, "C1", "", "from the other replica") }()
	wait, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if err := clock.BlockUntilContext(wait, 1); err != nil {
		t.Fatalf("the other replica does not wait for C1's Retry-After: %v", err)
	}
	if n := callsTo(fake, "C1") - before; n != 0 {
		t.Fatalf("the other replica made %d calls to C1 within its Retry-After", n)
	}
	if err := b.Notify(wait, "C2", "", "another channel"); err != nil {
		t.Fatalf("another channel on the other replica: %v", err)
	}
	clock.Advance(10 * time.Second)
	if err := <-errs; err != nil {
		t.Fatalf("after the Retry-After: %v", err)
	}
	if n := fake.RateLimited(); n != 1 {
		t.Errorf("%d 429s, want the first only", n)
	}
}

// eventually waits up to 10 s for cond, checking often.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, cond)
}
