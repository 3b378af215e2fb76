package web_test

import (
	"os"
	"testing"

	"github.com/askbridge/askbridge/internal/webtest"
)

// TestMain starts one redis-server for the package (webtest.Main). After
// the tests, no goroutine may be left: every engine, event stream, events
// tail and page client must have ended with its test.
func TestMain(m *testing.M) { os.Exit(webtest.Main(m, "web")) }
