package store

import (
	"testing"
	"time"
)

// TestSendMarks: a send is marked once; a second mark reads the first's
// value; a clear with another value leaves it, with its own value takes it
// back, and a repeat is harmless.
func TestSendMarks(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, b, Options{Retention: time.Hour})
			ctx := ctxT(t)
			if _, found, err := s.SendMark(ctx, "q1", "email:0"); err != nil || found {
				t.Fatalf("SendMark before = %v, %v", found, err)
			}
			if held, first, err := s.MarkSend(ctx, "q1", "email:0", "<a@x>", time.Minute); err != nil || !first || held != "<a@x>" {
				t.Fatalf("first MarkSend = %q, %v, %v", held, first, err)
			}
			if held, first, err := s.MarkSend(ctx, "q1", "email:0", "<b@x>", time.Minute); err != nil || first || held != "<a@x>" {
				t.Fatalf("second MarkSend = %q, %v, %v", held, first, err)
			}
			if err := s.ClearSend(ctx, "q1", "email:0", "<b@x>"); err != nil {
				t.Fatal(err)
			}
			if v, found, err := s.SendMark(ctx, "q1", "email:0"); err != nil || !found || v != "<a@x>" {
				t.Fatalf("SendMark after a foreign clear = %q, %v, %v", v, found, err)
			}
			for range 2 {
				if err := s.ClearSend(ctx, "q1", "email:0", "<a@x>"); err != nil {
					t.Fatal(err)
				}
			}
			if _, found, err := s.SendMark(ctx, "q1", "email:0"); err != nil || found {
				t.Fatalf("SendMark after clear = %v, %v", found, err)
			}
			if _, first, err := s.MarkSend(ctx, "q1", "email:0", "<c@x>", time.Minute); err != nil || !first {
				t.Fatalf("MarkSend after clear = %v, %v", first, err)
			}
		})
	}
}
