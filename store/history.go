package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// historyMax caps the web page's timeline. The page shows a compact entry
// per ended question (a few hundred bytes), so the list stays well under a
// megabyte.
const historyMax = 1000

// AppendHistory adds one entry at the head of the web page's timeline and
// trims it to the newest 1,000 entries: LPUSH then LTRIM in one MULTI, so
// the list never grows past the cap. It never expires. Not idempotent (a
// repeat adds the entry again; the web package drops repeats of an id when
// it reads). Safe for concurrent use.
func (s *Store) AppendHistory(ctx context.Context, entry []byte) error {
	key := s.k.webHistory()
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, entry)
		p.LTrim(ctx, key, 0, historyMax-1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: append history: %w", err)
	}
	return nil
}

// History returns up to max (at most 1,000; default 100 when max < 1)
// entries of the web page's timeline, newest first. Safe for concurrent use.
func (s *Store) History(ctx context.Context, max int) ([][]byte, error) {
	if max < 1 {
		max = 100
	}
	max = min(max, historyMax)
	vals, err := s.rdb.LRange(ctx, s.k.webHistory(), 0, int64(max-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
