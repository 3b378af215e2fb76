package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/cooldowntest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// stubDiscord answers the transport's requests in place of Discord: a 429
// (route bucket, retry_after 10 s) for the first request to limitedPath,
// 200 for everything else; it counts the requests by path.
type stubDiscord struct {
	limitedPath string

	mu      sync.Mutex
	counts  map[string]int
	limited int
}

func (s *stubDiscord) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[req.URL.Path]++
	h := http.Header{"Content-Type": {"application/json"}}
	if req.URL.Path == s.limitedPath && s.counts[req.URL.Path] == 1 {
		s.limited++
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset-After", "10.000")
		h.Set("X-RateLimit-Scope", "user")
		return &http.Response{StatusCode: 429, Header: h, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"message":"You are being rate limited.","retry_after":10,"global":false}`))}, nil
	}
	return &http.Response{StatusCode: 200, Header: h, Request: req, Body: io.NopCloser(strings.NewReader(`{}`))}, nil
}

func (s *stubDiscord) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// A 429 on one route bucket (channel 111's messages) holds that bucket
// only: a request on another channel's bucket goes at once, every request
// on the limited bucket waits out its retry_after (on a simulated clock)
// and none is made before, a request whose deadline comes first is refused
// at once without a call, and once the time passed all go.
func TestRouteBucket429HoldsThatBucketOnly(t *testing.T) {
	const limited, other = "/api/v10/channels/111/messages", "/api/v10/channels/222/messages"
	stub := &stubDiscord{limitedPath: limited, counts: map[string]int{}}
	clock := clockwork.NewFakeClock()
	lim := newLimiter()
	lim.clock = clock
	tr := &transport{next: stub, lim: lim}
	ctx := context.Background()
	// A deadline turns a hold where there should be none into an error
	// instead of a hang; nothing here depends on how long anything takes.
	bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	post := func(ctx context.Context, path string) error {
		req, err := http.NewRequestWithContext(ctx, "POST", "https://discord.com"+path, strings.NewReader(`{"content":"x"}`))
		if err != nil {
			return err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}

	var rl *rateLimitError
	if err := post(ctx, limited); !errors.As(err, &rl) || rl.Global || rl.RetryAfter != 10*time.Second {
		t.Fatalf("the request Discord limited: %v", err)
	}
	if err := post(bounded, other); err != nil {
		t.Fatalf("another channel's bucket was held: %v", err)
	}

	const callers = 5
	errs := make(chan error, callers)
	for range callers {
		go func() { errs <- post(ctx, limited) }()
	}
	if err := clock.BlockUntilContext(bounded, callers); err != nil {
		t.Fatalf("the callers of the limited bucket do not all wait: %v", err)
	}
	if n := stub.count(limited); n != 1 {
		t.Fatalf("%d requests on the limited bucket within its retry_after, want the first only", n)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := post(short, limited); !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > 10*time.Second {
		t.Fatalf("a request whose deadline comes before the bucket's reset: %v", err)
	}
	if err := post(bounded, other); err != nil {
		t.Fatalf("another channel's bucket, with the limited one's callers waiting: %v", err)
	}

	clock.Advance(10 * time.Second)
	for range callers {
		if err := <-errs; err != nil {
			t.Errorf("a caller after the retry_after: %v", err)
		}
	}
	if n := stub.count(limited); n != 1+callers {
		t.Errorf("%d requests on the limited bucket, want %d", n, 1+callers)
	}
}

// A global 429 holds every bucket.
func TestGlobal429HoldsEveryBucket(t *testing.T) {
	clock := clockwork.NewFakeClock()
	lim := newLimiter()
	lim.clock = clock
	lim.limited("POST /channels/111/messages", &rateLimitError{RetryAfter: time.Second, Global: true})
	done := make(chan error, 1)
	go func() { done <- lim.wait(context.Background(), "POST /channels/222/messages") }()
	if err := clock.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// busCoord shares cooldowns on an in-process bus, as replicas do through
// Redis.
type busCoord struct {
	engine.Coordinator
	m *cooldowntest.Member
}

func (b busCoord) ShareCooldown(ctx context.Context, platform, bucket string, d time.Duration) error {
	return b.m.ShareCooldown(ctx, platform, bucket, d)
}

func (b busCoord) Cooldowns(ctx context.Context, platform string, fn func(string, time.Duration)) error {
	return b.m.Cooldowns(ctx, platform, fn)
}

// A 429 one replica gets on a route bucket holds the other replicas'
// requests on that bucket too, though Discord never limited them; their
// other buckets go at once. A global 429 shared holds all of the other's.
func TestBucket429SharedWithOtherReplicas(t *testing.T) {
	const limited, other = "/api/v10/channels/111/messages", "/api/v10/channels/222/messages"
	stub := &stubDiscord{limitedPath: limited, counts: map[string]int{}}
	clock := clockwork.NewFakeClock()
	bus := cooldowntest.NewBus()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replica := func() *transport {
		coord := busCoord{m: &cooldowntest.Member{Bus: bus}}
		lim := newLimiter()
		lim.clock = clock
		tr := &transport{next: stub, lim: lim}
		tr.share = func(bucket string, d time.Duration) {
			engine.ShareCooldown(coord, Platform, bucket, d, discardLog())
		}
		heard := engine.HearCooldowns(ctx, coord, Platform, discardLog(), lim.heard)
		t.Cleanup(heard)
		return tr
	}
	a, b := replica(), replica()
	testwait.For(t, 10*time.Second, "both replicas listening for cooldowns", func() bool { return bus.Listening(Platform) >= 2 })
	post := func(ctx context.Context, tr *transport, path string) error {
		req, err := http.NewRequestWithContext(ctx, "POST", "https://discord.com"+path, strings.NewReader(`{"content":"x"}`))
		if err != nil {
			return err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	var rl *rateLimitError
	if err := post(ctx, a, limited); !errors.As(err, &rl) || rl.RetryAfter != 10*time.Second {
		t.Fatalf("the request Discord limited: %v", err)
	}
	key := bucketKey("POST", limited)
	testwait.For(t, 10*time.Second, "the other replica holding the bucket 10 s", func() bool {
		b.lim.mu.Lock()
		defer b.lim.mu.Unlock()
		bk := b.lim.buckets[key]
		return bk != nil && bk.reset.Sub(clock.Now()) == 10*time.Second
	})
	bounded, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	errs := make(chan error, 1)
	go func() { errs <- post(ctx, b, limited) }()
	if err := clock.BlockUntilContext(bounded, 1); err != nil {
		t.Fatalf("the other replica does not wait for the bucket: %v", err)
	}
	if n := stub.count(limited); n != 1 {
		t.Fatalf("%d requests on the limited bucket within its retry_after, want the first only", n)
	}
	if err := post(bounded, b, other); err != nil {
		t.Fatalf("another bucket on the other replica: %v", err)
	}
	clock.Advance(10 * time.Second)
	if err := <-errs; err != nil {
		t.Fatalf("after the retry_after: %v", err)
	}
	if got := bus.Shared(); len(got) != 1 || got[0] != (cooldowntest.Shared{Platform: Platform, Bucket: key, D: 10 * time.Second}) {
		t.Fatalf("shared %+v, want the bucket once", got)
	}

	// A shared global limit holds every bucket of the other replica.
	b.lim.heard(globalBucket, 3*time.Second)
	go func() { errs <- post(ctx, b, other) }()
	if err := clock.BlockUntilContext(bounded, 1); err != nil {
		t.Fatalf("a shared global limit does not hold the other bucket: %v", err)
	}
	clock.Advance(3 * time.Second)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
