package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	if !Until(10*time.Second, func() bool { return n.Add(1) == 3 }) {
		t.Fatal("a condition that holds at the third check timed out")
	}
	if n.Load() != 3 {
		t.Errorf("checked %d times, want 3", n.Load())
	}
	start := time.Now()
	if Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds held")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Error("gave up before the deadline")
	}
}
