package dendritetest

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
)

func TestBinaryIsTheRelease(t *testing.T) {
	SkipShort(t)
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s -version: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), strings.TrimPrefix(Version, "v")) {
		t.Errorf("%s -version printed %q, want %s", bin, out, Version)
	}
}

// Dendrite's own rate limit covers joins, invites, typing and the like,
// never sends: with one request per 10 seconds allowed, three sends in a
// row pass and the second typing notice is refused.
func TestDendriteRateLimitSparesSends(t *testing.T) {
	s := StartWith(t, Options{RateLimit: &RateLimit{Threshold: 1, Cooloff: 10 * time.Second}})
	bot, _ := s.Register(t, "bot")
	room := s.CreateRoom(t, bot)
	cli := s.Client(t, bot)
	for i := 0; i < 3; i++ {
		Send(t, cli, room, event.EventMessage, map[string]any{"msgtype": "m.text", "body": "hello"})
	}
	ctx := context.Background()
	if _, err := cli.UserTyping(ctx, room, true, time.Second); err != nil {
		t.Fatalf("first typing notice: %v", err)
	}
	_, err := cli.UserTyping(ctx, room, true, time.Second)
	var httpErr mautrix.HTTPError
	if !errors.As(err, &httpErr) || httpErr.RespError == nil {
		t.Fatalf("second typing notice: got %v, want a 429", err)
	}
	if httpErr.Response.StatusCode != 429 || httpErr.RespError.ErrCode != "M_LIMIT_EXCEEDED" {
		t.Errorf("second typing notice: %d %s, want 429 M_LIMIT_EXCEEDED", httpErr.Response.StatusCode, httpErr.RespError.ErrCode)
	}
	if got := httpErr.RespError.ExtraData["retry_after_ms"]; got != float64(10000) {
		t.Errorf("retry_after_ms = %v, want 10000 (the cooloff)", got)
	}

	// Dendrite kept the databases in WAL mode (writeDatabases): each
	// file's header still says so after its migrations and these writes,
	// and the written ones have their write-ahead log beside them.
	for _, name := range databases {
		head := make([]byte, 20)
		f, err := os.Open(filepath.Join(s.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadFull(f, head)
		f.Close()
		if err != nil || head[18] != 2 || head[19] != 2 {
			t.Errorf("%s: file format versions %v (%v), want 2 and 2 (WAL)", name, head[18:20], err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, "roomserver.db-wal")); err != nil {
		t.Errorf("the room server's database has no write-ahead log: %v", err)
	}

	// Close kills the process (checked here, on a server of this test's
	// own, rather than starting one more).
	s.Close()
	select {
	case <-s.exited:
	default:
		t.Errorf("Dendrite (pid %d) is still running after Close", s.cmd.Process.Pid)
	}
	s.Close() // safe to repeat
}

func TestWriteConfigRefusesABadRateLimit(t *testing.T) {
	_, _, err := writeConfig(t.TempDir(), Options{RateLimit: &RateLimit{Threshold: 0, Cooloff: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "Threshold") {
		t.Errorf("a zero threshold: got %v, want an error naming Threshold", err)
	}
}
