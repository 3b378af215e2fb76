package chaos

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a replica when the test binary was started as one (see
// spawn), and otherwise the tests, failing the package when a test left a
// goroutine behind. The chaos suite is slow (replica processes killed and
// restarted, Redis cut): under -short (the fast tier) it does not run.
func TestMain(m *testing.M) {
	if raw := os.Getenv(replicaEnv); raw != "" {
		os.Exit(runReplica(raw))
	}
	flag.Parse()
	if testing.Short() {
		fmt.Println("telegram/chaos: the chaos suite runs in the full tier only (go test without -short)")
		os.Exit(0)
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
