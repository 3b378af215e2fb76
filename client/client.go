package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// DefaultPrefix is the key prefix of the protocol, the bridge's default
// ASKUSER_REDIS_PREFIX.
const DefaultPrefix = askbridge.DefaultPrefix

// Defaults of Options.
const (
	DefaultPollTimeout   = 2 * time.Second
	DefaultCancelGrace   = 10 * time.Second
	DefaultResultGrace   = time.Minute
	DefaultNotTakenAfter = 10 * time.Second
)

// Options configure a Client. The zero value talks to a bridge with the
// default prefix.
type Options struct {
	// Prefix of every key: the bridge's ASKUSER_REDIS_PREFIX (default
	// "askuser:"). No braces, spaces or control characters; at most 64
	// bytes.
	Prefix string
	// PollTimeout is how long one BLPOP of Wait (and one XREAD of Watch)
	// blocks: whole seconds, at least one (default 2s). A cancelled
	// context is noticed between rounds, so within about this long.
	PollTimeout time.Duration
	// CancelGrace is how long Ask and CancelAndWait wait for the result of
	// a question they cancelled (default 10s): a bridge ends it within
	// moments.
	CancelGrace time.Duration
	// ResultGrace is how long past a question's deadline Wait goes on
	// waiting before it gives up with ErrNoResult (default 1 minute). A
	// running bridge ends a question within a second of its deadline.
	ResultGrace time.Duration
	// NotTaken, when set, is called once by Wait (and Ask) when no bridge
	// has taken the request NotTakenAfter after the wait began: its
	// question hash does not exist yet. The request stays in the stream for
	// a bridge started later; a command-line tool tells its user.
	NotTaken func(id string)
	// NotTakenAfter is how long Wait waits for a bridge to take the
	// request before it calls NotTaken (default 10s).
	NotTakenAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = DefaultPollTimeout
	}
	// BLPOP takes whole seconds (go-redis truncates, and turns less than one
	// into one with a warning in its log).
	o.PollTimeout = max(o.PollTimeout.Truncate(time.Second), time.Second)
	if o.CancelGrace <= 0 {
		o.CancelGrace = DefaultCancelGrace
	}
	if o.ResultGrace <= 0 {
		o.ResultGrace = DefaultResultGrace
	}
	if o.NotTakenAfter <= 0 {
		o.NotTakenAfter = DefaultNotTakenAfter
	}
	return o
}

// checkPrefix says what is wrong with a prefix, as the bridge's
// configuration would.
func checkPrefix(p string) error {
	if err := askbridge.CheckPrefix(p); err != nil {
		return fmt.Errorf("client: prefix %w; use the bridge's ASKUSER_REDIS_PREFIX", err)
	}
	return nil
}

// Client asks questions through a bridge. Make one with New; it is safe
// for concurrent use.
type Client struct {
	rdb  redis.UniversalClient
	opts Options
	keys askbridge.Keys
	// bad is the problem with the options, returned by every call.
	bad error
}

// New returns a client that talks to the bridges sharing rdb under
// opts.Prefix. It connects nothing; a bad prefix is reported by every
// call.
func New(rdb redis.UniversalClient, opts Options) *Client {
	opts = opts.withDefaults()
	return &Client{rdb: rdb, opts: opts, keys: askbridge.Keys{Prefix: opts.Prefix}, bad: checkPrefix(opts.Prefix)}
}

// checkID says what is wrong with a question id an agent passes in.
func (c *Client) checkID(id string) error {
	if c.bad != nil {
		return c.bad
	}
	if !askbridge.ValidRequestID(id) {
		return fmt.Errorf("client: %q is not a question id: 1 to 128 letters, digits, '_', '.', ':' or '-', starting with a letter or digit", id)
	}
	return nil
}

// Ask pushes a request (Push), waits for its result (Wait) and returns it.
// A request without an id gets one (NewID); a zero TimeoutSeconds means
// the bridge's default, 900 seconds.
//
// When ctx ends first, Ask cancels the question and returns how it ended
// (cancelled, or answered if the person was quicker) if that arrives
// within Options.CancelGrace, else ctx's error. When the bridge refused the
// request, Ask returns its result together with a *RefusedError. When no
// bridge ends the question by its deadline plus Options.ResultGrace, Ask
// cancels it and returns an error wrapping ErrNoResult. Any other error is
// trouble with Redis.
func (c *Client) Ask(ctx context.Context, req askbridge.Request) (Result, error) {
	id, err := c.Push(ctx, req)
	if err != nil {
		return Result{}, err
	}
	secs := req.TimeoutSeconds
	if secs == 0 {
		secs = askbridge.DefaultTimeout
	}
	secs = min(max(secs, askbridge.MinTimeout), askbridge.MaxTimeout)
	giveUp := time.Now().Add(time.Duration(secs)*time.Second + c.opts.ResultGrace)
	res, err := c.wait(ctx, id, giveUp, nil)
	switch {
	case err == nil, errors.As(err, new(*RefusedError)):
		return res, err
	case errors.Is(err, ErrNoResult):
		// A bridge started later would ask a person no one waits for.
		if cerr := c.Cancel(context.WithoutCancel(ctx), id); cerr != nil {
			return Result{}, errors.Join(err, cerr)
		}
		return Result{}, err
	case ctx.Err() != nil:
		res, cerr := c.CancelAndWait(context.WithoutCancel(ctx), id)
		if cerr != nil && res.Status == "" {
			return Result{}, ctx.Err()
		}
		return res, cerr
	}
	return Result{}, err
}

// Push adds a request to the requests stream and returns its question id.
// A request without an id gets a new one (NewID) for this push; go-redis
// may repeat the XADD after a network error, and the bridge ignores an id
// it knows (pending, or ended within its result retention), so the
// question is asked once. To retry a push of your own, set the id once
// (req.ID = NewID()) and push that request each time. A zero TimeoutSeconds
// is sent as the bridge's default, 900 seconds. The bridge validates the
// request; an invalid one gets an error result, which Wait returns as a
// *RefusedError. Push blocks on one XADD.
func (c *Client) Push(ctx context.Context, req askbridge.Request) (string, error) {
	if req.ID == "" {
		req.ID = NewID()
	}
	if err := c.checkID(req.ID); err != nil {
		return "", fmt.Errorf("client: push: request id: %w", err)
	}
	if req.TimeoutSeconds == 0 {
		req.TimeoutSeconds = askbridge.DefaultTimeout
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("client: push: encode the request: %w", err)
	}
	if _, err := c.xadd(ctx, "ask", string(body)); err != nil {
		return "", fmt.Errorf("client: push %s: %w", req.ID, err)
	}
	return req.ID, nil
}

// PushJSON adds a request given as JSON to the requests stream exactly as
// it is, and returns the id the bridge answers it under: the request's own
// "id" when it is a valid one, else the stream entry id (the protocol's
// rule; an invalid request is refused under that id). Give the request an
// id (NewID) to make a retried push safe. It blocks on one XADD.
func (c *Client) PushJSON(ctx context.Context, request []byte) (string, error) {
	if c.bad != nil {
		return "", c.bad
	}
	entry, err := c.xadd(ctx, "ask", string(request))
	if err != nil {
		return "", fmt.Errorf("client: push: %w", err)
	}
	if id := askbridge.RequestIDOf(request); askbridge.ValidRequestID(id) {
		return id, nil
	}
	return entry, nil
}

// Cancel asks the bridge to end question id as cancelled (XADD cancel):
// a pending question ends with no_answer, reason cancelled, and its
// messages say so. Cancelling an ended or unknown question does nothing.
// It does not wait; CancelAndWait does. Safe to repeat.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if err := c.checkID(id); err != nil {
		return err
	}
	if _, err := c.xadd(ctx, "cancel", id); err != nil {
		return fmt.Errorf("client: cancel %s: %w", id, err)
	}
	return nil
}

// CancelAndWait cancels question id and waits up to Options.CancelGrace
// (or until ctx ends) for its result: the cancelled one, or the one that
// ended the question first (an answer that came just before). It is Wait
// after Cancel, with Wait's results and errors; when nothing arrives in
// time, the error says so.
func (c *Client) CancelAndWait(ctx context.Context, id string) (Result, error) {
	if err := c.Cancel(ctx, id); err != nil {
		return Result{}, err
	}
	gctx, stop := context.WithTimeout(ctx, c.opts.CancelGrace)
	defer stop()
	res, err := c.wait(gctx, id, time.Time{}, nil)
	if err != nil && gctx.Err() != nil && ctx.Err() == nil {
		return Result{}, fmt.Errorf("client: cancelled %s, but no result came within %s: is a bridge running on this Redis, with the same ASKUSER_REDIS_PREFIX?", id, c.opts.CancelGrace)
	}
	return res, err
}

// Wait waits for the one result of question id and returns it, taking it
// off its result list. It long-polls with BLPOP rounds of
// Options.PollTimeout and returns ctx's error when ctx ends first, leaving
// the question open (Ask, and CancelAndWait, cancel it). A result Redis
// handed over is never dropped, even when ctx ends at that moment.
//
// When the bridge refused the request, Wait returns its result together
// with a *RefusedError. When the question has ended but its result list is
// empty (another waiter took the result), Wait returns the result stored
// in the question hash. When the question is still pending
// Options.ResultGrace after its deadline, Wait gives up with an error
// wrapping ErrNoResult. Wait is safe to call from several goroutines, but
// only one of them gets the result from the list.
func (c *Client) Wait(ctx context.Context, id string) (Result, error) {
	return c.wait(ctx, id, time.Time{}, nil)
}

// WaitNotified is Wait for a program that waits for many questions at
// once: it holds no Redis connection while it waits. Instead of BLPOP
// rounds it takes the result (LPOP) and reads the question's status
// whenever notify delivers, and at least every `every` (at least
// Options.PollTimeout). The caller feeds notify from one Watch of the
// events stream shared by all its waits, with a value (non-blocking, into
// a buffer of one) for every event of question id; a notification that
// never comes (a replica died between a result and its event) costs at
// most `every`. Its results and errors are Wait's.
func (c *Client) WaitNotified(ctx context.Context, id string, notify <-chan struct{}, every time.Duration) (Result, error) {
	return c.wait(ctx, id, time.Time{}, &notified{ch: notify, every: max(every, c.opts.PollTimeout)})
}

// notified is how WaitNotified waits between two looks at a question.
type notified struct {
	ch    <-chan struct{}
	every time.Duration
}

// pause waits for a notification, n.every, or ctx's end.
func (n *notified) pause(ctx context.Context) {
	t := time.NewTimer(n.every)
	defer t.Stop()
	select {
	case <-n.ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// wait is Wait that also gives up at giveUp (when set) if no bridge has
// taken the request by then; with n it is WaitNotified.
func (c *Client) wait(ctx context.Context, id string, giveUp time.Time, n *notified) (Result, error) {
	if err := c.checkID(id); err != nil {
		return Result{}, err
	}
	// Redis calls run without ctx's cancellation: a BLPOP cut short after
	// Redis popped the result would lose it. Rounds are short instead.
	bg := context.WithoutCancel(ctx)
	start := time.Now()
	seen, told := false, false
	block := c.opts.PollTimeout
	if n != nil {
		block = 0
	}
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		res, ok, err := c.poll(bg, id, block)
		if err != nil {
			return Result{}, err
		}
		if ok {
			return res, res.Err()
		}
		// Nothing yet: see where the question stands.
		v, err := c.rdb.HMGet(bg, c.keys.Question(id), "status", "deadline", "result").Result()
		if err != nil {
			return Result{}, fmt.Errorf("client: wait for %s: read the question: %w", id, err)
		}
		status, _ := v[0].(string)
		deadline, _ := v[1].(string)
		stored, _ := v[2].(string)
		now := time.Now()
		switch {
		case status == "" && seen:
			return Result{}, fmt.Errorf("client: wait for %s: the question is gone from Redis (its result retention passed) and no result is waiting", id)
		case status == "":
			if !told && c.opts.NotTaken != nil && now.Sub(start) >= c.opts.NotTakenAfter {
				told = true
				c.opts.NotTaken(id)
			}
			if !giveUp.IsZero() && now.After(giveUp) {
				return Result{}, fmt.Errorf("client: %s: no bridge took the request: %w", id, ErrNoResult)
			}
		case status == string(askbridge.StatusPending):
			seen = true
			if d := unixMilli(deadline); !d.IsZero() && now.After(d.Add(c.opts.ResultGrace)) {
				return Result{}, fmt.Errorf("client: %s: deadline %s: %w", id, d.Format(time.RFC3339), ErrNoResult)
			}
		default:
			// Ended: the result went onto the list in the same step, so
			// it is there now unless someone took it.
			if res, ok, err := c.poll(bg, id, 0); err != nil || ok {
				if err != nil {
					return Result{}, err
				}
				return res, res.Err()
			}
			if stored == "" {
				return Result{}, fmt.Errorf("client: wait for %s: the question ended as %s but holds no result", id, status)
			}
			res, err := decodeResult(id, stored)
			if err != nil {
				return Result{}, err
			}
			return res, res.Err()
		}
		if n != nil {
			n.pause(ctx)
		}
	}
}

// Poll takes the result of question id if one is waiting, blocking up to
// timeout (whole seconds; 0: not at all) for one to arrive: ok is false
// when none did. It is one BLPOP (LPOP for 0), for agents that run their
// own loop; unlike Wait it never looks at the question hash. The result of
// a refused request comes back like any other (see Result.Err).
func (c *Client) Poll(ctx context.Context, id string, timeout time.Duration) (res Result, ok bool, err error) {
	if err := c.checkID(id); err != nil {
		return Result{}, false, err
	}
	return c.poll(ctx, id, timeout)
}

func (c *Client) poll(ctx context.Context, id string, timeout time.Duration) (Result, bool, error) {
	var raw string
	var err error
	if timeout <= 0 {
		raw, err = c.rdb.LPop(ctx, c.keys.Result(id)).Result()
	} else {
		var v []string
		v, err = c.rdb.BLPop(ctx, timeout, c.keys.Result(id)).Result()
		if err == nil {
			raw = v[1]
		}
	}
	switch {
	case errors.Is(err, redis.Nil):
		return Result{}, false, nil
	case err != nil:
		return Result{}, false, fmt.Errorf("client: wait for %s: %w", id, err)
	}
	res, err := decodeResult(id, raw)
	if err != nil {
		return Result{}, false, err
	}
	return res, true, nil
}

// Status reads question id from its question hash without taking
// anything: found is false when no bridge has taken the request yet, or
// the question's retention has passed. It blocks on one HGETALL.
func (c *Client) Status(ctx context.Context, id string) (q Question, found bool, err error) {
	if err := c.checkID(id); err != nil {
		return Question{}, false, err
	}
	h, err := c.rdb.HGetAll(ctx, c.keys.Question(id)).Result()
	if err != nil {
		return Question{}, false, fmt.Errorf("client: status of %s: %w", id, err)
	}
	if len(h) == 0 {
		return Question{}, false, nil
	}
	q, err = questionFrom(id, h)
	if err != nil {
		return Question{}, false, err
	}
	return q, true, nil
}

// xadd appends one entry of a single field to the requests stream and
// returns its stream id.
func (c *Client) xadd(ctx context.Context, field, value string) (string, error) {
	return c.rdb.XAdd(ctx, &redis.XAddArgs{Stream: c.keys.Requests(), Values: []string{field, value}}).Result()
}

// Revoke asks the bridge to revoke the standing answer of agent ("" for
// requests without one) under key (ask-user.md §9): it pushes a revoke
// entry (XADD revoke) and returns its stream id. The bridge publishes a
// revoked event when one stood, and a rejected event with this id when
// the entry is malformed. It does not wait. Safe to repeat: a repeat
// finds none standing.
func (c *Client) Revoke(ctx context.Context, agent, key string) (string, error) {
	if c.bad != nil {
		return "", c.bad
	}
	b, err := json.Marshal(askbridge.RevokeEntry{Agent: agent, Key: key})
	if err != nil {
		return "", fmt.Errorf("client: revoke %s: %w", key, err)
	}
	id, err := c.xadd(ctx, "revoke", string(b))
	if err != nil {
		return "", fmt.Errorf("client: revoke %s: %w", key, err)
	}
	return id, nil
}
