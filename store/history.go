package store

import (
	"context"
	"fmt"
)

// historyMax caps the web page's timeline. The page shows a compact entry
// per ended question (a few hundred bytes), so the list stays well under a
// megabyte.
const historyMax = 1000

// historySlack is how far the list may grow past historyMax before it is
// trimmed back: trimming on every append would cost two more commands per
// question (the LTRIM and the MULTI/EXEC around the pair); trimming once
// every historySlack appends costs almost nothing, and History never reads
// past historyMax.
const historySlack = 100

// AppendHistory adds one entry at the head of the web page's timeline: one
// LPUSH, whose reply is the list's length. The append that makes it
// historyMax + historySlack + 1 long cuts it back to the newest historyMax
// with an LTRIM (only that one: appends racing with it, which saw longer
// lengths, leave it to it; should it fail, the append historySlack later
// trims). So the list holds about historyMax + historySlack entries at most,
// and History reads the newest historyMax. It never expires. Not idempotent (a repeat adds the entry
// again; the web package drops repeats of an id when it reads). Safe for
// concurrent use.
func (s *Store) AppendHistory(ctx context.Context, entry []byte) error {
	key := s.k.webHistory()
	n, err := s.cl().LPush(ctx, key, entry).Result()
	if err != nil {
		return fmt.Errorf("store: append history: %w", err)
	}
	if over := n - historyMax - historySlack; over > 0 && over%historySlack == 1 {
		if err := s.cl().LTrim(ctx, key, 0, historyMax-1).Err(); err != nil {
			return fmt.Errorf("store: append history: trim: %w", err)
		}
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
	vals, err := s.cl().LRange(ctx, s.k.webHistory(), 0, int64(max-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
