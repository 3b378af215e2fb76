package browsertest

import (
	"os"
	"testing"

	"github.com/askbridge/askbridge/internal/webtest"
)

// TestMain starts one redis-server for the package (webtest.Main). After
// the tests and after the browser has stopped, no goroutine may be left.
func TestMain(m *testing.M) { os.Exit(webtest.Main(m, "web/browsertest", stopBrowser)) }
