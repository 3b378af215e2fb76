package telegramtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (a
// server not closed, a poll left hanging).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
