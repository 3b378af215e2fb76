// Package cooldowntest is an in-process stand-in for the cooldowns the
// replicas share through Redis (engine.Coordinator's ShareCooldown and
// Cooldowns), for channel tests that run without a store: the coordinators
// of several channels share one Bus, as replicas share one Redis.
package cooldowntest

import (
	"context"
	"sync"
	"time"
)

// Bus carries cooldowns between the Members made on it.
type Bus struct {
	mu        sync.Mutex
	listeners map[*listener]bool
	shared    []Shared
}

// Shared is one cooldown a member shared.
type Shared struct {
	Platform, Bucket string
	D                time.Duration
}

type listener struct {
	from     *Member
	platform string
	fn       func(string, time.Duration)
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{listeners: map[*listener]bool{}} }

// Member is one replica's end of a bus; the zero value (no bus) shares
// into nothing and hears nothing, for a channel tested alone.
type Member struct {
	Bus *Bus
}

// ShareCooldown hands the cooldown to every other member listening for the
// platform, at once.
func (m *Member) ShareCooldown(_ context.Context, platform, bucket string, d time.Duration) error {
	if m.Bus == nil {
		return nil
	}
	m.Bus.mu.Lock()
	m.Bus.shared = append(m.Bus.shared, Shared{platform, bucket, d})
	var fns []func(string, time.Duration)
	for l := range m.Bus.listeners {
		if l.from != m && l.platform == platform {
			fns = append(fns, l.fn)
		}
	}
	m.Bus.mu.Unlock()
	for _, fn := range fns {
		fn(bucket, d)
	}
	return nil
}

// Cooldowns calls fn with what other members share for platform until ctx
// is done.
func (m *Member) Cooldowns(ctx context.Context, platform string, fn func(bucket string, d time.Duration)) error {
	if m.Bus == nil {
		<-ctx.Done()
		return nil
	}
	l := &listener{from: m, platform: platform, fn: fn}
	m.Bus.mu.Lock()
	m.Bus.listeners[l] = true
	m.Bus.mu.Unlock()
	<-ctx.Done()
	m.Bus.mu.Lock()
	delete(m.Bus.listeners, l)
	m.Bus.mu.Unlock()
	return nil
}

// Listening is how many members listen for platform.
func (b *Bus) Listening(platform string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for l := range b.listeners {
		if l.platform == platform {
			n++
		}
	}
	return n
}

// Shared lists every cooldown shared so far, in order.
func (b *Bus) Shared() []Shared {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Shared(nil), b.shared...)
}
