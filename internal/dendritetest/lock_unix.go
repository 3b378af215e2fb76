//go:build unix

package dendritetest

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file at path, waiting while
// another process holds it, and returns the function that releases it.
// The kernel releases the lock when the process dies, so a test binary
// killed mid-build never leaves the cache locked.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dendritetest: open the build lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("dendritetest: lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
