package client

import (
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID()
		if !askbridge.ValidRequestID(id) || !strings.HasPrefix(id, IDPrefix) || len(id) != len(IDPrefix)+32 || seen[id] {
			t.Fatalf("NewID() = %q", id)
		}
		seen[id] = true
	}
}

func TestOptions(t *testing.T) {
	o := Options{PollTimeout: 1500 * time.Millisecond}.withDefaults()
	if o.Prefix != DefaultPrefix || o.PollTimeout != time.Second || o.CancelGrace != DefaultCancelGrace || o.ResultGrace != DefaultResultGrace {
		t.Errorf("defaults %+v", o)
	}
	if o := (Options{PollTimeout: time.Millisecond}).withDefaults(); o.PollTimeout != time.Second {
		t.Errorf("a poll under a second: %s", o.PollTimeout)
	}
	for _, p := range []string{"a{b", "a b", "a\nb", strings.Repeat("p", 65)} {
		if checkPrefix(p) == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	if err := checkPrefix("team-a:askuser:"); err != nil {
		t.Error(err)
	}
	if !validStreamID("0") || !validStreamID("1712345678901-3") || validStreamID("$") || validStreamID("1-x") || validStreamID("") {
		t.Error("validStreamID")
	}
}
