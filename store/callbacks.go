package store

import (
	"context"
	_ "embed" // the callback scripts
	"fmt"
	"strconv"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/redis/go-redis/v9"
)

// The result callbacks' queue (engine.CallbackQueue): a registration
// hash per question, in the question's slot, and one due-set shared by all.
//
//	<prefix>callback:{<id>}  HASH  url, state (waiting | delivered | failed),
//	                               registered, attempts, body and ended (the
//	                               result JSON and end time, copied at the
//	                               first attempt), error, last, done; lives
//	                               until the callback can no longer be made,
//	                               then a retention after it was
//	<prefix>callbacks        ZSET  id → when it is next due (unix ms); a
//	                               claimed id's score is its claim's end
//
// The question hash shows the state in its field `callback` (delivered,
// retrying or failed) once an attempt was made. The scripts touch one slot
// each: the hash scripts the question's, the claim script the due-set's;
// the due-set is written next to them by idempotent commands (ZADD LT,
// ZADD XX, ZREM), and a crash between the two leaves a member due (it is
// looked at again) or a registration whose member is added again by the
// next registration of the same request.
var (
	//go:embed lua/callback_register.lua
	callbackRegisterSrc string
	//go:embed lua/callback_claim.lua
	callbackClaimSrc string
	//go:embed lua/callback_begin.lua
	callbackBeginSrc string
	//go:embed lua/callback_finish.lua
	callbackFinishSrc string

	callbackRegisterScript = newScript(callbackRegisterSrc)
	callbackClaimScript    = newScript(callbackClaimSrc)
	callbackBeginScript    = newScript(callbackBeginSrc)
	callbackFinishScript   = newScript(callbackFinishSrc)
)

// The store keeps the bridge's callbacks.
var _ engine.CallbackQueue = (*Store)(nil)

// callbackMissingGrace is how long a registration waits for its question
// to be stored (it is registered just before the create or the refusal)
// before it is dropped as one whose request never came to be handled.
const callbackMissingGrace = 10 * time.Minute

// callback is the HASH of a question's result callback (internal, in the
// question's slot).
func (k keys) callback(id string) string { return k.prefix + "callback:{" + id + "}" }

// callbacks is the ZSET of callback ids scored by when each is next due,
// unix ms (internal, shared by all questions).
func (k keys) callbacks() string { return k.prefix + "callbacks" }

// RegisterCallbacks registers each question's callback (callback_register.lua
// on its slot) and adds it to the due-set at its Due, or keeps an earlier
// due time (ZADD LT), all in one pipeline. A registration that exists keeps
// its URL and state. Safe to repeat and to call concurrently.
func (s *Store) RegisterCallbacks(ctx context.Context, regs ...engine.CallbackRegistration) error {
	if len(regs) == 0 {
		return nil
	}
	pipe := s.cl().Pipeline()
	calls := make([]*queued, len(regs))
	adds := make([]*redis.IntCmd, len(regs))
	for i, r := range regs {
		if err := checkID(r.ID); err != nil {
			return fmt.Errorf("store: register callback: %w", err)
		}
		calls[i] = callbackRegisterScript.queue(ctx, pipe, []string{s.k.callback(r.ID)},
			r.URL, r.Now.UnixMilli(), ms(r.Keep+s.opts.Retention))
		adds[i] = pipe.ZAddArgs(ctx, s.k.callbacks(), redis.ZAddArgs{LT: true, Members: []redis.Z{{Score: float64(r.Due.UnixMilli()), Member: r.ID}}})
	}
	_, errs := runQueued(ctx, s.rdb, pipe, calls)
	for i := range regs {
		if err := cmpErr(errs[i], adds[i].Err()); err != nil {
			return fmt.Errorf("store: register callback: %w", err)
		}
	}
	return nil
}

// NudgeCallbacks moves the due time of the registered ids to at when that
// is earlier (ZADD XX LT: an id not in the due-set stays out). Safe to
// repeat.
func (s *Store) NudgeCallbacks(ctx context.Context, at time.Time, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	zs := make([]redis.Z, len(ids))
	for i, id := range ids {
		zs[i] = redis.Z{Score: float64(at.UnixMilli()), Member: id}
	}
	if err := s.cl().ZAddArgs(ctx, s.k.callbacks(), redis.ZAddArgs{XX: true, LT: true, Members: zs}).Err(); err != nil {
		return fmt.Errorf("store: nudge callbacks: %w", err)
	}
	return nil
}

// ClaimCallbacks takes up to max ids due at or before now, moving each
// one's due time to now+lease in the same script (callback_claim.lua), so
// each is handed to one caller. Safe to call concurrently from any number
// of replicas.
func (s *Store) ClaimCallbacks(ctx context.Context, now time.Time, lease time.Duration, max int) ([]string, error) {
	if max < 1 {
		return nil, nil
	}
	v, err := callbackClaimScript.run(ctx, s.cl(), []string{s.k.callbacks()}, now.UnixMilli(), now.Add(lease).UnixMilli(), max)
	if err != nil {
		return nil, fmt.Errorf("store: claim callbacks: %w", err)
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("store: claim callbacks: unexpected reply %v", v)
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		if id, ok := it.(string); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// BeginCallback looks at callback id in its question's slot
// (callback_begin.lua) and starts its next attempt when the question has
// ended; see engine.CallbackQueue. Not safe to repeat: each call that
// returns CallbackPost counts an attempt, and holds off any other for
// hold, or until the attempt is recorded (FinishCallback).
func (s *Store) BeginCallback(ctx context.Context, id string, now time.Time, giveUpAfter, hold time.Duration) (engine.CallbackAttempt, error) {
	if err := checkID(id); err != nil {
		return engine.CallbackAttempt{}, fmt.Errorf("store: begin callback: %w", err)
	}
	v, err := callbackBeginScript.run(ctx, s.cl(), []string{s.k.callback(id), s.k.Question(id)},
		now.UnixMilli(), ms(giveUpAfter), ms(s.opts.Retention), ms(callbackMissingGrace), ms(hold))
	if err != nil {
		return engine.CallbackAttempt{}, fmt.Errorf("store: begin callback: %w", err)
	}
	a, err := callbackAttempt(id, v)
	if err != nil {
		return engine.CallbackAttempt{}, fmt.Errorf("store: begin callback: %w", err)
	}
	return a, nil
}

// callbackAttempt reads the reply of callback_begin.lua: the one place its
// return codes are mapped.
func callbackAttempt(id string, v any) (engine.CallbackAttempt, error) {
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return engine.CallbackAttempt{}, fmt.Errorf("unexpected reply %v", v)
	}
	code, _ := r[0].(int64)
	a := engine.CallbackAttempt{ID: id}
	switch {
	case (code == 0 || code == -1) && len(r) == 1:
		a.Step = engine.CallbackDone
	case code == 2 && len(r) == 2:
		a.Step = engine.CallbackWait
		if deadline, _ := r[1].(int64); deadline > 0 {
			a.Until = time.UnixMilli(deadline)
		}
	case code == 4 && len(r) == 2:
		a.Step = engine.CallbackBusy
		if until, _ := r[1].(int64); until > 0 {
			a.Until = time.UnixMilli(until)
		}
	case code == 3 && len(r) == 2:
		a.Step = engine.CallbackGaveUp
		n, _ := r[1].(int64)
		a.Attempt = int(n)
	case code == 1 && len(r) == 5:
		n, _ := r[1].(int64)
		url, _ := r[2].(string)
		body, _ := r[3].(string)
		ended, _ := r[4].(int64)
		a.Step, a.Attempt, a.URL, a.Body, a.Ended = engine.CallbackPost, int(n), url, []byte(body), time.UnixMilli(ended)
	default:
		return engine.CallbackAttempt{}, fmt.Errorf("unexpected reply %v", v)
	}
	return a, nil
}

// FinishCallback records an attempt's outcome in the question's slot
// (callback_finish.lua, fenced by the attempt number), then takes a
// delivered or given-up callback out of the due-set, or makes a retry due
// at f.Next. ok is false, and the due-set is left alone, when the attempt
// was not the latest. Safe to repeat.
func (s *Store) FinishCallback(ctx context.Context, f engine.CallbackFinish) (bool, error) {
	if err := checkID(f.ID); err != nil {
		return false, fmt.Errorf("store: finish callback: %w", err)
	}
	switch f.State {
	case engine.CallbackDelivered, engine.CallbackRetrying, engine.CallbackFailed:
	default:
		return false, fmt.Errorf("store: finish callback: unknown state %q", f.State)
	}
	v, err := callbackFinishScript.run(ctx, s.cl(), []string{s.k.callback(f.ID), s.k.Question(f.ID)},
		strconv.Itoa(f.Attempt), string(f.State), f.Error, f.Now.UnixMilli(), ms(s.opts.Retention))
	if err != nil {
		return false, fmt.Errorf("store: finish callback: %w", err)
	}
	if v != int64(1) {
		return false, nil
	}
	if f.State == engine.CallbackRetrying {
		err = s.ScheduleCallback(ctx, f.ID, f.Next)
	} else {
		err = s.DropCallback(ctx, f.ID)
	}
	return true, err
}

// ScheduleCallback makes callback id due at at, if it is in the due-set
// (ZADD XX). Safe to repeat.
func (s *Store) ScheduleCallback(ctx context.Context, id string, at time.Time) error {
	if err := s.cl().ZAddXX(ctx, s.k.callbacks(), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Err(); err != nil {
		return fmt.Errorf("store: schedule callback: %w", err)
	}
	return nil
}

// DropCallback takes callback id out of the due-set. Safe to repeat.
func (s *Store) DropCallback(ctx context.Context, id string) error {
	if err := s.cl().ZRem(ctx, s.k.callbacks(), id).Err(); err != nil {
		return fmt.Errorf("store: drop callback: %w", err)
	}
	return nil
}
