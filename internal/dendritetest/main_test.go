package dendritetest

import (
	"fmt"
	"os"
	"testing"
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
	os.Exit(code)
}
