package redistest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"
)

// Shared starts the one Redis a package's tests share: a real redis-server
// on a free loopback port, or, when redis-server is not installed and not
// Required, an in-process miniredis (with a note on stderr). It returns the
// address and a function that stops the server. Call it from TestMain:
//
//	func TestMain(m *testing.M) {
//		addr, stop, err := redistest.Shared("telegram")
//		if err != nil { fmt.Fprintln(os.Stderr, err); os.Exit(1) }
//		redisAddr = addr
//		code := m.Run()
//		stop()
//		os.Exit(code)
//	}
func Shared(pkg string) (addr string, stop func(), err error) {
	srv, err := StartServer()
	switch {
	case err == nil:
		return srv.Addr, srv.Close, nil
	case errors.Is(err, ErrNotInstalled) && !Required():
		mr, err := miniredis.Run()
		if err != nil {
			return "", nil, fmt.Errorf("%s tests: start miniredis: %w", pkg, err)
		}
		fmt.Fprintf(os.Stderr, "%s tests: redis-server not installed, running on miniredis\n", pkg)
		return mr.Addr(), mr.Close, nil
	}
	return "", nil, fmt.Errorf("%s tests need redis-server (ASKBRIDGE_REQUIRE_REDIS=%q): %w", pkg, os.Getenv("ASKBRIDGE_REQUIRE_REDIS"), err)
}

// Main runs a package's tests on the Redis of Shared and returns the exit
// code for os.Exit. After the tests it runs after (stopping what the
// package's tests share: a browser, idle HTTP connections), stops Redis,
// and fails the run when a goroutine is left behind (goleak): every
// engine, channel, fake and client a test started must have stopped. Call
// it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "telegram", &redisAddr)) }
func Main(m *testing.M, pkg string, addr *string, after ...func()) int {
	a, stop, err := Shared(pkg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*addr = a
	code := m.Run()
	for _, f := range after {
		f()
	}
	stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, pkg+" tests leaked goroutines:", err)
			code = 1
		}
	}
	return code
}
