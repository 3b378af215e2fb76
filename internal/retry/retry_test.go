package retry

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestBackoffDoublesWithJitterUpToMax(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 800 * time.Millisecond}
	want := []time.Duration{100, 200, 400, 800, 800}
	for i, w := range want {
		w *= time.Millisecond
		got := b.Next()
		if got > w || got < w-w/5 {
			t.Fatalf("wait %d = %v, want within [%v, %v]", i, got, w-w/5, w)
		}
	}
	b.Reset()
	if got := b.Next(); got > 100*time.Millisecond {
		t.Fatalf("after Reset = %v, want at most Min", got)
	}
}

func TestBackoffZeroValueHasSaneBounds(t *testing.T) {
	var b Backoff
	if got := b.Next(); got <= 0 || got > 100*time.Millisecond {
		t.Fatalf("first wait = %v", got)
	}
	for range 20 {
		if got := b.Next(); got > 30*time.Second {
			t.Fatalf("wait = %v, over the 30s default cap", got)
		}
	}
}

func TestSleepOnSimulatedClock(t *testing.T) {
	clk := clockwork.NewFakeClock()
	done := make(chan bool)
	go func() { done <- SleepOn(context.Background(), clk, time.Hour) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if !<-done {
		t.Fatal("SleepOn reported an interrupted sleep")
	}
}

func TestSleepStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a done context reported a full sleep")
	}
	clk := clockwork.NewFakeClock()
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- SleepOn(ctx, clk, time.Hour) }()
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if err := clk.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if <-done {
		t.Fatal("a cancelled SleepOn reported a full sleep")
	}
}
