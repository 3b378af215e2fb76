package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/bwmarrin/discordgo"
	"github.com/jonboulle/clockwork"
)

// discordBase is the origin discordgo's endpoint variables are built on; the
// transport moves every request from it to Config.APIURL.
const discordBase = "https://discord.com/"

// transport rewrites discordgo's requests to the configured API base and
// applies the bridge's rate-limit policy in discordgo's place: it honours
// each route bucket's X-RateLimit-Remaining/Reset-After and the global
// limit, waiting only as long as the request's context allows, and turns a
// 429 into a *rateLimitError instead of letting discordgo sleep and retry
// without bound. It strips the X-RateLimit-* headers before discordgo sees
// them, so discordgo's own limiter (which sleeps ignoring the context)
// never waits.
type transport struct {
	base *url.URL
	next http.RoundTripper
	lim  *limiter
	// share tells the other replicas of a 429 (nil: no one to tell): the
	// bucket's key, or globalBucket.
	share func(bucket string, d time.Duration)
}

// globalBucket names Discord's global limit among the shared cooldowns.
const globalBucket = "global"

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	if t.base != nil {
		rel := strings.TrimPrefix(req.URL.String(), discordBase)
		if rel != req.URL.String() {
			u, err := t.base.Parse(rel)
			if err != nil {
				return nil, fmt.Errorf("discord: rewrite %s: %w", req.URL.Path, err)
			}
			out.URL = u
			out.Host = u.Host
		}
	}
	key := bucketKey(req.Method, out.URL.Path)
	if err := t.lim.wait(out.Context(), key); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		t.lim.release(key, nil)
		return nil, err
	}
	t.lim.release(key, resp.Header)
	if resp.StatusCode == http.StatusTooManyRequests {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		rl := parseRateLimit(resp.Header, body)
		t.lim.limited(key, rl)
		if t.share != nil {
			if rl.Global {
				t.share(globalBucket, rl.RetryAfter)
			} else {
				t.share(key, rl.RetryAfter)
			}
		}
		return nil, rl
	}
	for k := range resp.Header {
		if strings.HasPrefix(k, "X-Ratelimit-") {
			resp.Header.Del(k)
		}
	}
	return resp, nil
}

// bucketKey names a route's rate-limit bucket the way Discord counts them:
// the method and the route, keeping the top-level resource (the channel,
// the webhook and its token, the interaction) and folding other ids.
func bucketKey(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	// Skip "api" and "v9"/"v10".
	if len(segs) >= 2 && segs[0] == "api" && strings.HasPrefix(segs[1], "v") {
		segs = segs[2:]
	}
	top := ""
	if len(segs) > 0 {
		top = segs[0]
	}
	for i := 1; i < len(segs); i++ {
		keep := (i == 1 && (top == "channels" || top == "guilds" || top == "webhooks" || top == "interactions")) ||
			(i == 2 && (top == "webhooks" || top == "interactions"))
		if !keep && isSnowflake(segs[i]) {
			segs[i] = "{id}"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}

func isSnowflake(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rateLimitError is a 429 from Discord, or a wait the bridge would have to
// make that the caller's context does not allow.
type rateLimitError struct {
	RetryAfter time.Duration
	Global     bool
	Message    string
}

func (e *rateLimitError) Error() string {
	scope := "route"
	if e.Global {
		scope = "global"
	}
	return fmt.Sprintf("discord: rate limited (%s), retry after %s: %s", scope, e.RetryAfter, e.Message)
}

// parseRateLimit reads a 429: the body's retry_after (seconds, float), the
// X-RateLimit-Reset-After and Retry-After headers (the longest wins), and
// the global flag (body or X-RateLimit-Global / X-RateLimit-Scope).
func parseRateLimit(h http.Header, body []byte) *rateLimitError {
	var b struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	_ = json.Unmarshal(body, &b)
	rl := &rateLimitError{Message: b.Message, Global: b.Global, RetryAfter: seconds(b.RetryAfter)}
	if rl.Message == "" {
		rl.Message = "You are being rate limited."
	}
	for _, name := range []string{"X-RateLimit-Reset-After", "Retry-After"} {
		if v, err := strconv.ParseFloat(h.Get(name), 64); err == nil {
			rl.RetryAfter = max(rl.RetryAfter, seconds(v))
		}
	}
	if strings.EqualFold(h.Get("X-RateLimit-Global"), "true") || h.Get("X-RateLimit-Scope") == "global" {
		rl.Global = true
	}
	if rl.RetryAfter <= 0 {
		rl.RetryAfter = time.Second
	}
	return rl
}

func seconds(f float64) time.Duration {
	if f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	// Bound what a broken header can make us wait.
	return time.Duration(min(f, 3600) * float64(time.Second))
}

// limiter tracks Discord's route buckets and the global limit. A bucket
// (a route and its top-level resource: one channel's messages, one
// interaction) that Discord said is empty, or that got a 429, holds every
// request on it until its reset, and only those; a global 429 holds all.
// Every wait goes through clock, so tests drive it with a simulated one.
type limiter struct {
	mu      sync.Mutex
	clock   clockwork.Clock
	buckets map[string]*bucket
	global  time.Time // no request before this
}

type bucket struct {
	remaining int
	known     bool
	reset     time.Time
}

func newLimiter() *limiter {
	return &limiter{clock: clockwork.NewRealClock(), buckets: map[string]*bucket{}}
}

// wait blocks until a request on the bucket may go, and takes its slot. When
// the wait is longer than ctx allows, it returns a *rateLimitError at once.
func (l *limiter) wait(ctx context.Context, key string) error {
	for {
		l.mu.Lock()
		now := l.clock.Now()
		b := l.buckets[key]
		if b == nil {
			b = &bucket{}
			l.buckets[key] = b
		}
		var until time.Time
		global := false
		if l.global.After(now) {
			until, global = l.global, true
		}
		if b.known && b.remaining <= 0 && b.reset.After(now) && b.reset.After(until) {
			until, global = b.reset, false
		}
		if until.IsZero() {
			if b.known && !b.reset.After(now) {
				b.known = false // the window passed: the next response tells
			}
			if b.known {
				b.remaining--
			}
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		d := until.Sub(now)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return &rateLimitError{RetryAfter: d, Global: global, Message: "waiting for Discord's rate limit would pass the deadline"}
		}
		t := l.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
}

// release reads a response's rate-limit headers into the bucket.
func (l *limiter) release(key string, h http.Header) {
	if h == nil {
		return
	}
	rem, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	after, err2 := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64)
	if err1 != nil || err2 != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prune()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{}
		l.buckets[key] = b
	}
	reset := l.clock.Now().Add(seconds(after))
	// Responses can arrive out of order: keep the most cautious view.
	if !b.known || reset.After(b.reset) || rem < b.remaining {
		b.remaining, b.reset, b.known = rem, reset, true
	}
}

// prune forgets buckets whose window has passed once there are many (every
// interaction has its own bucket), so the map does not grow without bound.
func (l *limiter) prune() {
	if len(l.buckets) < 1024 {
		return
	}
	now := l.clock.Now()
	for k, b := range l.buckets {
		if !b.reset.After(now) {
			delete(l.buckets, k)
		}
	}
}

// heard applies a cooldown another replica shared: its bucket (or, for
// globalBucket, every bucket) waits d.
func (l *limiter) heard(bucket string, d time.Duration) {
	l.limited(bucket, &rateLimitError{RetryAfter: d, Global: bucket == globalBucket})
}

// limited records a 429: the bucket, or every bucket, waits RetryAfter.
func (l *limiter) limited(key string, rl *rateLimitError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	until := l.clock.Now().Add(rl.RetryAfter)
	if rl.Global {
		if until.After(l.global) {
			l.global = until
		}
		return
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{}
		l.buckets[key] = b
	}
	b.known, b.remaining = true, 0
	if until.After(b.reset) {
		b.reset = until
	}
}

// Discord JSON error codes the bridge treats as permanent
// (discord-api-docs, topics/opcodes-and-status-codes.mdx).
const (
	codeUnknownChannel     = 10003
	codeUnknownMessage     = 10008
	codeUnknownUser        = 10013
	codeUnknownInteraction = 10062
	codeMissingAccess      = 50001
	codeCannotSendToUser   = 50007
	codeMissingPermissions = 50013
	codeInvalidFormBody    = 50035
	codeAlreadyAcked       = 40060
)

// classify turns a discordgo error into the engine's kinds: rate limits with
// their wait, permanent refusals with Discord's own message as the reason,
// everything else temporary. The bot token and any interaction or webhook
// token are taken out of the error first (see scrubber).
func (c *Channel) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	err = c.scrub.Err(err)
	var rl *rateLimitError
	if errors.As(err, &rl) {
		return &engine.SendError{Kind: engine.RateLimited, RetryAfter: rl.RetryAfter, Reason: "Discord: " + rl.Message, Err: fmt.Errorf("discord: %s: %w", op, err)}
	}
	var drl *discordgo.RateLimitError
	if errors.As(err, &drl) && drl.RateLimit != nil && drl.TooManyRequests != nil {
		return &engine.SendError{Kind: engine.RateLimited, RetryAfter: max(drl.RetryAfter, time.Second), Reason: "Discord: " + c.scrub.Text(drl.Message), Err: fmt.Errorf("discord: %s: %w", op, err)}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		reason := fmt.Sprintf("Discord: HTTP %d", re.Response.StatusCode)
		if re.Message != nil && re.Message.Message != "" {
			reason = c.scrub.Text(fmt.Sprintf("Discord: %s (code %d)", re.Message.Message, re.Message.Code))
		}
		kind := engine.Temporary
		switch s := re.Response.StatusCode; {
		case s >= 500, s == http.StatusRequestTimeout:
			kind = engine.Temporary
		case s >= 400:
			// 401 (bad token), 403 (missing access or permissions, DMs
			// closed), 404 (unknown channel, message, user), 400 (invalid
			// form body): repeating the same request cannot succeed.
			kind = engine.Permanent
		}
		return &engine.SendError{Kind: kind, Reason: reason, Err: fmt.Errorf("discord: %s: %w", op, err)}
	}
	return &engine.SendError{Kind: engine.Temporary, Reason: "Discord: " + err.Error(), Err: fmt.Errorf("discord: %s: %w", op, err)}
}

// restCode is the JSON error code of a Discord REST error, or 0.
func restCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

// restStatus is the HTTP status of a Discord REST error, or 0.
func restStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}
