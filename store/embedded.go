package store

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Embedded is an in-process Redis (miniredis) for running without a Redis
// server: one replica, state lost on exit. It speaks the Redis protocol on a
// loopback address, so agents reach it with any Redis client (redis-cli -p
// <port>), and the same Store code runs on top of it. Keys expire by the
// wall clock, checked every expiryTick.
type Embedded struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// expiryTick is how often the embedded server advances its key TTLs by the
// time elapsed. miniredis's own ClockTTL does that on every command, over
// every key (a sort of all keys per command), which slows a busy server to
// a crawl; a tick costs one such pass per expiryTick instead.
const expiryTick = 100 * time.Millisecond

// StartEmbedded starts an embedded Redis listening on addr, which must be a
// loopback address ("127.0.0.1:6379", "localhost:0"; "" means
// "127.0.0.1:0", a free port). It has no password, which is why it never
// listens beyond this machine.
func StartEmbedded(addr string) (*Embedded, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("store: embedded redis: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("store: embedded redis: %s is not a loopback address", addr)
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("store: embedded redis: %w", err)
	}
	e := &Embedded{m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go e.expire()
	return e, nil
}

// expire advances the TTLs by the wall-clock time elapsed, every tick.
func (e *Embedded) expire() {
	defer close(e.done)
	t := time.NewTicker(expiryTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr is the host:port it listens on.
func (e *Embedded) Addr() string { return e.m.Addr() }

// URL is its address for Connect: redis://host:port.
func (e *Embedded) URL() string { return "redis://" + e.m.Addr() }

// Close stops it; its state is gone. Safe to repeat.
func (e *Embedded) Close() {
	e.once.Do(func() {
		close(e.stop)
		<-e.done
		e.m.Close()
	})
}
