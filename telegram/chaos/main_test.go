package chaos

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a replica when the test binary was started as one (see
// spawn), and otherwise the tests, failing the package when a test left a
// goroutine behind.
func TestMain(m *testing.M) {
	if raw := os.Getenv(replicaEnv); raw != "" {
		os.Exit(runReplica(raw))
	}
	code := m.Run()
	// The agent's and the front's HTTP keep-alive connections are not the
	// tests' goroutines.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
