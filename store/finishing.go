package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// MarkFinishing records that the messages of question id are about to be
// edited. One ZADD NX on a shared key: a mark keeps its first time, and
// added reports whether this call made it. Safe to repeat.
func (s *Store) MarkFinishing(ctx context.Context, id string, at time.Time) (bool, error) {
	if err := checkID(id); err != nil {
		return false, fmt.Errorf("store: mark finishing: %w", err)
	}
	n, err := s.cl().ZAddNX(ctx, s.k.finishing(), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Result()
	if err != nil {
		return false, fmt.Errorf("store: mark finishing: %w", err)
	}
	return n == 1, nil
}

// MarkAndEnd marks question id finishing and ends it with res (see
// engine.Store). On a single Redis the mark and the end script go in one
// pipeline, the mark first: the server runs them in that order, so the end
// never runs unmarked. On a Cluster, whose finishing set and question live
// on different nodes, the mark is made first, then the end tried.
func (s *Store) MarkAndEnd(ctx context.Context, id string, res askbridge.Result, now time.Time) (bool, engine.EndResult, error) {
	return s.MarkAndEndPublishing(ctx, id, res, now, nil)
}

// MarkAndEndPublishing is MarkAndEnd that, when the end is won, publishes
// the events events returns for it (nil: none) in the round trip that
// takes the question out of the deadlines and the chat indexes, as Publish
// would: the end's events need no round trip of their own. They are
// appended after the end, never for an end that was not won. A publish
// that fails is logged, the end standing (as a failed Publish is, for a
// caller that publishes after the end). Safe to repeat and to call
// concurrently.
func (s *Store) MarkAndEndPublishing(ctx context.Context, id string, res askbridge.Result, now time.Time, events func(engine.EndResult) []askbridge.Event) (bool, engine.EndResult, error) {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		added, err := s.MarkFinishing(ctx, id, now)
		if err != nil {
			return false, engine.EndResult{}, err
		}
		r, err := s.end(ctx, id, res, now, events)
		return added, r, err
	}
	if err := checkID(id); err != nil {
		return false, engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	args, err := s.endArgs(id, res, now)
	if err != nil {
		return false, engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	pipe := s.cl().Pipeline()
	mark := pipe.ZAddNX(ctx, s.k.finishing(), redis.Z{Score: float64(now.UnixMilli()), Member: id})
	call := endScript.queue(ctx, pipe, s.endKeys(id), args...)
	vals, errs := runQueued(ctx, s.cl(), pipe, []*queued{call})
	if errs[0] != nil {
		if err := mark.Err(); err != nil {
			return false, engine.EndResult{}, fmt.Errorf("store: mark finishing: %w", err)
		}
		return mark.Val() == 1, engine.EndResult{}, fmt.Errorf("store: end: %w", errs[0])
	}
	s.recent.drop(id)
	er, refs, err := endReply(id, vals[0])
	if err != nil {
		return false, engine.EndResult{}, fmt.Errorf("store: end: %w", err)
	}
	if er.Won {
		s.afterEnd(ctx, id, er, refs, events)
	}
	if err := mark.Err(); err != nil {
		s.opts.Logger.WarnContext(ctx, "store: mark finishing failed where the end ran; the end stands", "question", id, "won", er.Won, "err", err)
		return false, er, nil
	}
	return mark.Val() == 1, er, nil
}

// KeepFinishing moves the mark of question id to at, if it is still
// marked (ZADD XX): the replica editing its messages keeps the mark fresh,
// so Unfinished does not hand it to another replica meanwhile. Safe to
// repeat; a question no longer marked stays unmarked.
func (s *Store) KeepFinishing(ctx context.Context, id string, at time.Time) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("store: keep finishing: %w", err)
	}
	if err := s.cl().ZAddXX(ctx, s.k.finishing(), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Err(); err != nil {
		return fmt.Errorf("store: keep finishing: %w", err)
	}
	return nil
}

// Finished records that every message of question id has been edited.
// Safe to repeat; an unknown id changes nothing.
func (s *Store) Finished(ctx context.Context, id string) error {
	if err := s.cl().ZRem(ctx, s.k.finishing(), id).Err(); err != nil {
		return fmt.Errorf("store: finished: %w", err)
	}
	return nil
}

// Unfinished lists up to max questions marked finishing at or before
// before and not yet finished, oldest first. Its cost does not grow with
// the questions marked later.
func (s *Store) Unfinished(ctx context.Context, before time.Time, max int) ([]string, error) {
	if max <= 0 {
		return nil, nil
	}
	ids, err := s.cl().ZRangeByScore(ctx, s.k.finishing(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(before.UnixMilli(), 10), Count: int64(max),
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("store: unfinished: %w", err)
	}
	return ids, nil
}
