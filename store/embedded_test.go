package store

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/redistest"
)

// With redis-server on the PATH and a data directory, the embedded Redis is
// a redis-server with an append-only file there: what one run wrote, the
// next run started on the same directory still has.
func TestOpenEmbeddedRedisServerKeepsData(t *testing.T) {
	redistest.NeedServer(t)
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()

	e, err := OpenEmbedded(EmbeddedOptions{Addr: "localhost:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind() != EmbeddedRedisServer || !e.Durable() || e.DataDir() != dir {
		t.Fatalf("kind %q, durable %v, dir %q; want a redis-server in %s", e.Kind(), e.Durable(), e.DataDir(), dir)
	}
	c := redis.NewClient(&redis.Options{Addr: e.Addr()})
	if got := c.ConfigGet(ctx, "appendonly").Val()["appendonly"]; got != "yes" {
		t.Errorf("appendonly = %q", got)
	}
	if err := c.Set(ctx, "askuser:result:{kept}", "answered", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	e.Close()
	e.Close() // safe to repeat

	again, err := OpenEmbedded(EmbeddedOptions{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	c = redis.NewClient(&redis.Options{Addr: again.Addr()})
	defer c.Close()
	if got, err := c.Get(ctx, "askuser:result:{kept}").Result(); err != nil || got != "answered" {
		t.Fatalf("after a restart: %q, %v; want the value written before", got, err)
	}
}

// Without redis-server on the PATH, or without a data directory, the
// in-memory stand-in runs, and says so.
func TestOpenEmbeddedFallsBackInMemory(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server there
	dir := filepath.Join(t.TempDir(), "data")
	for _, o := range []EmbeddedOptions{
		{Addr: "127.0.0.1:0", DataDir: dir},
		{Addr: "127.0.0.1:0"},
	} {
		e, err := OpenEmbedded(o)
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind() != EmbeddedInMemory || e.Durable() || e.DataDir() != "" {
			t.Errorf("kind %q, durable %v, dir %q; want the in-memory stand-in", e.Kind(), e.Durable(), e.DataDir())
		}
		c, err := Connect(context.Background(), e.URL())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		e.Close()
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the in-memory server made its data directory: %v", err)
	}
}

// A redis-server that cannot start is an error naming it, not a silent
// fall back to memory (its data would be out of reach), and nothing but a
// loopback address is accepted.
func TestOpenEmbeddedRefuses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:6379", ":0", "nonsense"} {
		if e, err := OpenEmbedded(EmbeddedOptions{Addr: addr, DataDir: t.TempDir()}); err == nil {
			e.Close()
			t.Errorf("OpenEmbedded(%q) listened", addr)
		}
	}
	broken := filepath.Join(t.TempDir(), "redis-server")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho cannot start >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := OpenEmbedded(EmbeddedOptions{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Server: broken})
	if err == nil {
		e.Close()
		t.Fatal("a redis-server that exits at once was taken for a running one")
	}
}

// An address another Redis already listens on is ErrAddrInUse, never that
// Redis taken for the one started: checked before a redis-server starts,
// and again when it answers (the address may be taken between the two:
// the child then fails to listen and the other Redis answers PING), and
// for the in-memory stand-in.
func TestOpenEmbeddedAddrTaken(t *testing.T) {
	redistest.NeedServer(t)
	other, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if e, err := OpenEmbedded(EmbeddedOptions{Addr: other.Addr, DataDir: t.TempDir()}); !errors.Is(err, ErrAddrInUse) {
		if e != nil {
			e.Close()
		}
		t.Errorf("OpenEmbedded on a taken address: %v, want ErrAddrInUse", err)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(other.Addr)
	if e, err := startServer(bin, host, port, EmbeddedOptions{DataDir: t.TempDir()}); !errors.Is(err, ErrAddrInUse) {
		if e != nil {
			e.Close()
		}
		t.Errorf("a redis-server whose address was taken after the check: %v, want ErrAddrInUse", err)
	}
	if e, err := StartEmbedded(other.Addr); !errors.Is(err, ErrAddrInUse) {
		if e != nil {
			e.Close()
		}
		t.Errorf("StartEmbedded on a taken address: %v, want ErrAddrInUse", err)
	}
}
