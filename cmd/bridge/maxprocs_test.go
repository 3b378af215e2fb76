package main

import "testing"

// TestMaxProcs checks that the bridge runs on defaultMaxProcs processors
// unless GOMAXPROCS is set, which wins.
func TestMaxProcs(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := maxProcs(getenv); got != 1 {
		t.Errorf("GOMAXPROCS unset: maxProcs = %d, want 1", got)
	}
	env["GOMAXPROCS"] = "4"
	if got := maxProcs(getenv); got != 0 {
		t.Errorf("GOMAXPROCS=4: maxProcs = %d, want 0 (leave the runtime's)", got)
	}
}
