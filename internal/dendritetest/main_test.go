package dendritetest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// hs is the homeserver this package's tests share (nil under -short).
var hs *Server

func TestMain(m *testing.M) {
	srv, stop, err := Shared()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hs = srv
	code := m.Run()
	stop()
	// Every client and proxy connection is closed with its server.
	if err := goleak.Find(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "dendritetest: goroutines left after the tests:", err)
		code = 1
	}
	os.Exit(code)
}
