package platformtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/platformtest"
)

const secret = "canary-0123456789"

// api is a BrokenAPI whose "ok" method answers and every other fails.
func api(t *testing.T, fault string) *platformtest.BrokenAPI {
	return platformtest.NewBrokenAPI(t, fault, platformtest.BrokenOptions{
		Route: func(r *http.Request) string { return r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:] },
		Works: func(m string) bool { return m == "ok" },
		Answer: func(_ *platformtest.BrokenAPI, w http.ResponseWriter, _ *http.Request, _ string) {
			io.WriteString(w, `{"ok":true}`)
		},
		CutBody: `{"ok":`,
	})
}

// call makes a call as a channel's client would, the secret in its path
// and its Authorization header, and returns the body or the error.
func call(b *platformtest.BrokenAPI, method string) (string, error) {
	c := &http.Client{Timeout: 300 * time.Millisecond, Transport: b}
	req, _ := http.NewRequest(http.MethodPost, b.URL+"/bot"+secret+"/"+method, strings.NewReader("token="+secret))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, body)
	}
	return string(body), err
}

// TestBrokenAPI: each fault fails a call, the proxy's echo quoting the
// request; a call that works is answered, and every call is counted.
func TestBrokenAPI(t *testing.T) {
	for _, fault := range platformtest.Faults() {
		t.Run(fault, func(t *testing.T) {
			b := api(t, fault)
			if body, err := call(b, "ok"); err != nil || body != `{"ok":true}` {
				t.Errorf("a call that works: %q, %v", body, err)
			}
			_, err := call(b, "send")
			if err == nil {
				t.Fatal("a broken call did not fail")
			}
			if fault == platformtest.FaultEcho && strings.Count(err.Error(), secret) != 3 {
				t.Errorf("the echo does not quote the path, the header and the body: %v", err)
			}
			if b.Count("ok") != 1 || b.Count("send") != 1 {
				t.Errorf("counted %d and %d calls, want 1 and 1", b.Count("ok"), b.Count("send"))
			}
		})
	}
}

// recorder keeps what a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestNoSecret: a secret in an error's own text, in the reason of a
// SendError it wraps, in one of several joined errors or in a log line is
// found, and so is a call that did not fail.
func TestNoSecret(t *testing.T) {
	_, echoed := call(api(t, platformtest.FaultEcho), "send")
	tests := []struct {
		name string
		errs []error
		logs string
		want int
	}{
		{"clean", []error{errors.New("send: 502")}, "level=WARN msg=failed\n", 0},
		{"own text", []error{fmt.Errorf("send: %s", secret)}, "", 1},
		{"wrapped reason", []error{fmt.Errorf("send: %w", &engine.SendError{Reason: "bad " + secret})}, "", 1},
		{"joined", []error{errors.Join(errors.New("a"), fmt.Errorf("b %s", secret))}, "", 1},
		{"a proxy's echo", []error{echoed}, "", 1},
		{"logged", []error{errors.New("x")}, "level=INFO msg=ok\nlevel=DEBUG url=/bot" + secret + "\n", 1},
		{"no error", []error{nil}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			platformtest.NoSecret(r, []string{secret}, tt.errs, tt.logs)
			if len(r.errs) < tt.want || tt.want == 0 && len(r.errs) != 0 {
				t.Errorf("reported %q, want %d reports", r.errs, tt.want)
			}
		})
	}
}

// TestRunUntil: the channel runs until the condition holds, then stops.
func TestRunUntil(t *testing.T) {
	ran := make(chan struct{})
	stopped := false
	platformtest.RunUntil(t, func(ctx context.Context) error {
		close(ran)
		<-ctx.Done()
		stopped = true
		return ctx.Err()
	}, func() bool {
		select {
		case <-ran:
			return true
		default:
			return false
		}
	})
	if !stopped {
		t.Error("RunUntil returned before the channel stopped")
	}
}
