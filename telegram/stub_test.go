package telegram_test

import (
	"context"
	"sync"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/cooldowntest"
)

// memCoord keeps the update dedupe in memory for tests that need no
// Redis (the one thing the channel asks of a coordinator outside of
// polling). Any other method panics: the embedded interface is nil.
type memCoord struct {
	engine.Coordinator
	// cool shares and hears cooldowns (on no bus: nothing).
	cool cooldowntest.Member

	mu   sync.Mutex
	seen map[string]bool
}

func (m *memCoord) ShareCooldown(ctx context.Context, platform, bucket string, d time.Duration) error {
	return m.cool.ShareCooldown(ctx, platform, bucket, d)
}

func (m *memCoord) Cooldowns(ctx context.Context, platform string, fn func(string, time.Duration)) error {
	return m.cool.Cooldowns(ctx, platform, fn)
}

func newMemCoord() *memCoord { return &memCoord{seen: map[string]bool{}} }

func (m *memCoord) FirstSeen(_ context.Context, platform, id string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := platform + ":" + id
	if m.seen[key] {
		return false, nil
	}
	m.seen[key] = true
	return true, nil
}

func (m *memCoord) ForgetSeen(_ context.Context, platform, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, platform+":"+id)
	return nil
}

// sendAll shows plan in chat from its first part and returns the messages
// Send handed to Sent, in order.
func sendAll(ctx context.Context, ch engine.Channel, chat string, plan engine.Plan) ([]engine.MessageRef, error) {
	var refs []engine.MessageRef
	err := ch.Send(ctx, engine.Delivery{Chat: chat, Plan: plan, Sent: func(ref engine.MessageRef) error {
		refs = append(refs, ref)
		return nil
	}})
	return refs, err
}
