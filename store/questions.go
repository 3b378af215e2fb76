package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// Hash fields of the question hash. The first five are public (protocol).
const (
	fieldStatus    = "status"
	fieldResult    = "result"
	fieldRequest   = "request"
	fieldCreated   = "created"
	fieldDeadline  = "deadline"
	fieldTarget    = "target"
	fieldAnswerers = "answerers"
	fieldEnded     = "ended"
	// fieldEntry is the requests stream entry of the ask that created the
	// question (Replay tells a new ask from the same one handled again).
	fieldEntry = "entry"
	// fieldMessages holds the MessageRef JSON of every message that showed
	// the question, in the order they were added, joined by newlines;
	// written empty by Create. A question without it was stored before it
	// existed and keeps its messages in the legacy list (keys.messages).
	fieldMessages = "msgs"
)

const (
	// defaultSweepCount is the batch of Sweep when max < 1.
	defaultSweepCount = 100
	// unknownGrace is how long an index member whose question hash does not
	// exist is left alone: Create writes the deadlines zset and the hash in
	// one pipeline, and on a Redis Cluster their order is not guaranteed, so
	// a member may briefly precede its hash. Older ones are leftovers (the
	// hash expired, or a Create failed half way and was never repeated).
	unknownGrace = time.Minute
)

// ErrTooManyMessages is returned by AddMessage when a question already has
// Options.MaxMessages messages recorded.
var ErrTooManyMessages = errors.New("store: too many messages recorded for the question")

// Create stores a new pending question and schedules its deadline, in one
// round trip: a pipeline of ZADD NX into the deadlines zset and the create
// script on the question's slot. It is idempotent on the id: when the id is
// already known it changes nothing in the question and returns it with
// created false, and repairs the deadline a failed earlier call may have
// left missing or a repeat may have added (see doc.go). Safe to repeat and
// to call concurrently.
func (s *Store) Create(ctx context.Context, q engine.NewQuestion) (bool, engine.Record, error) {
	created, existing, _, err := s.CreateHolding(ctx, q, "", 0)
	return created, existing, err
}

// CreateHolding is Create that, when it creates the question and holder is
// set, also takes the question's delivery lease (QuestionLease(LeaseDeliver,
// id)) for holder for ttl, in the same script: the lease a replica then
// renews and releases as if AcquireLease had taken it. A question that
// already existed comes back with no lease (Token 0). Safe to repeat and
// to call concurrently.
func (s *Store) CreateHolding(ctx context.Context, q engine.NewQuestion, holder string, ttl time.Duration) (bool, engine.Record, engine.Lease, error) {
	created, existing, lease, err := s.create(ctx, q, holder, ttl)
	if err != nil {
		return false, existing, engine.Lease{}, fmt.Errorf("store: create: %w", err)
	}
	return created, existing, lease, nil
}

func (s *Store) create(ctx context.Context, q engine.NewQuestion, holder string, leaseTTL time.Duration) (bool, engine.Record, engine.Lease, error) {
	pipe := s.cl().Pipeline()
	op := s.queueCreate(ctx, pipe, q, holder, leaseTTL)
	if op.err != nil {
		return false, engine.Record{}, engine.Lease{}, op.err
	}
	vals, errs := runQueued(ctx, s.rdb, pipe, []*queued{op.call})
	return s.createDone(ctx, op, vals[0], errs[0])
}

// CreateHoldingBatch is CreateHolding for many questions in one round trip
// (one pipeline; on a Cluster, one per node): each call gets its own
// outcome in its Created, Existing, Lease and Err, as CreateHolding would
// have returned them. A question that already existed costs a second
// round trip of its own (its deadline is set right).
func (s *Store) CreateHoldingBatch(ctx context.Context, calls []*engine.CreateCall) {
	pipe := s.cl().Pipeline()
	ops := make([]*createOp, len(calls))
	var queuedCalls []*queued
	for i, c := range calls {
		ops[i] = s.queueCreate(ctx, pipe, c.Question, c.Holder, c.TTL)
		if ops[i].err == nil {
			queuedCalls = append(queuedCalls, ops[i].call)
		}
	}
	vals, errs := runQueued(ctx, s.rdb, pipe, queuedCalls)
	j := 0
	for i, op := range ops {
		c := calls[i]
		if op.err != nil {
			c.Err = fmt.Errorf("store: create: %w", op.err)
			continue
		}
		c.Created, c.Existing, c.Lease, c.Err = s.createDone(ctx, op, vals[j], errs[j])
		if c.Err != nil {
			c.Err = fmt.Errorf("store: create: %w", c.Err)
		}
		j++
	}
}

// createOp is one create queued in a pipeline.
type createOp struct {
	q           engine.NewQuestion
	holder      string
	err         error // the question cannot be stored: nothing was queued
	addDeadline *redis.IntCmd
	// index are the index writes of the messages shown at create.
	index []redis.Cmder
	call  *queued
}

// queueCreate queues the commands of one create in pipe: the deadline and
// chat index writes, and create.lua.
func (s *Store) queueCreate(ctx context.Context, pipe redis.Pipeliner, q engine.NewQuestion, holder string, leaseTTL time.Duration) *createOp {
	op := &createOp{q: q, holder: holder}
	if err := checkID(q.ID); err != nil {
		op.err = err
		return op
	}
	if q.Created.IsZero() || q.Deadline.IsZero() {
		op.err = errors.New("created and deadline must be set")
		return op
	}
	request, err := json.Marshal(q.Request)
	if err != nil {
		op.err = fmt.Errorf("encode request: %w", err)
		return op
	}
	fields := []any{
		fieldStatus, string(askbridge.StatusPending),
		fieldRequest, string(request),
		fieldCreated, q.Created.UnixMilli(),
		fieldDeadline, q.Deadline.UnixMilli(),
		fieldTarget, q.Target.String(),
	}
	premade, msgs, err := s.shownMessages(q.Shown)
	if err != nil {
		op.err = err
		return op
	}
	fields = append(fields, fieldMessages, msgs)
	if q.Entry != "" {
		fields = append(fields, fieldEntry, q.Entry)
	}
	if len(q.Answerers) > 0 {
		a, err := json.Marshal(q.Answerers)
		if err != nil {
			op.err = fmt.Errorf("encode answerers: %w", err)
			return op
		}
		fields = append(fields, fieldAnswerers, string(a))
	}
	if fields, err = placesFields(q, fields); err != nil {
		op.err = err
		return op
	}
	ttl := max(q.Deadline.Sub(q.Created), 0) + s.opts.Retention

	op.addDeadline = pipe.ZAddNX(ctx, s.k.deadlines(), redis.Z{Score: float64(q.Deadline.UnixMilli()), Member: q.ID})
	// Indexed in its chat from the start, not only once a message is
	// recorded: a tap that comes before the record finds it there.
	// Every place shown at once is indexed; an escalation step's places
	// are indexed as their messages are recorded.
	shown := []askbridge.Target{q.Target}
	for _, p := range q.Places {
		if p.Step == 0 && p.Target != q.Target {
			shown = append(shown, p.Target)
		}
	}
	for _, t := range shown {
		if t.Platform != "" && t.Chat != "" {
			chat := s.k.chat(t.Platform, t.Chat)
			pipe.ZAddNX(ctx, chat, redis.Z{Score: float64(q.Created.UnixMilli()), Member: q.ID})
			pipe.PExpire(ctx, chat, s.indexTTL())
		}
	}
	for _, ref := range premade {
		op.index = append(op.index, s.queueIndex(ctx, pipe, q.ID, ref, q.Target.String(), q.Created, ttl)...)
	}
	s.queueTimers(ctx, pipe, q)
	name := QuestionLease(LeaseDeliver, q.ID)
	if holder != "" {
		fields = append(fields, fenceField(LeaseDeliver), 1)
	}
	args := append([]any{ms(ttl), holder, ms(leaseTTL)}, fields...)
	op.call = createScript.queue(ctx, pipe, []string{s.k.Question(q.ID), s.k.lease(name)}, args...)
	return op
}

// shownMessages are the messages a create records (NewQuestion.Shown),
// each once by its identity, the first kept, as AddMessage would record
// them one by one, and the msgs field that holds them.
func (s *Store) shownMessages(refs []engine.MessageRef) ([]engine.MessageRef, string, error) {
	if len(refs) == 0 {
		return nil, "", nil
	}
	kept := make([]engine.MessageRef, 0, len(refs))
	var msgs strings.Builder
	for _, ref := range refs {
		if slices.ContainsFunc(kept, ref.Same) {
			continue
		}
		if len(kept) == s.opts.MaxMessages {
			return nil, "", fmt.Errorf("%w (%d shown at create, %d kept)", ErrTooManyMessages, len(refs), s.opts.MaxMessages)
		}
		b, err := json.Marshal(ref)
		if err != nil {
			return nil, "", fmt.Errorf("encode message: %w", err)
		}
		if len(kept) > 0 {
			msgs.WriteByte('\n')
		}
		msgs.Write(b)
		kept = append(kept, ref)
	}
	return kept, msgs.String(), nil
}

// createDone reads the outcome of a create from its script's reply v (or
// error). A failed deadline write fails the create, so the request is
// handled again rather than leave a question that never times out.
func (s *Store) createDone(ctx context.Context, op *createOp, v any, err error) (bool, engine.Record, engine.Lease, error) {
	q, holder := op.q, op.holder
	if err != nil {
		return false, engine.Record{}, engine.Lease{}, err
	}
	if err := op.addDeadline.Err(); err != nil {
		return false, engine.Record{}, engine.Lease{}, fmt.Errorf("schedule deadline: %w", err)
	}
	// A message shown at create and not indexed would not be found by a
	// tap on it: the create fails, and the request handled again records
	// the message as a delivery would (AddMessage redoes the index).
	for _, c := range op.index {
		if err := c.Err(); err != nil {
			return false, engine.Record{}, engine.Lease{}, fmt.Errorf("index message: %w", err)
		}
	}
	o, rest, err := reply(v)
	if err != nil {
		return false, engine.Record{}, engine.Lease{}, err
	}
	if o == outDone {
		var lease engine.Lease
		if holder != "" && len(rest) == 1 {
			token, err := strconv.ParseInt(fmt.Sprint(rest[0]), 10, 64)
			if err != nil {
				return false, engine.Record{}, engine.Lease{}, fmt.Errorf("lease token: %w", err)
			}
			lease = engine.Lease{Name: QuestionLease(LeaseDeliver, q.ID), Holder: holder, Token: token}
		}
		rec := createdRecord(q)
		s.recent.put(rec)
		return true, rec, lease, nil
	}
	if o != outKept || len(rest) != 1 {
		return false, engine.Record{}, engine.Lease{}, fmt.Errorf("unexpected reply %v", v)
	}
	existing, err := decodeRecord(q.ID, rest[0])
	if err != nil {
		return false, engine.Record{}, engine.Lease{}, err
	}
	if err := s.repairDeadline(ctx, q, existing, op.addDeadline.Val() == 1); err != nil {
		return false, existing, engine.Lease{}, err
	}
	return false, existing, engine.Lease{}, nil
}

// createdRecord is the record of question q as Create stored it: what Get
// reads back, without reading it.
func createdRecord(q engine.NewQuestion) engine.Record {
	rec := engine.Record{
		ID:       q.ID,
		Entry:    q.Entry,
		Status:   askbridge.StatusPending,
		Request:  q.Request,
		Target:   q.Target,
		Created:  time.UnixMilli(q.Created.UnixMilli()),
		Deadline: time.UnixMilli(q.Deadline.UnixMilli()),
	}
	if len(q.Answerers) > 0 {
		rec.Answerers = q.Answerers
	}
	if storesPlaces(q) {
		rec.Places = q.Places
	} else {
		rec.Places = []askbridge.Place{{Name: rec.Target.String(), Target: rec.Target, Answerers: rec.Answerers}}
	}
	return rec
}

// repairDeadline fixes what a repeated Create just added to the deadlines
// zset for a question that already existed: an ended question leaves it,
// and a pending one keeps its own deadline (the repeat computed a later
// one from its own time).
func (s *Store) repairDeadline(ctx context.Context, q engine.NewQuestion, existing engine.Record, addedDeadline bool) error {
	switch {
	case existing.Status != askbridge.StatusPending:
		return s.cl().ZRem(ctx, s.k.deadlines(), q.ID).Err()
	case addedDeadline && !existing.Deadline.Equal(q.Deadline):
		return s.cl().ZAdd(ctx, s.k.deadlines(), redis.Z{Score: float64(existing.Deadline.UnixMilli()), Member: q.ID}).Err()
	}
	return nil
}

// Reject records a refused request: unless the id is already known, it
// stores the question ended with res (status error), stamped with now, and
// pushes the result to the agent. Won is true when this call stored it.
// Safe to repeat and to call concurrently.
func (s *Store) Reject(ctx context.Context, id string, res askbridge.Result, now time.Time) (engine.EndResult, error) {
	if err := checkID(id); err != nil {
		return engine.EndResult{}, fmt.Errorf("store: reject: %w", err)
	}
	body, err := resultBody(id, res)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: reject: %w", err)
	}
	v, err := rejectScript.run(ctx, s.cl(), []string{s.k.Question(id), s.k.Result(id)},
		string(res.Status), body, now.UnixMilli(), ms(s.opts.Retention))
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: reject: %w", err)
	}
	er, _, err := endReply(id, v)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: reject: %w", err)
	}
	return er, nil
}

// End ends a pending question with res, first writer wins, in one script on
// the question's slot: the winner stores the result stamped with the
// question's created time and now, pushes it onto the result list, and sets
// the retention on the question's keys. A loser learns the result that won.
// An ending that is not itself a timeout (res.Reason other than
// askbridge.ReasonTimeout) of a question whose deadline is at or before now
// comes too late: the script ends the question as a timeout instead, with
// the very result Sweep writes (timeoutResult), and the call still wins (Won
// true, Result the timeout). The winner then removes the question from the
// deadlines zset and the chat indexes; when that fails the question is
// ended all the same and the indexes heal (doc.go). Safe to repeat and to
// call concurrently.
func (s *Store) End(ctx context.Context, id string, res askbridge.Result, now time.Time) (engine.EndResult, error) {
	if err := checkID(id); err != nil {
		return engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	args, err := s.endArgs(id, res, now)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	v, err := endScript.run(ctx, s.cl(), s.endKeys(id), args...)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	s.recent.drop(id)
	er, refs, err := endReply(id, v)
	if err != nil {
		return engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	if er.Won {
		s.afterEnd(ctx, id, er, refs)
	}
	return er, nil
}

// afterEnd takes a question that was just ended out of the deadlines and
// of the chat indexes (separate keys: a failure is logged; the indexes drop
// ended questions as they are read, the sweep finds it ended).
func (s *Store) afterEnd(ctx context.Context, id string, er engine.EndResult, refs []engine.MessageRef) {
	pipe := s.cl().Pipeline()
	pipe.ZRem(ctx, s.k.deadlines(), id)
	s.unindex(ctx, pipe, er.Record, refs)
	if _, err := pipe.Exec(ctx); err != nil {
		s.opts.Logger.WarnContext(ctx, "store: end: remove from indexes", "question", id, "err", err)
	}
}

func (s *Store) endKeys(id string) []string {
	return []string{s.k.Question(id), s.k.Result(id), s.k.messages(id)}
}

// endArgs is the ARGV of end.lua for ending id with res at now. Unless res
// is itself a timeout it carries the timeout result as well, which the
// script writes instead when the question's deadline is at or before now.
func (s *Store) endArgs(id string, res askbridge.Result, now time.Time) ([]any, error) {
	body, err := resultBody(id, res)
	if err != nil {
		return nil, err
	}
	lateStatus, lateBody := "", ""
	if res.Reason != askbridge.ReasonTimeout {
		late := timeoutResult(id)
		if lateBody, err = resultBody(id, late); err != nil {
			return nil, err
		}
		lateStatus = string(late.Status)
	}
	return []any{string(res.Status), body, now.UnixMilli(), ms(s.opts.Retention), lateStatus, lateBody}, nil
}

// timeoutResult is the result of a question that reached its deadline
// unanswered: what Sweep writes, and what End writes in place of an ending
// that came at or after the deadline.
func timeoutResult(id string) askbridge.Result {
	return askbridge.NoAnswer(id, askbridge.ReasonTimeout, "")
}

// unindex queues the removal of an ended question from the chat indexes of
// the chats it was shown in.
func (s *Store) unindex(ctx context.Context, pipe redis.Pipeliner, rec engine.Record, refs []engine.MessageRef) {
	id := rec.ID
	if s.opts.AgentIndex {
		pipe.ZRem(ctx, s.k.agent(rec.Request.Agent), id)
	}
	seen := map[string]bool{}
	for _, ref := range refs {
		k := s.k.chat(ref.Platform, ref.Chat)
		if !seen[k] {
			seen[k] = true
			pipe.ZRem(ctx, k, id)
		}
	}
}

// Replay pushes the stored result of an ended question onto its result
// list again when the list is empty: an agent that asks again with the id
// of a question whose result it already took gets the same result JSON (a
// replay, not a second outcome) instead of waiting forever. entry is the
// stream entry of the ask at hand: the entry that created the question,
// handled again (a replica died before acknowledging it), replays nothing,
// nor does the ask a cancel came before. pushed is false when there was
// nothing to do (unknown id, still pending, the result still waiting, or
// no new ask). Safe to repeat and to call concurrently.
func (s *Store) Replay(ctx context.Context, id, entry string) (pushed bool, err error) {
	if err := checkID(id); err != nil {
		return false, fmt.Errorf("store: replay: %w", err)
	}
	v, err := replayScript.run(ctx, s.cl(), []string{s.k.Question(id), s.k.Result(id)}, entry)
	if err != nil {
		return false, fmt.Errorf("store: replay: %w", err)
	}
	return v == int64(1), nil
}

// Admit counts question id, due at deadline, against the cap of pending
// questions of its agent (the request's agent field): admitted is false,
// and nothing changes, when the agent already has max pending. An id
// already counted is admitted again (a retried request). Questions leave
// the count as they end (with Options.AgentIndex set), or at their
// deadline at the latest. pending is the agent's count after the call.
// Safe for concurrent use: two requests never both take the last place.
func (s *Store) Admit(ctx context.Context, agent, id string, deadline, now time.Time, max int) (admitted bool, pending int, err error) {
	if err := checkID(id); err != nil {
		return false, 0, fmt.Errorf("store: admit: %w", err)
	}
	if max < 1 {
		return false, 0, fmt.Errorf("store: admit: cap %d is not positive", max)
	}
	v, err := admitScript.run(ctx, s.cl(), []string{s.k.agent(agent)},
		id, deadline.UnixMilli(), now.UnixMilli(), max, ms(s.opts.MaxLifetime+time.Minute))
	if err != nil {
		return false, 0, fmt.Errorf("store: admit: %w", err)
	}
	r, ok := v.([]any)
	if !ok || len(r) != 2 {
		return false, 0, fmt.Errorf("store: admit: unexpected reply %v", v)
	}
	code, _ := r[0].(int64)
	n, _ := r[1].(int64)
	return code == 1, int(n), nil
}

// Unadmit takes question id out of its agent's count: for a request that
// was admitted and then found its id already ended. Safe to repeat.
func (s *Store) Unadmit(ctx context.Context, agent, id string) error {
	if err := s.cl().ZRem(ctx, s.k.agent(agent), id).Err(); err != nil {
		return fmt.Errorf("store: unadmit: %w", err)
	}
	return nil
}

// Get reads a question; found is false for an unknown id. Safe for
// concurrent use.
func (s *Store) Get(ctx context.Context, id string) (engine.Record, bool, error) {
	if err := checkID(id); err != nil {
		return engine.Record{}, false, fmt.Errorf("store: get: %w", err)
	}
	m, err := s.cl().HGetAll(ctx, s.k.Question(id)).Result()
	if err != nil {
		return engine.Record{}, false, fmt.Errorf("store: get: %w", err)
	}
	if len(m) == 0 {
		return engine.Record{ID: id}, false, nil
	}
	r, err := recordFromMap(id, m)
	if err != nil {
		return engine.Record{}, false, fmt.Errorf("store: get: %w", err)
	}
	return r, true, nil
}

// Sweep ends up to max (default 100) questions whose deadline is at or
// before now as expired (timeoutResult: no_answer, reason timeout) and
// returns those this call ended. It claims the due ids in the deadlines
// zset (claimDue: a range with LIMIT, so questions not yet due cost
// nothing; sweeps at once take different ids), marks them finishing
// (MarkFinishing) and runs the end script for each in one pipeline (a
// sweep whose claim lapsed may meet another on the same id: the script
// lets exactly one win), and then removes every id it settled from the
// zset. Three round trips whatever max is. When some ids fail but others
// were ended, it returns those it ended and no error: the failed ids stay
// in the zset, due again for a sweep once the claim lapses. Safe to call
// concurrently from any number of replicas.
func (s *Store) Sweep(ctx context.Context, now time.Time, max int) ([]engine.EndResult, error) {
	won, _, err := s.SweepNext(ctx, now, max)
	return won, err
}

// SweepNext is Sweep that also says when the next deadline comes: when
// this call found fewer than max due, next is the earliest deadline (or
// lapse of another sweep's claim) after now, in the same round trip as
// the claim (sweep_claim.lua), zero when none is pending; now when max
// were due (more may be). The sweeper sleeps until then
// (engine.NextSweeper).
func (s *Store) SweepNext(ctx context.Context, now time.Time, max int) (won []engine.EndResult, next time.Time, err error) {
	if max < 1 {
		max = defaultSweepCount
	}
	due, next, err := s.claimDueNext(ctx, now, max)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("store: sweep: %w", err)
	}
	if len(due) >= max {
		next = now
	}
	if len(due) == 0 {
		return nil, next, nil
	}
	won, err = s.endDue(ctx, now, due)
	return won, next, err
}

// endDue marks the claimed due questions finishing and ends them as timed
// out (Sweep).
func (s *Store) endDue(ctx context.Context, now time.Time, due []redis.Z) ([]engine.EndResult, error) {
	pipe := s.cl().Pipeline()
	calls := make([]*queued, len(due))
	ids := make([]string, len(due))
	marks := make([]redis.Z, len(due))
	for i, z := range due {
		marks[i] = redis.Z{Score: float64(now.UnixMilli()), Member: z.Member}
	}
	// Marked finishing before they end, in the same round trip: a replica
	// that dies after the end leaves the edits to another (doc.go).
	pipe.ZAddNX(ctx, s.k.finishing(), marks...)
	for i, z := range due {
		id, _ := z.Member.(string)
		ids[i] = id
		args, err := s.endArgs(id, timeoutResult(id), now)
		if err != nil {
			return nil, fmt.Errorf("store: sweep: %w", err)
		}
		calls[i] = endScript.queue(ctx, pipe, s.endKeys(id), args...)
	}
	vals, errs := runQueued(ctx, s.rdb, pipe, calls)

	var won []engine.EndResult
	var firstErr error
	cleanup := s.cl().Pipeline()
	var settled []any
	for i, id := range ids {
		if errs[i] != nil {
			firstErr = cmpErr(firstErr, errs[i])
			continue
		}
		s.recent.drop(id)
		er, refs, err := endReply(id, vals[i])
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		switch {
		case er.Won:
			won = append(won, er)
			s.unindex(ctx, cleanup, er.Record, refs)
			settled = append(settled, id)
		case er.Found:
			settled = append(settled, id)
		case due[i].Score <= float64(now.Add(-unknownGrace).UnixMilli()):
			settled = append(settled, id)
		}
	}
	if len(settled) > 0 {
		cleanup.ZRem(ctx, s.k.deadlines(), settled...)
	}
	if cleanup.Len() > 0 {
		if _, err := cleanup.Exec(ctx); err != nil {
			firstErr = cmpErr(firstErr, err)
		}
	}
	if firstErr != nil {
		if len(won) == 0 {
			return nil, fmt.Errorf("store: sweep: %w", firstErr)
		}
		// The ids that failed are still due and the next sweep retries
		// them; the questions this call ended must reach the caller.
		s.opts.Logger.WarnContext(ctx, "store: sweep: some due questions were not settled", "err", firstErr)
	}
	return won, nil
}

// sweepHold is how long the due questions a sweep claimed are passed over
// by other sweeps (claimDue): far longer than a sweep takes, and the most a
// sweeper that dies in the middle can delay the timeouts it held.
const sweepHold = 2 * time.Second

// claimDue hands up to max questions due by now to this sweep alone
// (sweep_claim.lua), with their scores before the claim, oldest first:
// sweeps running at once, in this replica or others, each end their own
// and none repeats another's work. A claim lapses after sweepHold.
func (s *Store) claimDue(ctx context.Context, now time.Time, max int) ([]redis.Z, error) {
	due, _, err := s.claimDueNext(ctx, now, max)
	return due, err
}

// claimDueNext is claimDue that also returns the next deadline after now
// when fewer than max were due (zero when none is known).
func (s *Store) claimDueNext(ctx context.Context, now time.Time, max int) ([]redis.Z, time.Time, error) {
	v, err := sweepClaimScript.run(ctx, s.cl(), []string{s.k.deadlines()}, now.UnixMilli(), ms(sweepHold), max)
	if err != nil {
		return nil, time.Time{}, err
	}
	flat, ok := v.([]any)
	if !ok {
		return nil, time.Time{}, fmt.Errorf("claim due: unexpected reply %v", v)
	}
	var next time.Time
	if len(flat)%2 == 1 {
		score, err := strconv.ParseFloat(fmt.Sprint(flat[len(flat)-1]), 64)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("claim due: unexpected next deadline %v", flat[len(flat)-1])
		}
		next, flat = time.UnixMilli(int64(score)), flat[:len(flat)-1]
	}
	due := make([]redis.Z, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		id, _ := flat[i].(string)
		score, err := strconv.ParseFloat(fmt.Sprint(flat[i+1]), 64)
		if id == "" || err != nil {
			return nil, time.Time{}, fmt.Errorf("claim due: unexpected reply %v", v)
		}
		due = append(due, redis.Z{Member: id, Score: score})
	}
	return due, next, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// Pending counts the pending questions, across all replicas: the size of
// the deadlines zset (ZCARD), one command whatever the number. The zset
// holds every pending question from its Create until its End or Sweep, so
// the count is exact but for short windows after a failure: a Create under
// way (or failed half way, until the request is redelivered), and an End
// whose removal from the zset was lost, until another End of the question
// or the sweep at its deadline removes it (doc.go). Safe for concurrent use.
func (s *Store) Pending(ctx context.Context) (int64, error) {
	n, err := s.cl().ZCard(ctx, s.k.deadlines()).Result()
	if err != nil {
		return 0, fmt.Errorf("store: pending: %w", err)
	}
	return n, nil
}

// pendingOf splits index members (scored by created time) into the ids of
// pending questions, in order, and the members to prune: ended questions,
// and unknown ids older than unknownGrace by Options.Clock. One pipelined
// HGET per member.
func (s *Store) pendingOf(ctx context.Context, zs []redis.Z) (pending []string, gone []any, err error) {
	if len(zs) == 0 {
		return nil, nil, nil
	}
	pipe := s.cl().Pipeline()
	cmds := make([]*redis.StringCmd, len(zs))
	for i, z := range zs {
		id, _ := z.Member.(string)
		cmds[i] = pipe.HGet(ctx, s.k.Question(id), fieldStatus)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	cutoff := float64(s.opts.Clock.Now().Add(-unknownGrace).UnixMilli())
	for i, z := range zs {
		id, _ := z.Member.(string)
		st, err := cmds[i].Result()
		switch {
		case errors.Is(err, redis.Nil):
			if z.Score <= cutoff {
				gone = append(gone, id)
			}
		case err != nil:
			return nil, nil, err
		case st == string(askbridge.StatusPending):
			pending = append(pending, id)
		default:
			gone = append(gone, id)
		}
	}
	return pending, gone, nil
}

// resultBody is the result JSON the scripts store, without the stamps they
// add: the id set, createdAt and endedAt left out.
func resultBody(id string, res askbridge.Result) (string, error) {
	switch res.Status {
	case askbridge.StatusAnswered, askbridge.StatusNoAnswer, askbridge.StatusError:
	default:
		return "", fmt.Errorf("result status %q is not final", res.Status)
	}
	res.ID = id
	res.CreatedAt, res.EndedAt = 0, 0
	b, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	return string(b), nil
}

// endReply decodes the reply of the end and reject scripts.
func endReply(id string, v any) (engine.EndResult, []engine.MessageRef, error) {
	o, rest, err := reply(v)
	if err != nil {
		return engine.EndResult{}, nil, err
	}
	if o == outMissing {
		return engine.EndResult{Record: engine.Record{ID: id}}, nil, nil
	}
	if (o != outDone && o != outKept) || len(rest) < 1 {
		return engine.EndResult{}, nil, fmt.Errorf("unexpected reply %v", v)
	}
	r, err := decodeRecord(id, rest[0])
	if err != nil {
		return engine.EndResult{}, nil, err
	}
	var refs []engine.MessageRef
	if len(rest) > 1 {
		if refs, err = decodeRefs(rest[1]); err != nil {
			return engine.EndResult{}, nil, err
		}
	}
	er := engine.EndResult{Won: o == outDone, Found: true, Record: r}
	if er.Won {
		er.Messages = refs
	}
	if r.Result != nil {
		er.Result = *r.Result
	} else {
		er.Result = askbridge.Result{ID: id, Status: r.Status}
	}
	return er, refs, nil
}

// decodeRecord decodes a flat HGETALL reply from a script.
func decodeRecord(id string, v any) (engine.Record, error) {
	flat, ok := v.([]any)
	if !ok || len(flat)%2 != 0 {
		return engine.Record{}, fmt.Errorf("question %s: unexpected fields %v", id, v)
	}
	m := make(map[string]string, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		k, _ := flat[i].(string)
		val, _ := flat[i+1].(string)
		m[k] = val
	}
	return recordFromMap(id, m)
}

// recordFromMap decodes the fields of a question hash.
func recordFromMap(id string, m map[string]string) (engine.Record, error) {
	r := engine.Record{ID: id, Entry: m[fieldEntry], Status: askbridge.Status(m[fieldStatus])}
	if v := m[fieldRequest]; v != "" {
		if err := json.Unmarshal([]byte(v), &r.Request); err != nil {
			return r, fmt.Errorf("question %s: decode request: %w", id, err)
		}
	}
	if v := m[fieldResult]; v != "" {
		var res askbridge.Result
		if err := json.Unmarshal([]byte(v), &res); err != nil {
			return r, fmt.Errorf("question %s: decode result: %w", id, err)
		}
		r.Result = &res
	}
	if v := m[fieldAnswerers]; v != "" {
		if err := json.Unmarshal([]byte(v), &r.Answerers); err != nil {
			return r, fmt.Errorf("question %s: decode answerers: %w", id, err)
		}
	}
	if v := m[fieldTarget]; v != "" {
		platform, chat, _ := strings.Cut(v, ":")
		r.Target = askbridge.Target{Platform: platform, Chat: chat}
	}
	if err := decodeReach(id, m, &r); err != nil {
		return r, err
	}
	var err error
	if r.Created, err = unixMilli(m[fieldCreated]); err != nil {
		return r, fmt.Errorf("question %s: created: %w", id, err)
	}
	if r.Deadline, err = unixMilli(m[fieldDeadline]); err != nil {
		return r, fmt.Errorf("question %s: deadline: %w", id, err)
	}
	return r, nil
}

func unixMilli(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n), nil
}

func decodeRefs(v any) ([]engine.MessageRef, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected message list %v", v)
	}
	refs := make([]engine.MessageRef, 0, len(items))
	for _, it := range items {
		s, _ := it.(string)
		var ref engine.MessageRef
		if err := json.Unmarshal([]byte(s), &ref); err != nil {
			return nil, fmt.Errorf("decode message ref: %w", err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// checkID refuses ids that would break the {<id>} hash tag. The protocol's
// id syntax (^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$) is checked by the request
// decoder; the store only needs a non-empty id without braces.
func checkID(id string) error {
	if id == "" {
		return errors.New("empty question id")
	}
	if !validTag(id) {
		return fmt.Errorf("question id %q contains a brace", id)
	}
	return nil
}

func (s *Store) indexTTL() time.Duration { return s.opts.MaxLifetime + s.opts.Retention }
