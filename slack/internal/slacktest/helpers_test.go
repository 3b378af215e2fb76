package slacktest_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run when a test leaves a goroutine behind: a fake
// that is closed stops its websockets, pings and redelivery timers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func httptestServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
