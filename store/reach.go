package store

import (
	"context"
	"encoding/json"
	"fmt"

	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// Hash fields of ask-user.md §5, internal.
const (
	// fieldPlaces holds the JSON list of a question's places when it has
	// more than one or escalation steps; a question without it has one
	// place, its target.
	fieldPlaces = "places"
	// fieldAcked holds the Person JSON of who pressed Seen.
	fieldAcked = "acked"
)

// timerMember is a timer's member of the timers zset: "<id> <name>" (a
// question id has no space).
func timerMember(t engine.Timer) string { return t.ID + " " + t.Name }

// Acknowledge records that by has seen an open question (see
// engine.Store).
func (s *Store) Acknowledge(ctx context.Context, id string, by askbridge.Person) (bool, engine.Record, bool, error) {
	if err := checkID(id); err != nil {
		return false, engine.Record{}, false, err
	}
	who, err := json.Marshal(by)
	if err != nil {
		return false, engine.Record{}, false, fmt.Errorf("store: acknowledge: %w", err)
	}
	v, err := acknowledgeScript.run(ctx, s.cl(), []string{s.k.Question(id)}, string(who))
	if err != nil {
		return false, engine.Record{}, false, fmt.Errorf("store: acknowledge: %w", err)
	}
	o, rest, err := reply(v)
	if err != nil {
		return false, engine.Record{}, false, fmt.Errorf("store: acknowledge: %w", err)
	}
	if o == outMissing {
		return false, engine.Record{}, false, nil
	}
	if len(rest) != 1 {
		return false, engine.Record{}, false, fmt.Errorf("store: acknowledge: unexpected reply %v", v)
	}
	rec, err := decodeRecord(id, rest[0])
	if err != nil {
		return false, engine.Record{}, false, fmt.Errorf("store: acknowledge: %w", err)
	}
	return o == outDone, rec, true, nil
}

// PlaceFailed records that a place cannot be reached (see engine.Store).
func (s *Store) PlaceFailed(ctx context.Context, id string, place int, reason string, count int) ([]int, askbridge.Status, error) {
	if err := checkID(id); err != nil {
		return nil, "", err
	}
	v, err := placeFailedScript.run(ctx, s.cl(), []string{s.k.Question(id)}, place, reason, count)
	if err != nil {
		return nil, "", fmt.Errorf("store: place failed: %w", err)
	}
	o, rest, err := reply(v)
	if err != nil {
		return nil, "", fmt.Errorf("store: place failed: %w", err)
	}
	if o == outMissing || len(rest) < 1 {
		return nil, "", nil
	}
	status, _ := rest[0].(string)
	var failed []int
	for _, f := range rest[1:] {
		n, _ := f.(int64)
		failed = append(failed, int(n))
	}
	return failed, askbridge.Status(status), nil
}

// DueTimers hands out due timers (see engine.Store).
func (s *Store) DueTimers(ctx context.Context, now time.Time, hold time.Duration, max int) ([]engine.Timer, error) {
	if max < 1 {
		max = defaultSweepCount
	}
	v, err := timersDueScript.run(ctx, s.cl(), []string{s.k.timers()}, now.UnixMilli(), ms(hold), max)
	if err != nil {
		return nil, fmt.Errorf("store: due timers: %w", err)
	}
	items, _ := v.([]any)
	out := make([]engine.Timer, 0, len(items))
	for _, it := range items {
		m, _ := it.(string)
		id, name, ok := strings.Cut(m, " ")
		if !ok || checkID(id) != nil || name == "" {
			// Not a member this store wrote: dropped, so it is not
			// handed out forever.
			s.cl().ZRem(ctx, s.k.timers(), m)
			continue
		}
		out = append(out, engine.Timer{ID: id, Name: name, At: now})
	}
	return out, nil
}

// TimerDone removes a timer (see engine.Store).
func (s *Store) TimerDone(ctx context.Context, t engine.Timer) error {
	if err := s.cl().ZRem(ctx, s.k.timers(), timerMember(t)).Err(); err != nil {
		return fmt.Errorf("store: timer done: %w", err)
	}
	return nil
}

// RetryTimer makes a handed-out timer due again at at (see
// engine.Store).
func (s *Store) RetryTimer(ctx context.Context, t engine.Timer, at time.Time) error {
	err := s.cl().ZAddXX(ctx, s.k.timers(), redis.Z{Score: float64(at.UnixMilli()), Member: timerMember(t)}).Err()
	if err != nil {
		return fmt.Errorf("store: retry timer: %w", err)
	}
	return nil
}

// FireOnce marks a timer as announced (see engine.Store).
func (s *Store) FireOnce(ctx context.Context, id, name string) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	v, err := fireOnceScript.run(ctx, s.cl(), []string{s.k.Question(id)}, name)
	if err != nil {
		return false, fmt.Errorf("store: fire once: %w", err)
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// queueTimers schedules the timers of a new question in pipe, beside its
// deadline. The create of a question that already exists queues them too
// (the pipeline does not know yet): ZADD NX leaves a timer still to fire
// where it is, and one fired and removed before comes back only to be
// found done (Record.Fired) and removed again.
func (s *Store) queueTimers(ctx context.Context, pipe redis.Pipeliner, q engine.NewQuestion) {
	if len(q.Timers) == 0 {
		return
	}
	zs := make([]redis.Z, len(q.Timers))
	for i, t := range q.Timers {
		zs[i] = redis.Z{Score: float64(t.At.UnixMilli()), Member: timerMember(t)}
	}
	pipe.ZAddNX(ctx, s.k.timers(), zs...)
}

// placesFields adds the places field of q to fields, when it has one.
func placesFields(q engine.NewQuestion, fields []any) ([]any, error) {
	if !storesPlaces(q) {
		return fields, nil
	}
	b, err := json.Marshal(q.Places)
	if err != nil {
		return nil, fmt.Errorf("encode places: %w", err)
	}
	return append(fields, fieldPlaces, string(b)), nil
}

// storesPlaces reports whether Create stores q's places: a question shown
// in one place from the start stores only its target and answerers, which
// make that place again.
func storesPlaces(q engine.NewQuestion) bool {
	return len(q.Places) >= 2 || (len(q.Places) == 1 && q.Places[0].Step != 0)
}

// decodeReach decodes the §5 fields of a question hash into r, whose
// target and answerers are read.
func decodeReach(id string, m map[string]string, r *engine.Record) error {
	if v := m[fieldPlaces]; v != "" {
		if err := json.Unmarshal([]byte(v), &r.Places); err != nil {
			return fmt.Errorf("question %s: decode places: %w", id, err)
		}
	}
	if len(r.Places) == 0 {
		r.Places = []askbridge.Place{{Name: r.Target.String(), Target: r.Target, Answerers: r.Answerers}}
	}
	for k := range m {
		if name, ok := strings.CutPrefix(k, "fired:"); ok {
			r.Fired = append(r.Fired, name)
		}
	}
	slices.Sort(r.Fired)
	if v := m["votes"]; v != "" {
		if err := json.Unmarshal([]byte(v), &r.Votes); err != nil {
			return fmt.Errorf("question %s: decode votes: %w", id, err)
		}
	}
	if v := m[fieldAcked]; v != "" {
		var p askbridge.Person
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return fmt.Errorf("question %s: decode acked: %w", id, err)
		}
		r.Acknowledged = &p
	}
	return nil
}

// Vote records a vote on a quorum question and ends it when the vote
// decides it, in one step (see engine.Store).
func (s *Store) Vote(ctx context.Context, id string, v askbridge.Vote, quorum, voters int, now time.Time) (engine.VoteResult, error) {
	if err := checkID(id); err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	entry, err := json.Marshal(v)
	if err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	key, answers := "", []byte("{}")
	if !v.Skipped {
		key = engine.AnswerKey(v.Answers)
		if answers, err = json.Marshal(v.Answers); err != nil {
			return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
		}
	}
	agreed, err := resultBody(id, askbridge.Result{Status: askbridge.StatusAnswered})
	if err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	none, err := resultBody(id, askbridge.NoAnswer(id, askbridge.ReasonNoQuorum, ""))
	if err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	late, err := resultBody(id, timeoutResult(id))
	if err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	voter := v.By.Platform + ":" + v.By.ID
	raw, err := voteScript.run(ctx, s.cl(), s.endKeys(id), voter, string(entry), key, string(answers),
		quorum, voters, now.UnixMilli(), ms(s.opts.Retention), agreed, none, late)
	if err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	items, ok := raw.([]any)
	if !ok || len(items) == 0 {
		return engine.VoteResult{}, fmt.Errorf("store: vote: unexpected reply %v", raw)
	}
	switch code, _ := items[0].(int64); code {
	case 2, 3:
		if len(items) != 2 {
			return engine.VoteResult{}, fmt.Errorf("store: vote: unexpected reply %v", raw)
		}
		rec, err := decodeRecord(id, items[1])
		if err != nil {
			return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
		}
		out := engine.VoteRecorded
		if code == 3 {
			out = engine.VoteAgain
		}
		return engine.VoteResult{Outcome: out, End: engine.EndResult{Found: true, Record: rec, Result: askbridge.Result{ID: id, Status: rec.Status}}}, nil
	}
	s.recent.drop(id)
	er, refs, err := endReply(id, raw)
	if err != nil {
		return engine.VoteResult{}, fmt.Errorf("store: vote: %w", err)
	}
	if !er.Won {
		return engine.VoteResult{Outcome: engine.VoteClosed, End: er}, nil
	}
	s.afterEnd(ctx, id, er, refs, nil)
	return engine.VoteResult{Outcome: engine.VoteDecided, End: er}, nil
}
