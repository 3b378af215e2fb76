package dendritetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Version is the Dendrite release the tests run: the last release of
// github.com/matrix-org/dendrite (Apache-2.0), served by the module proxy.
const Version = "v0.13.8"

// pkg is the command built: the monolith server.
const pkg = "github.com/matrix-org/dendrite/cmd/dendrite@" + Version

// buildTimeout bounds a cold build: downloading Dendrite's modules and
// compiling about 600 packages takes minutes on a small machine.
const buildTimeout = 15 * time.Minute

// EnvBinary names an environment variable that, when set, is the path of
// a Dendrite binary to run instead of the one built into the cache.
const EnvBinary = "ASKBRIDGE_DENDRITE"

var built struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of the Dendrite binary, building it first when
// the cache does not hold it yet. One build per machine: the binary is
// kept in CacheDir, and a lock on a file there makes concurrent test
// binaries (go test runs packages in parallel) wait for the first one's
// build instead of repeating it. Safe to call concurrently.
func Binary() (string, error) {
	built.once.Do(func() {
		if p := os.Getenv(EnvBinary); p != "" {
			built.path = p
			if _, err := os.Stat(p); err != nil {
				built.err = fmt.Errorf("dendritetest: %s=%s: %w", EnvBinary, p, err)
			}
			return
		}
		built.path, built.err = buildCached()
	})
	return built.path, built.err
}

// CacheDir is the directory the binary is built into:
// os.UserCacheDir()/askbridge-test/dendrite-<Version> ($XDG_CACHE_HOME or
// ~/.cache on Linux).
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("dendritetest: no cache directory (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(base, "askbridge-test", "dendrite-"+Version), nil
}

// buildCached returns the cached binary, building it under the lock when
// it is missing.
func buildCached() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("dendritetest: create the cache directory: %w", err)
	}
	bin := filepath.Join(dir, "dendrite")
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := build(dir, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// build runs go install for the Dendrite command into a fresh directory
// under dir, then renames the binary to bin, so a build that fails or is
// killed never leaves a binary that looks complete.
//
// go install pkg@version builds with Dendrite's own go.mod and go.sum
// (checked against the checksum database), outside any module, so the
// build is the same on every machine and adds nothing to askbridge's
// go.mod. CGO_ENABLED=0 selects Dendrite's pure-Go SQLite driver
// (modernc.org/sqlite, internal/sqlutil/sqlite_native.go): no C compiler
// is needed.
func build(dir, bin string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("dendritetest: building Dendrite needs the go command on PATH: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("dendritetest: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", "-trimpath", pkg)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("dendritetest: go install %s failed (the Matrix tests need it; check that the module proxy is reachable): %w\n%s",
			pkg, err, tail(out, 40))
	}
	if err := os.Rename(filepath.Join(tmp, "dendrite"), bin); err != nil {
		return fmt.Errorf("dendritetest: keep the built binary: %w", err)
	}
	return nil
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
