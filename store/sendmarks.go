package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// MarkSend marks send name of question id as made, holding value (an
// email's Message-ID), for ttl: a channel whose sends cannot be taken back
// or looked up on the platform (email) marks each one in the instant
// before it is committed, so a replica that takes a delivery over finds
// it and records it rather than sending it again. first is true when this
// call marked it; otherwise held is the value marked before. The mark
// lives in the question's slot.
func (s *Store) MarkSend(ctx context.Context, id, name, value string, ttl time.Duration) (held string, first bool, err error) {
	key := s.k.sent(id, name)
	ok, err := s.cl().SetNX(ctx, key, value, time.Duration(ms(ttl))*time.Millisecond).Result()
	if err != nil {
		return "", false, fmt.Errorf("store: mark a send: %w", err)
	}
	if ok {
		return value, true, nil
	}
	held, err = s.cl().Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		// Expired in between: long past the question's life.
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("store: mark a send: %w", err)
	}
	return held, false, nil
}

// SendMark returns the value of send name of question id, when it is
// marked.
func (s *Store) SendMark(ctx context.Context, id, name string) (value string, found bool, err error) {
	v, err := s.cl().Get(ctx, s.k.sent(id, name)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("store: read a send mark: %w", err)
	}
	return v, true, nil
}

// ClearSend takes back the mark of send name of question id when it still
// holds value: the send it stood for was refused, so it may be made again.
// Safe to repeat.
func (s *Store) ClearSend(ctx context.Context, id, name, value string) error {
	if _, err := sendClearScript.run(ctx, s.cl(), []string{s.k.sent(id, name)}, value); err != nil {
		return fmt.Errorf("store: clear a send mark: %w", err)
	}
	return nil
}
