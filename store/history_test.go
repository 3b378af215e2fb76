package store

import (
	"fmt"
	"sync"
	"testing"
)

// TestHistory checks the web page's timeline on every backend: newest
// first, capped at historyMax (the list itself at historyMax +
// historySlack), and safe under concurrent appends.
func TestHistory(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			t.Run("order-and-max", func(t *testing.T) {
				t.Parallel()
				s := newStore(t, b, Options{})
				ctx := ctxT(t)
				got, err := s.History(ctx, 10)
				if err != nil || len(got) != 0 {
					t.Fatalf("History on an empty timeline = %q, %v; want nothing", got, err)
				}
				for i := range 5 {
					if err := s.AppendHistory(ctx, fmt.Appendf(nil, `{"id":"q%d"}`, i)); err != nil {
						t.Fatal(err)
					}
				}
				tests := []struct {
					name string
					max  int
					want []string
				}{
					{"all", 10, []string{`{"id":"q4"}`, `{"id":"q3"}`, `{"id":"q2"}`, `{"id":"q1"}`, `{"id":"q0"}`}},
					{"newest two", 2, []string{`{"id":"q4"}`, `{"id":"q3"}`}},
					{"default", 0, []string{`{"id":"q4"}`, `{"id":"q3"}`, `{"id":"q2"}`, `{"id":"q1"}`, `{"id":"q0"}`}},
				}
				for _, tc := range tests {
					t.Run(tc.name, func(t *testing.T) {
						got, err := s.History(ctx, tc.max)
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(tc.want) {
							t.Fatalf("History(%d) = %q; want %q", tc.max, got, tc.want)
						}
						for i := range got {
							if string(got[i]) != tc.want[i] {
								t.Fatalf("History(%d)[%d] = %s; want %s", tc.max, i, got[i], tc.want[i])
							}
						}
					})
				}
			})
			t.Run("missed-trim", func(t *testing.T) {
				t.Parallel()
				s := newStore(t, b, Options{})
				ctx := ctxT(t)
				// A list past its trim point (the append that should have
				// trimmed it failed): the next trim point trims it.
				for range historyMax + historySlack + 10 {
					if err := s.rdb.LPush(ctx, s.k.webHistory(), `{"id":"old"}`).Err(); err != nil {
						t.Fatal(err)
					}
				}
				for i := range historySlack {
					if err := s.AppendHistory(ctx, fmt.Appendf(nil, `{"id":"n%d"}`, i)); err != nil {
						t.Fatal(err)
					}
				}
				n, err := s.rdb.LLen(ctx, s.k.webHistory()).Result()
				// From 1,110 the 91st append makes 1,201, the next trim
				// point, and cuts the list to 1,000; 9 more follow.
				if want := int64(historyMax + 9); err != nil || n != want {
					t.Fatalf("LLEN = %d, %v; want %d (trimmed at the next trim point)", n, err, want)
				}
			})
			t.Run("capped", func(t *testing.T) {
				t.Parallel()
				s := newStore(t, b, Options{})
				ctx := ctxT(t)
				var wg sync.WaitGroup
				for w := range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range (historyMax + historySlack + 50) / 4 {
							if err := s.AppendHistory(ctx, fmt.Appendf(nil, `{"id":"w%d-%d"}`, w, i)); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				if err := s.AppendHistory(ctx, []byte(`{"id":"last"}`)); err != nil {
					t.Fatal(err)
				}
				// 1,149 appends: trimmed back to 1,000 after the 1,101st
				// (and after any that raced with it), then some more.
				n, err := s.rdb.LLen(ctx, s.k.webHistory()).Result()
				if err != nil || n < historyMax || n > historyMax+historySlack {
					t.Fatalf("LLEN = %d, %v; want %d to %d", n, err, historyMax, historyMax+historySlack)
				}
				ttl, err := s.rdb.PTTL(ctx, s.k.webHistory()).Result()
				if err != nil || ttl >= 0 {
					t.Fatalf("PTTL = %v, %v; want no expiry", ttl, err)
				}
				got, err := s.History(ctx, historyMax+500)
				if err != nil || len(got) != historyMax || string(got[0]) != `{"id":"last"}` {
					t.Fatalf("History = %d entries (first %q), %v; want %d, newest first", len(got), first(got), err, historyMax)
				}
			})
		})
	}
}

func first(b [][]byte) string {
	if len(b) == 0 {
		return ""
	}
	return string(b[0])
}
