package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
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
