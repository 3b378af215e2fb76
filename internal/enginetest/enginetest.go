// Package enginetest holds what tests of the engine and its channels share.
package enginetest

import (
	"context"
	"sync"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/cooldowntest"
)

// Store is the whole of the store an engine takes (EngineConfig.Store):
// every family of it. Tests that wrap a store to inject faults embed it.
// No part of the engine sees it whole.
type Store interface {
	engine.Coordinator
	engine.Requests
	engine.Questions
	engine.Ends
	engine.Timers
	engine.Places
	engine.Publisher
	engine.Offers
	engine.Standings
}

// MemCoord is the share of engine.Coordinator a channel uses without a
// store, in memory: event dedupe (FirstSeen, ForgetSeen) and cooldowns
// (through Cool, on no bus unless a test sets Cool.Bus). Any other method
// panics (the embedded interface is nil), which shows a channel reaching
// past its share. Safe for concurrent use.
type MemCoord struct {
	engine.Coordinator
	// Cool shares and hears cooldowns.
	Cool cooldowntest.Member

	mu   sync.Mutex
	seen map[string]bool
}

// NewMemCoord returns an empty MemCoord.
func NewMemCoord() *MemCoord { return &MemCoord{seen: map[string]bool{}} }

// FirstSeen reports whether the platform's event id is new, and marks it.
func (m *MemCoord) FirstSeen(_ context.Context, platform, id string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := platform + ":" + id
	if m.seen[key] {
		return false, nil
	}
	m.seen[key] = true
	return true, nil
}

// ForgetSeen undoes FirstSeen.
func (m *MemCoord) ForgetSeen(_ context.Context, platform, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, platform+":"+id)
	return nil
}

// ShareCooldown tells the other members of Cool's bus of a wait.
func (m *MemCoord) ShareCooldown(ctx context.Context, platform, bucket string, d time.Duration) error {
	return m.Cool.ShareCooldown(ctx, platform, bucket, d)
}

// Cooldowns hears the waits other members share.
func (m *MemCoord) Cooldowns(ctx context.Context, platform string, fn func(string, time.Duration)) error {
	return m.Cool.Cooldowns(ctx, platform, fn)
}
