// Package testwait waits in tests for a condition on the state under test
// instead of sleeping for a guessed time: it checks the condition every few
// milliseconds until it holds or a deadline passes, so a test waits as long
// as the machine needs and no longer.
package testwait

import (
	"testing"
	"time"
)

// Every is how often a condition is checked again.
const Every = 5 * time.Millisecond

// Until checks cond until it holds (true) or within has passed (false,
// after a last check).
func Until(within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
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
