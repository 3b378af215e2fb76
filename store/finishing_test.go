package store

import (
	"slices"
	"testing"
	"time"
)

// TestFinishing checks the list of ended questions whose messages are still
// to be edited, on every backend.
func TestFinishing(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, b, Options{})
			ctx := ctxT(t)
			base := time.UnixMilli(1_800_000_000_000)
			for i, id := range []string{"f-1", "f-2", "f-3"} {
				if added, err := s.MarkFinishing(ctx, id, base.Add(time.Duration(i)*time.Minute)); err != nil || !added {
					t.Fatalf("mark %s: added %v, %v", id, added, err)
				}
			}
			// Marking again is harmless, and keeps the first time.
			if added, err := s.MarkFinishing(ctx, "f-1", base.Add(time.Hour)); err != nil || added {
				t.Fatalf("second mark: added %v, %v", added, err)
			}
			got, err := s.Unfinished(ctx, base.Add(time.Minute), 10)
			if err != nil || !slices.Equal(got, []string{"f-1", "f-2"}) {
				t.Errorf("Unfinished up to +1m = %v, %v; want [f-1 f-2]", got, err)
			}
			if got, _ := s.Unfinished(ctx, base.Add(time.Hour), 1); !slices.Equal(got, []string{"f-1"}) {
				t.Errorf("Unfinished max 1 = %v; want the oldest", got)
			}
			for _, id := range []string{"f-1", "f-1", "unknown"} {
				if err := s.Finished(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := s.Unfinished(ctx, base.Add(time.Hour), 10); !slices.Equal(got, []string{"f-2", "f-3"}) {
				t.Errorf("after Finished(f-1): %v; want [f-2 f-3]", got)
			}
			// Kept fresh, a mark moves past the cut-off; a question no
			// longer marked is not marked again.
			for _, id := range []string{"f-2", "f-1"} {
				if err := s.KeepFinishing(ctx, id, base.Add(2*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := s.Unfinished(ctx, base.Add(time.Hour), 10); !slices.Equal(got, []string{"f-3"}) {
				t.Errorf("after KeepFinishing(f-2): %v; want [f-3]", got)
			}
			if got, _ := s.Unfinished(ctx, base.Add(3*time.Hour), 10); !slices.Equal(got, []string{"f-3", "f-2"}) {
				t.Errorf("later: %v; want [f-3 f-2] (f-1 stays finished)", got)
			}
		})
	}
}
