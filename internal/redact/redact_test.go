package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/internal/redact"
)

// TestErr: a secret in a *url.Error's URL, in a wrapper's text, or matched
// by Also is taken out; the scrubbed error still answers errors.Is and
// errors.As; an error without secrets comes back as it is.
func TestErr(t *testing.T) {
	s := redact.New("s3cret-token", "")
	s.Also = func(str string) string { return strings.ReplaceAll(str, "xoxb-123", redact.Marker) }
	ue := &url.Error{Op: "Post", URL: "https://api.example/bots3cret-token/send", Err: errors.New("connection reset")}
	err := s.Err(fmt.Errorf("send (token s3cret-token, other xoxb-123): %w", ue))
	if msg := err.Error(); strings.Contains(msg, "s3cret") || strings.Contains(msg, "xoxb-123") || !strings.Contains(msg, redact.Marker) {
		t.Fatalf("scrubbed text %q", msg)
	}
	var got *url.Error
	if !errors.As(err, &got) || strings.Contains(got.URL, "s3cret") {
		t.Fatalf("errors.As: %v, URL %q", got, got.URL)
	}
	if !errors.Is(err, ue) {
		t.Fatal("errors.Is lost the wrapped error")
	}
	plain := errors.New("nothing secret")
	if s.Err(plain) != plain || s.Err(nil) != nil {
		t.Fatal("an error without secrets must come back as it is")
	}
	var zero redact.Scrubber
	if zero.Text("a b") != "a b" {
		t.Fatal("the zero Scrubber changed a text")
	}
}
