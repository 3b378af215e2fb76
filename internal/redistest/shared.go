package redistest

import (
	"errors"
	"fmt"
	"os"

	"github.com/alicebob/miniredis/v2"
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
