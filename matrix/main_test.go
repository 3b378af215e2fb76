package matrix_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/askbridge/askbridge/internal/dendritetest"
)

// hs is the Dendrite homeserver the package's tests share; nil under
// -short, where every test that needs it skips.
var hs *dendritetest.Server

func TestMain(m *testing.M) {
	srv, stop, err := dendritetest.Shared()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hs = srv
	code := m.Run()
	stop()
	os.Exit(code)
}
