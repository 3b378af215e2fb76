package slack

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/slack-go/slack"
)

// gate holds back the Web API calls to a channel while a 429's Retry-After
// for that channel runs: a "not before" time per channel, set by any call
// to the channel that Slack answered 429 and consulted before every call to
// it. So a limited channel slows down alone, and every caller of it (an
// edit, a post, a notice) waits out the Retry-After that another call just
// got instead of running into the limit again in lock-step. The engine
// still owns the retries: a call that gets a 429 returns it.
type gate struct {
	clock clockwork.Clock

	mu    sync.Mutex
	until map[string]time.Time // channel id -> no call before
}

// maxGated is how many channels the gate remembers before it forgets those
// whose time has passed.
const maxGated = 1024

func newGate(clock clockwork.Clock) *gate {
	return &gate{clock: clock, until: map[string]time.Time{}}
}

// wait blocks until calls to channel may go, or ctx is done. When ctx's
// deadline comes before that (the HTTP client's Timeout counts too), it
// returns a *slack.RateLimitedError with the time left at once, without
// calling Slack: the engine waits it out. Safe for concurrent use.
func (g *gate) wait(ctx context.Context, channel string) error {
	for {
		g.mu.Lock()
		d := g.until[channel].Sub(g.clock.Now())
		g.mu.Unlock()
		if d <= 0 {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return &slack.RateLimitedError{RetryAfter: d}
		}
		t := g.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
		// Another 429 may have moved the gate on meanwhile: look again.
	}
}

// hold keeps calls to channel back for d, unless they are held longer
// already.
func (g *gate) hold(channel string, d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	if len(g.until) >= maxGated {
		for ch, t := range g.until {
			if !t.After(now) {
				delete(g.until, ch)
			}
		}
	}
	if t := now.Add(d); t.After(g.until[channel]) {
		g.until[channel] = t
	}
}

// gatedTransport passes every Web API call that names a channel (the
// `channel` of its form or query) through the gate, and holds the channel
// on a 429 for its Retry-After.
type gatedTransport struct {
	next http.RoundTripper
	gate *gate
	// share tells the other replicas of a 429 (nil: no one to tell).
	share func(channel string, d time.Duration)
}

func (t *gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	channel, req, err := channelOf(req)
	if err != nil {
		return nil, err
	}
	if channel == "" {
		return t.next.RoundTrip(req)
	}
	if err := t.gate.wait(req.Context(), channel); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		d := retryAfter(resp.Header)
		t.gate.hold(channel, d)
		if t.share != nil {
			t.share(channel, d)
		}
	}
	return resp, err
}

// retryAfter is a 429's Retry-After (Slack sends whole seconds), or a
// second when it has none.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After")), 64)
	if err != nil || s <= 0 {
		return time.Second
	}
	// Bound what a broken header can make a channel wait.
	return time.Duration(min(s, 3600) * float64(time.Second))
}

// maxFormBytes bounds the form read to find the channel; Slack's own limit
// on a message (50 blocks of at most 3000 characters) is below it.
const maxFormBytes = 1 << 20

// channelOf finds the channel a call names: the `channel` field of its
// query or of its form body. It reads the body through GetBody (slack-go's
// requests have one), else it buffers it in a copy of req, which it
// returns to be sent instead; an error means that body could not be read,
// and it is closed.
func channelOf(req *http.Request) (string, *http.Request, error) {
	if ch := formValue(req.URL.RawQuery, "channel"); ch != "" {
		return ch, req, nil
	}
	if req.Body == nil || req.Body == http.NoBody ||
		!strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return "", req, nil
	}
	if req.GetBody != nil {
		// A copy that cannot be read leaves the call ungated, not failed.
		body, err := req.GetBody()
		if err != nil {
			return "", req, nil
		}
		defer body.Close()
		form, _ := io.ReadAll(io.LimitReader(body, maxFormBytes))
		return formValue(string(form), "channel"), req, nil
	}
	form, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return "", req, err
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(form))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(form)), nil }
	return formValue(string(form), "channel"), out, nil
}

// formValue is the first value of key in a URL-encoded form, unescaped, or
// "". It reads no other field (a prompt's blocks are long).
func formValue(form, key string) string {
	for form != "" {
		var field string
		field, form, _ = strings.Cut(form, "&")
		k, v, _ := strings.Cut(field, "=")
		if k != key {
			continue
		}
		if u, err := url.QueryUnescape(v); err == nil {
			return u
		}
		return ""
	}
	return ""
}
