// Package testwait waits in tests for a condition on the state under test
// instead of sleeping for a guessed time: it checks the condition every few
// milliseconds until it holds or a deadline passes, so a test waits as long
// as the machine needs and no longer.
package testwait

import (
	"testing"
	"time"
)

// A condition is checked again after First, then at ever longer
// intervals up to Most: a short wait ends soon after the state changes,
// and a long one does not load a busy machine with checks.
const (
	First = 5 * time.Millisecond
	Most  = 50 * time.Millisecond
)

// Until checks cond until it holds (true) or within has passed (false,
// after a last check).
func Until(within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	every := First
	next := time.NewTimer(every)
	defer next.Stop()
	for {
		select {
		case <-next.C:
			if cond() {
				return true
			}
			every = min(2*every, Most)
			next.Reset(every)
		case <-deadline.C:
			return cond()
		}
	}
}

// For checks cond until it holds, and fails the test when it does not
// within: "timed out after <within> waiting for <what>".
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}
