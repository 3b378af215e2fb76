package telegram_test

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/askbridge/askbridge"
)

// memStore keeps in memory the few things the channel itself stores
// (event dedupe, the messages of a question, one question to read) for
// tests that need no Redis. Any other method panics: the embedded
// interface is nil.
type memStore struct {
	askbridge.Store

	mu   sync.Mutex
	seen map[string]bool
	msgs map[string][]askbridge.MessageRef
	rec  askbridge.Record
}

func newMemStore(rec askbridge.Record) *memStore {
	return &memStore{seen: map[string]bool{}, msgs: map[string][]askbridge.MessageRef{}, rec: rec}
}

func (m *memStore) FirstSeen(_ context.Context, platform, id string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := platform + ":" + id
	if m.seen[key] {
		return false, nil
	}
	m.seen[key] = true
	return true, nil
}

func (m *memStore) AddMessage(_ context.Context, id string, ref askbridge.MessageRef) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.msgs[id], ref) {
		m.msgs[id] = append(m.msgs[id], ref)
	}
	return nil
}

func (m *memStore) Messages(_ context.Context, id string) ([]askbridge.MessageRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs[id]), nil
}

func (m *memStore) Get(_ context.Context, id string) (askbridge.Record, bool, error) {
	if id != m.rec.ID {
		return askbridge.Record{}, false, nil
	}
	return m.rec, true, nil
}
