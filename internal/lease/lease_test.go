package lease_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/lease"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

var redisAddr string

func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "lease", &redisAddr)) }

var seq atomic.Int64

// newStore is a store on the shared test Redis with a prefix of its own.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return store.New(rdb, store.Options{Prefix: fmt.Sprintf("leasetest%d:", seq.Add(1))})
}

// holder runs Hold in the background and reports its terms.
type holder struct {
	name    string
	cancel  context.CancelFunc
	done    chan struct{}
	holding atomic.Bool
	terms   atomic.Int64
	standby atomic.Int64
	ended   chan engine.Lease // a term's lease, as the term ends
}

func hold(t *testing.T, st engine.Coordinator, name string, p lease.Params) *holder {
	t.Helper()
	h := &holder{name: name, done: make(chan struct{}), ended: make(chan engine.Lease, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	p.Coord, p.Holder = st, name
	if p.Name == "" {
		p.Name = "test:lease"
	}
	if p.TTL == 0 {
		p.TTL = 600 * time.Millisecond
	}
	p.Standby = func() { h.standby.Add(1) }
	go func() {
		defer close(h.done)
		lease.Hold(ctx, p, func(ctx context.Context, l engine.Lease) time.Duration {
			h.holding.Store(true)
			h.terms.Add(1)
			<-ctx.Done()
			h.holding.Store(false)
			h.ended <- l
			return 0
		})
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *holder) stop() {
	h.cancel()
	<-h.done
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testwait.Until(10*time.Second, cond) {
		t.Fatalf("never: %s", what)
	}
}

// TestOneHolderAndHandOver: of two replicas one holds the lease and the
// other stands by; when the holder stops it releases the lease and the
// other takes it at once, with a greater fencing token.
func TestOneHolderAndHandOver(t *testing.T) {
	st := newStore(t)
	a := hold(t, st, "a", lease.Params{})
	eventually(t, "a holds", a.holding.Load)
	b := hold(t, st, "b", lease.Params{})
	eventually(t, "b stands by", func() bool { return b.standby.Load() > 0 })
	if b.holding.Load() {
		t.Fatal("two holders at once")
	}
	a.stop()
	first := <-a.ended
	eventually(t, "b takes over", b.holding.Load)
	b.stop()
	second := <-b.ended
	if second.Token <= first.Token {
		t.Fatalf("fencing token went from %d to %d", first.Token, second.Token)
	}
}

// TestLostLeaseEndsTerm: when another holder takes the lease (it expired
// while this one could not renew), the term's context ends.
func TestLostLeaseEndsTerm(t *testing.T) {
	st := newStore(t)
	a := hold(t, st, "a", lease.Params{TTL: time.Minute, RenewEvery: 20 * time.Millisecond})
	eventually(t, "a holds", a.holding.Load)
	// Take the lease the way its expiry would let another replica: give
	// a's up behind its back and acquire it as "thief".
	ctx := context.Background()
	// a holds it under its name and the nonce of its hold.
	held, ok, err := st.AcquireLease(ctx, "test:lease", "someone", time.Minute)
	if err != nil || ok || !strings.HasPrefix(held.Holder, "a#") {
		t.Fatalf("the holder: %+v %v %v; want a#<nonce>", held, ok, err)
	}
	cur, ok, err := st.AcquireLease(ctx, "test:lease", held.Holder, time.Minute)
	if err != nil || !ok {
		t.Fatalf("re-acquire as a: %v %v", ok, err)
	}
	if err := st.ReleaseLease(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.AcquireLease(ctx, "test:lease", "thief", time.Minute); err != nil || !ok {
		t.Fatalf("steal: %v %v", ok, err)
	}
	select {
	case <-a.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the term went on after its lease was taken")
	}
}

// TestAbandonKeepsLease: a holder that stops as a crashed process would
// leaves its lease to expire; nobody takes it before then.
func TestAbandonKeepsLease(t *testing.T) {
	st := newStore(t)
	a := hold(t, st, "a", lease.Params{TTL: time.Minute, Abandon: func() bool { return true }})
	eventually(t, "a holds", a.holding.Load)
	a.stop()
	_, ok, err := st.AcquireLease(context.Background(), "test:lease", "b", time.Minute)
	if err != nil || ok {
		t.Fatalf("b took an abandoned lease before it expired: %v %v", ok, err)
	}
}

// TestStoreDownRetries: a store that cannot be reached is retried with
// backoff and reported through Failed; the term starts once it answers.
func TestStoreDownRetries(t *testing.T) {
	st := newStore(t)
	flaky := &flakyCoord{Coordinator: st}
	flaky.fail.Store(true)
	var failed atomic.Int64
	a := hold(t, flaky, "a", lease.Params{Failed: func(error) { failed.Add(1) }})
	eventually(t, "failures reported", func() bool { return failed.Load() >= 2 })
	if a.holding.Load() {
		t.Fatal("a term ran without the lease")
	}
	flaky.fail.Store(false)
	eventually(t, "a holds once the store answers", a.holding.Load)
}

// flakyCoord fails AcquireLease while fail is set.
type flakyCoord struct {
	engine.Coordinator
	fail atomic.Bool
}

func (f *flakyCoord) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (engine.Lease, bool, error) {
	if f.fail.Load() {
		return engine.Lease{}, false, errors.New("connection refused")
	}
	return f.Coordinator.AcquireLease(ctx, name, holder, ttl)
}

// renewFails refuses every renewal with a store error.
type renewFails struct{ engine.Coordinator }

func (renewFails) RenewLease(context.Context, engine.Lease, time.Duration) (bool, error) {
	return false, errors.New("i/o timeout")
}

// TestValidEndsWithTheLease: a term's context says the lease is valid
// while it is surely held, and stops saying so once the TTL has passed
// since the last renewal that succeeded — as after the process was paused
// — even before the renewer ends the term. A context of no term is never
// valid.
func TestValidEndsWithTheLease(t *testing.T) {
	if lease.Valid(context.Background()) {
		t.Fatal("a context of no term is valid")
	}
	st := newStore(t)
	clk := clockwork.NewFakeClock()
	terms := make(chan context.Context, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		lease.Hold(ctx, lease.Params{Coord: renewFails{st}, Name: "test:valid", Holder: "a", TTL: time.Minute, Clock: clk},
			func(ctx context.Context, _ engine.Lease) time.Duration {
				terms <- ctx
				<-ctx.Done()
				return 0
			})
	}()
	defer func() { cancel(); <-done }()
	term := <-terms
	if !lease.Valid(term) {
		t.Fatal("a fresh term is not valid")
	}
	clk.Advance(50 * time.Second)
	if !lease.Valid(term) {
		t.Fatal("not valid within the TTL")
	}
	clk.Advance(11 * time.Second)
	if lease.Valid(term) {
		t.Fatal("still valid past the TTL with every renewal failed")
	}
}

// TestSameNameHoldsApart: two replicas given the same name (a copied
// configuration) do not both hold the lease: one holds, the other stands
// by. The store lets a holder take again what it holds, so before each
// Hold named itself apart both would "hold" it and poll at once.
func TestSameNameHoldsApart(t *testing.T) {
	st := newStore(t)
	a := hold(t, st, "replica-1", lease.Params{})
	eventually(t, "the first holds", a.holding.Load)
	b := hold(t, st, "replica-1", lease.Params{})
	eventually(t, "the second stands by", func() bool { return b.standby.Load() > 0 })
	if b.holding.Load() || b.terms.Load() != 0 {
		t.Fatal("both replicas named replica-1 hold the lease")
	}
	a.stop()
	eventually(t, "the second takes over", b.holding.Load)
}
