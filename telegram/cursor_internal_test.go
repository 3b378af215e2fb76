package telegram

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
)

// cursorLog is a Coordinator that records the offsets stored, refusing
// them once refuse is set.
type cursorLog struct {
	engine.Coordinator
	mu      sync.Mutex
	stored  []int64
	refused bool
}

func (c *cursorLog) SetCursor(_ context.Context, _ string, v int64, _ engine.Lease) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused {
		return false, nil
	}
	c.stored = append(c.stored, v)
	return true, nil
}

func (c *cursorLog) got() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.stored)
}

// TestCursorWriterStoresAtMostEverySecond: a burst of handled updates
// stores the first offset at once and the latest one with the next store,
// within cursorEvery; nothing is stored twice or out of order; the flush
// at the term's end stores what is pending; a refused store ends the term.
func TestCursorWriterStoresAtMostEverySecond(t *testing.T) {
	coord := &cursorLog{}
	c := &Channel{coord: coord, log: slog.New(slog.DiscardHandler)}
	term, lost := context.WithCancel(context.Background())
	defer lost()
	w := &cursorWriter{c: c, term: term, lease: engine.Lease{Name: "telegram:poll:1"}, lost: lost}
	for off := int64(10); off <= 14; off++ {
		w.handled(off)
	}
	if got := coord.got(); !slices.Equal(got, []int64{10}) {
		t.Fatalf("stored %v right after the burst, want [10]", got)
	}
	deadline := time.Now().Add(5 * cursorEvery)
	for len(coord.got()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := coord.got(); !slices.Equal(got, []int64{10, 14}) {
		t.Fatalf("stored %v, want [10 14]: the latest offset, once", got)
	}
	w.handled(15)
	w.flush() // the term ends
	w.flush()
	if got := coord.got(); !slices.Equal(got, []int64{10, 14, 15}) {
		t.Fatalf("stored %v after the term's flush, want [10 14 15]", got)
	}
	coord.mu.Lock()
	coord.refused = true
	coord.mu.Unlock()
	w.handled(16)
	w.flush()
	if term.Err() == nil {
		t.Fatal("a refused store (the lease lost) did not end the term")
	}
}
