package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// groupCommit runs the items of callers that come at once in one call of
// run: the first caller runs its items at once; those that come while a
// call is on its way wait, and the first of them runs all their items
// together when it returns. Alone, a caller pays one call, as without it; a
// burst pays one call per batch instead of one per caller. Every caller
// gets the error of the call that carried its items. Safe for concurrent
// use.
type groupCommit[T any] struct {
	run func(ctx context.Context, items []T) error
	// timeout bounds one call of run: it runs on behalf of callers other
	// than the one whose context it has, so it does not stop with that
	// context.
	timeout time.Duration

	mu    sync.Mutex
	queue []*gcWaiter[T]
	busy  bool
}

type gcWaiter[T any] struct {
	items []T
	done  chan error
}

// errLead tells a waiter that it runs the next call.
var errLead = errors.New("lead the next call")

func (g *groupCommit[T]) do(ctx context.Context, items ...T) error {
	w := &gcWaiter[T]{items: items, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !lead {
		// The waiter is always answered: with its call's error, or told
		// to lead.
		if err := <-w.done; !errors.Is(err, errLead) {
			return err
		}
	}
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	var all []T
	for _, b := range batch {
		all = append(all, b.items...)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	err := g.run(rctx, all)
	cancel()
	for _, b := range batch {
		if b != w {
			b.done <- err
		}
	}
	// Hand over to the first that came meanwhile, if any.
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.busy = false
		g.mu.Unlock()
		return err
	}
	next := g.queue[0]
	g.mu.Unlock()
	next.done <- errLead
	return err
}
