//go:build unix

package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestAskUnreachableRedis runs the built askbridge ask, as a person does
// in a terminal, against a Redis that is not there: its stderr is one
// line saying what failed and what to check, without go-redis's own log
// lines (which go to the process's stderr, so only a process shows them),
// and a URL without a scheme is refused with the scheme to add. At
// ASKUSER_LOG_LEVEL=debug go-redis's lines show too.
func TestAskUnreachableRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier: builds and runs the askbridge binary")
	}
	bin := walkthroughBuild(t)
	dead := freeAddr(t) // nobody listens there
	args := []string{"ask", "--question", "Ship it?", "--option", "Yes", "--option", "No"}
	tests := []struct {
		name  string
		env   []string
		flags []string
		want  []string
	}{
		{name: "embedded", env: []string{"ASKUSER_EMBEDDED_REDIS_ADDR=" + dead},
			want: []string{"askbridge ask: cannot reach Redis at redis://" + dead + " (", "connection refused",
				"ASKUSER_REDIS_URL is not set", "the bridge is running", "ASKUSER_EMBEDDED_REDIS_ADDR"}},
		{name: "ASKUSER_REDIS_URL", env: []string{"ASKUSER_REDIS_URL=redis://:hunter2hunter2@" + dead},
			want: []string{"askbridge ask: cannot reach Redis at redis://:xxxxx@" + dead + " (", "check ASKUSER_REDIS_URL", "the bridge is running"}},
		{name: "--redis", flags: []string{"--redis", "redis://" + dead},
			want: []string{"askbridge ask: cannot reach Redis at redis://" + dead + " (", "check --redis", "the bridge is running"}},
		{name: "no scheme", env: []string{"ASKUSER_REDIS_URL=" + dead},
			want: []string{"askbridge ask: ASKUSER_REDIS_URL has no scheme: add redis:// in front"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append(append([]string{}, args...), tc.flags...)...)
			cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, tc.env...)
			out, err := cmd.Output()
			var ee *exec.ExitError
			if err == nil || !errors.As(err, &ee) || ee.ExitCode() != exitError {
				t.Fatalf("exit: %v, want %d", err, exitError)
			}
			stderr := string(ee.Stderr)
			if len(out) != 0 || strings.Count(stderr, "\n") != 1 {
				t.Errorf("want nothing on stdout and one line on stderr, got:\n%s%s", out, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("stderr shows the password:\n%s", stderr)
			}
		})
	}

	t.Run("debug", func(t *testing.T) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "ASKUSER_EMBEDDED_REDIS_ADDR=" + dead, "ASKUSER_LOG_LEVEL=debug", "ASKUSER_LOG_FORMAT=text"}
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "level=DEBUG") || !strings.Contains(string(out), "component=go-redis") {
			t.Errorf("at ASKUSER_LOG_LEVEL=debug go-redis's lines do not show:\n%s", out)
		}
	})
}
