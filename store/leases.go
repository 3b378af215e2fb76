package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/redis/go-redis/v9"
)

// The kinds of per-question leases the engine holds: LeaseDeliver while it
// posts a question, LeaseFinish while it edits the messages of one that
// ended.
const (
	LeaseDeliver = "deliver"
	LeaseFinish  = "finish"
	// LeaseTimer is held while a replica fires a reminder or an
	// escalation step of the question.
	LeaseTimer = "timer"
)

// PlaceLeaseKind is the kind of the delivery lease of place k of a
// question (ask-user.md §5): LeaseDeliver for the first place, so a
// question with one place holds the lease it always held, and
// "deliver<k>" for the others.
func PlaceLeaseKind(k int) string {
	if k == 0 {
		return LeaseDeliver
	}
	return LeaseDeliver + strconv.Itoa(k)
}

// questionLeaseKinds are the kinds whose lease names QuestionLease builds
// and the keys recognise.
var questionLeaseKinds = map[string]bool{LeaseDeliver: true, LeaseFinish: true, LeaseTimer: true}

// isQuestionLeaseKind reports whether kind is a per-question lease kind,
// a place's delivery lease included.
func isQuestionLeaseKind(kind string) bool {
	if questionLeaseKinds[kind] {
		return true
	}
	n, ok := strings.CutPrefix(kind, LeaseDeliver)
	if !ok || n == "" || len(n) > 2 {
		return false
	}
	k, err := strconv.Atoi(n)
	return err == nil && k > 0 && strconv.Itoa(k) == n
}

// QuestionLease is the name of the lease of the given kind (LeaseDeliver or
// LeaseFinish) on question id: "<kind>:<id>", e.g. "deliver:deploy-42".
// The store recognises these names and keeps the lease's keys (its hash,
// its fencing counter, a cursor of the same name) in the question's Redis
// Cluster slot, beside every other key of the question. A name of any other
// kind is an ordinary lease name, whose keys hash by the whole name.
func QuestionLease(kind, id string) string { return kind + ":" + id }

// questionLease splits a lease name QuestionLease built into its kind and
// question id; ok is false for any other name (telegram:poll:<bot>,
// discord:gateway:<app>).
func questionLease(name string) (kind, id string, ok bool) {
	kind, id, ok = strings.Cut(name, ":")
	if !ok || id == "" || !isQuestionLeaseKind(kind) {
		return "", "", false
	}
	return kind, id, true
}

// AcquireLease takes the named lease for holder if it is free or already
// held by holder, for ttl. Every take draws a new fencing token from the
// lease's counter, so a token held from before no longer renews, releases or
// writes a cursor. ok is false when another holder has it; lease then names
// that holder and its token. Safe to call concurrently: one caller wins.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (engine.Lease, bool, error) {
	if !validTag(name) || name == "" {
		return engine.Lease{}, false, fmt.Errorf("store: acquire lease: invalid name %q", name)
	}
	var v any
	var err error
	if kind, id, ok := fieldLease(name); ok {
		v, err = qleaseScript.run(ctx, s.cl(), []string{s.k.Question(id), s.k.lease(name)},
			"acquire", leaseField(kind), fenceField(kind), holder, "", s.opts.Clock.Now().UnixMilli(), ms(ttl))
	} else {
		fenceKey, fenceField := s.k.fenceOf(name)
		v, err = leaseAcquireScript.run(ctx, s.cl(), []string{s.k.lease(name), fenceKey}, holder, ms(ttl), ms(s.fenceTTL(ttl)), fenceField)
	}
	if err != nil {
		return engine.Lease{}, false, fmt.Errorf("store: acquire lease: %w", err)
	}
	o, rest, err := reply(v)
	if err != nil {
		return engine.Lease{}, false, fmt.Errorf("store: acquire lease: %w", err)
	}
	switch {
	case o == outDone && len(rest) == 1:
		token, err := strconv.ParseInt(fmt.Sprint(rest[0]), 10, 64)
		if err != nil {
			return engine.Lease{}, false, fmt.Errorf("store: acquire lease: token: %w", err)
		}
		return engine.Lease{Name: name, Holder: holder, Token: token}, true, nil
	case o == outKept && len(rest) == 2:
		other, _ := rest[0].(string)
		token, _ := strconv.ParseInt(fmt.Sprint(rest[1]), 10, 64)
		return engine.Lease{Name: name, Holder: other, Token: token}, false, nil
	case o == outMissing:
		// A per-question lease on a question that is gone: nothing to hold.
		return engine.Lease{Name: name}, false, nil
	}
	return engine.Lease{}, false, fmt.Errorf("store: acquire lease: unexpected reply %v", v)
}

// fenceTTL is how long the fencing counter of a lease name is kept after
// the lease was last taken or renewed: the lease's ttl plus the retention.
// A token can only be reused once the counter is gone, by then no holder of
// an old token is still running (its lease ended a retention ago), and a
// name used once (a per-question delivery lease) leaves nothing behind.
func (s *Store) fenceTTL(ttl time.Duration) time.Duration { return ttl + s.opts.Retention }

// RenewLease extends a held lease to ttl from now; ok is false when it was
// lost (expired, or taken again). Safe to repeat.
func (s *Store) RenewLease(ctx context.Context, lease engine.Lease, ttl time.Duration) (bool, error) {
	if !validTag(lease.Name) {
		return false, fmt.Errorf("store: renew lease: invalid name %q", lease.Name)
	}
	var ok bool
	var err error
	if kind, id, field := fieldLease(lease.Name); field {
		ok, err = s.qleaseCall(ctx, "renew", kind, id, lease, ttl)
	} else {
		fenceKey, fenceField := s.k.fenceOf(lease.Name)
		ok, err = s.leaseCall(ctx, leaseRenewScript, []string{s.k.lease(lease.Name), fenceKey},
			lease.Holder, strconv.FormatInt(lease.Token, 10), ms(ttl), ms(s.fenceTTL(ttl)), fenceField)
	}
	if err != nil {
		return false, fmt.Errorf("store: renew lease: %w", err)
	}
	return ok, nil
}

// ReleaseLease gives a held lease up. Releasing a lease that was lost or
// already released does nothing. Safe to repeat.
func (s *Store) ReleaseLease(ctx context.Context, lease engine.Lease) error {
	if !validTag(lease.Name) {
		return fmt.Errorf("store: release lease: invalid name %q", lease.Name)
	}
	var err error
	if kind, id, field := fieldLease(lease.Name); field {
		_, err = s.qleaseCall(ctx, "release", kind, id, lease, 0)
	} else {
		_, err = s.leaseCall(ctx, leaseReleaseScript, []string{s.k.lease(lease.Name)},
			lease.Holder, strconv.FormatInt(lease.Token, 10))
	}
	if err != nil {
		return fmt.Errorf("store: release lease: %w", err)
	}
	return nil
}

// qleaseCall renews or releases (op) the delivery lease of kind on
// question id, kept in the question hash (qlease.lua).
func (s *Store) qleaseCall(ctx context.Context, op, kind, id string, lease engine.Lease, ttl time.Duration) (bool, error) {
	return s.leaseCall(ctx, qleaseScript, []string{s.k.Question(id), s.k.lease(lease.Name)},
		op, leaseField(kind), fenceField(kind), lease.Holder, strconv.FormatInt(lease.Token, 10),
		s.opts.Clock.Now().UnixMilli(), ms(ttl))
}

// Cursor reads a named position. Safe for concurrent use.
func (s *Store) Cursor(ctx context.Context, name string) (int64, bool, error) {
	if !validTag(name) {
		return 0, false, fmt.Errorf("store: cursor: invalid name %q", name)
	}
	v, err := s.cl().Get(ctx, s.k.cursor(name)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: cursor: %w", err)
	}
	return v, true, nil
}

// SetCursor writes the position called name, only while lease is still the
// current holder of the lease of the same name (lease.Name must equal name:
// the cursor lives in that lease's hash slot so one script can check the
// token and write). ok is false when the lease was lost. Safe to repeat.
func (s *Store) SetCursor(ctx context.Context, name string, value int64, lease engine.Lease) (bool, error) {
	if lease.Name != name {
		return false, fmt.Errorf("store: set cursor %q: fenced by lease %q; a cursor is fenced by the lease of its own name", name, lease.Name)
	}
	if !validTag(name) {
		return false, fmt.Errorf("store: set cursor: invalid name %q", name)
	}
	ok, err := s.leaseCall(ctx, cursorSetScript, []string{s.k.lease(name), s.k.cursor(name)},
		lease.Holder, strconv.FormatInt(lease.Token, 10), strconv.FormatInt(value, 10))
	if err != nil {
		return false, fmt.Errorf("store: set cursor: %w", err)
	}
	return ok, nil
}

// TextCursor reads a named text position (a Matrix sync's since token).
// Safe for concurrent use.
func (s *Store) TextCursor(ctx context.Context, name string) (string, bool, error) {
	if !validTag(name) {
		return "", false, fmt.Errorf("store: text cursor: invalid name %q", name)
	}
	v, err := s.cl().Get(ctx, s.k.textCursor(name)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: text cursor: %w", err)
	}
	return v, true, nil
}

// SetTextCursor writes the text position called name, fenced as SetCursor
// is: only while lease (whose Name must equal name) is still the current
// holder of its lease. ok is false when the lease was lost. Safe to
// repeat.
func (s *Store) SetTextCursor(ctx context.Context, name, value string, lease engine.Lease) (bool, error) {
	if lease.Name != name {
		return false, fmt.Errorf("store: set text cursor %q: fenced by lease %q; a cursor is fenced by the lease of its own name", name, lease.Name)
	}
	if !validTag(name) {
		return false, fmt.Errorf("store: set text cursor: invalid name %q", name)
	}
	ok, err := s.leaseCall(ctx, textCursorSetScript, []string{s.k.lease(name), s.k.textCursor(name)},
		lease.Holder, strconv.FormatInt(lease.Token, 10), value)
	if err != nil {
		return false, fmt.Errorf("store: set text cursor: %w", err)
	}
	return ok, nil
}

// leaseCall runs a lease script whose reply is 1 (done) or 0 (refused).
func (s *Store) leaseCall(ctx context.Context, sc *script, keys []string, args ...any) (bool, error) {
	v, err := sc.run(ctx, s.cl(), keys, args...)
	if err != nil {
		return false, err
	}
	o, _, err := reply(v)
	if err != nil {
		return false, err
	}
	return o == outDone, nil
}
