//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeUsesModuleToolchain: make build runs the go command with the
// toolchain go.mod's toolchain line names, whatever GOTOOLCHAIN says in the
// environment or on make's command line (GOTOOLCHAIN=local would build
// with the machine's older go and its known vulnerabilities), and stops,
// saying why, without building, when the go command cannot run that
// toolchain. The go command is a stand-in that records how it was called.
func TestMakeUsesModuleToolchain(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^toolchain (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	toolchain := string(m[1])

	dir := t.TempDir()
	fakeGo := filepath.Join(dir, "go")
	// "go env GOVERSION" answers with the toolchain GOTOOLCHAIN names, as
	// the go command does once it runs it, or fails as a go command that
	// cannot download it does.
	script := `#!/bin/sh
echo "GOTOOLCHAIN=$GOTOOLCHAIN $*" >> "$FAKE_GO_LOG"
if [ "$1 $2" = "env GOVERSION" ]; then
	if [ -n "$FAKE_GO_FAIL" ]; then echo "go: download $GOTOOLCHAIN for linux/amd64: toolchain not available"; exit 1; fi
	echo "$GOTOOLCHAIN"
fi
`
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, env []string, args ...string) (string, string, error) {
		t.Helper()
		log := filepath.Join(t.TempDir(), "go.log")
		cmd := exec.Command("make", append([]string{"-C", root, "build", "GO=" + fakeGo, "BIN=" + filepath.Join(dir, "askbridge")}, args...)...)
		cmd.Env = append(os.Environ(), append(env, "FAKE_GO_LOG="+log, "MAKEFLAGS=")...)
		out, err := cmd.CombinedOutput()
		calls, _ := os.ReadFile(log)
		return string(out), string(calls), err
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"GOTOOLCHAIN=local exported", []string{"GOTOOLCHAIN=local"}, nil},
		{"GOTOOLCHAIN=local on the command line", nil, []string{"GOTOOLCHAIN=local"}},
		{"an older toolchain exported", []string{"GOTOOLCHAIN=go1.26.8"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, calls, err := run(t, tc.env, tc.args...)
			if err != nil {
				t.Fatalf("make build: %v\n%s", err, out)
			}
			if !strings.Contains(calls, " build ") {
				t.Errorf("make build did not run go build:\n%s", calls)
			}
			for _, line := range strings.Split(strings.TrimSpace(calls), "\n") {
				if !strings.HasPrefix(line, "GOTOOLCHAIN="+toolchain+" ") {
					t.Errorf("go ran with another toolchain than go.mod's %s: %s", toolchain, line)
				}
			}
		})
	}

	t.Run("toolchain not available", func(t *testing.T) {
		out, calls, err := run(t, []string{"GOTOOLCHAIN=local", "FAKE_GO_FAIL=1"})
		if err == nil {
			t.Fatalf("make build succeeded without the toolchain:\n%s", out)
		}
		if strings.Contains(calls, " build ") {
			t.Errorf("make ran go build without the toolchain:\n%s", calls)
		}
		for _, want := range []string{"go.mod asks for the " + toolchain + " toolchain", "toolchain not available", "install " + toolchain} {
			if !strings.Contains(out, want) {
				t.Errorf("make does not say %q:\n%s", want, out)
			}
		}
	})
}
