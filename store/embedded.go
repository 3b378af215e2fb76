package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Embedded is the Redis a bridge starts for itself when it is given none:
// one replica, on a loopback address, without a password. It is either a
// redis-server child process keeping an append-only file in a data
// directory (OpenEmbedded, when the binary is on the PATH), whose state
// survives a restart, or an in-process stand-in (miniredis) whose state is
// lost on exit. Both speak the Redis protocol, so agents reach either with
// any Redis client (redis-cli -p <port>), and the same Store code runs on
// top of them.
type Embedded struct {
	kind    EmbeddedKind
	addr    string
	dataDir string

	// The in-memory stand-in: miniredis, its TTLs advanced every expiryTick.
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}

	// The redis-server child.
	cmd    *exec.Cmd
	exited chan struct{}

	once sync.Once
}

// EmbeddedKind says which embedded Redis runs.
type EmbeddedKind string

const (
	// EmbeddedRedisServer is a redis-server child process with an
	// append-only file: pending questions and results survive a restart.
	EmbeddedRedisServer EmbeddedKind = "redis-server"
	// EmbeddedInMemory is the in-process stand-in: pending questions and
	// results vanish when the process exits.
	EmbeddedInMemory EmbeddedKind = "in-memory"
)

// EmbeddedOptions says how to start the embedded Redis.
type EmbeddedOptions struct {
	// Addr is where it listens: a loopback host:port ("127.0.0.1:6380",
	// "localhost:0"; "" means "127.0.0.1:0", a free port). It has no
	// password, which is why it never listens beyond this machine.
	Addr string
	// DataDir is where a redis-server keeps its append-only file; it is
	// created (mode 0700) if missing. One embedded Redis per directory.
	// Empty: the in-memory stand-in runs.
	DataDir string
	// Server is the redis-server binary; "" looks "redis-server" up on the
	// PATH. When there is none, the in-memory stand-in runs.
	Server string
	// Prepare, when set, adjusts the redis-server command before it
	// starts (cmd/bridge has the kernel stop the server with the bridge).
	Prepare func(*exec.Cmd)
}

// expiryTick is how often the in-memory server advances its key TTLs by
// the time elapsed. miniredis's own ClockTTL does that on every command,
// over every key (a sort of all keys per command), which slows a busy
// server to a crawl; a tick costs one such pass per expiryTick instead.
const expiryTick = 100 * time.Millisecond

// Bounds of a redis-server child.
const (
	// serverStartTimeout bounds how long the server may take to answer
	// PING, loading its append-only file included.
	serverStartTimeout = 60 * time.Second
	// serverStopTimeout bounds how long Close waits for the server to write
	// its file and exit after SIGTERM before it kills it.
	serverStopTimeout = 10 * time.Second
	// serverOutputBytes bounds the server output kept for an error message.
	serverOutputBytes = 8 << 10
)

// ErrAddrInUse means the embedded Redis's address is already taken:
// another process listens there, another bridge's embedded Redis perhaps.
// StartEmbedded and OpenEmbedded return it wrapped, and never take a Redis
// that answers there for one they started.
var ErrAddrInUse = errors.New("address already in use")

// StartEmbedded starts the in-memory stand-in (miniredis) listening on
// addr, which must be a loopback address (see EmbeddedOptions.Addr).
func StartEmbedded(addr string) (*Embedded, error) {
	addr, _, _, err := embeddedAddr(addr)
	if err != nil {
		return nil, err
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, addrInUse(addr)
		}
		return nil, fmt.Errorf("store: embedded redis: %w", err)
	}
	e := &Embedded{kind: EmbeddedInMemory, addr: m.Addr(), m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go e.expire()
	return e, nil
}

// OpenEmbedded starts the better embedded Redis there is: a redis-server
// with an append-only file in o.DataDir when the binary is found and a data
// directory is given, the in-memory stand-in otherwise. Kind says which
// runs. A redis-server that is found but fails to start is an error, not a
// reason to fall back: its data would silently be out of reach.
func OpenEmbedded(o EmbeddedOptions) (*Embedded, error) {
	addr, host, port, err := embeddedAddr(o.Addr)
	if err != nil {
		return nil, err
	}
	bin := o.Server
	if bin == "" {
		bin, err = exec.LookPath("redis-server")
	}
	if o.DataDir == "" || err != nil {
		return StartEmbedded(addr)
	}
	if port != "0" {
		// Taken, the server would fail to listen, and the Redis already
		// there would answer for it.
		if err := checkFree(addr); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("store: embedded redis: data directory: %w", err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	// Port 0 means a free port, which redis-server cannot pick itself (to
	// it, 0 means no TCP at all): take one, and try again should another
	// process take it first.
	tries := 1
	if port == "0" {
		tries = 3
	}
	for try := 1; ; try++ {
		p := port
		if port == "0" {
			if p, err = freePort(host); err != nil {
				return nil, fmt.Errorf("store: embedded redis: %w", err)
			}
		}
		e, err := startServer(bin, host, p, o)
		if err == nil || try == tries {
			return e, err
		}
	}
}

// startServer runs redis-server on host:port with its append-only file in
// o.DataDir and waits until it answers.
func startServer(bin, host, port string, o EmbeddedOptions) (*Embedded, error) {
	cmd := exec.Command(bin,
		"--port", port,
		"--bind", host,
		"--dir", o.DataDir,
		"--appendonly", "yes",
		"--appendfsync", "everysec",
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
	)
	out := &limitedBuffer{max: serverOutputBytes}
	cmd.Stdout, cmd.Stderr = out, out
	if o.Prepare != nil {
		o.Prepare(cmd)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("store: embedded redis: start %s: %w", bin, err)
	}
	e := &Embedded{kind: EmbeddedRedisServer, addr: net.JoinHostPort(host, port), dataDir: o.DataDir, cmd: cmd, exited: make(chan struct{})}
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(e.exited) }()
	if err := e.waitReady(); err != nil {
		e.Close()
		<-e.exited
		if errors.Is(err, ErrAddrInUse) || strings.Contains(out.String(), "Address already in use") {
			return nil, addrInUse(e.addr)
		}
		return nil, fmt.Errorf("store: embedded redis-server on %s: %w (exit: %v)\n%s", e.addr, err, waitErr, out.String())
	}
	return e, nil
}

// checkFree returns an error wrapping ErrAddrInUse when another process
// listens on addr.
func checkFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return addrInUse(addr)
	case err != nil:
		return fmt.Errorf("store: embedded redis: %w", err)
	}
	return l.Close()
}

func addrInUse(addr string) error {
	return fmt.Errorf("store: embedded redis: %s: %w", addr, ErrAddrInUse)
}

// waitReady waits until the server answers PING: it has loaded its file.
// A Redis that answers but is another process (one that took the address
// first; the child then fails to listen) is ErrAddrInUse.
func (e *Embedded) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: e.addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(serverStartTimeout)
	for {
		select {
		case <-e.exited:
			return errors.New("redis-server exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		var pid int
		if err == nil {
			pid, err = serverPID(ctx, c)
		}
		cancel()
		if err == nil {
			if pid != e.cmd.Process.Pid {
				return fmt.Errorf("process %d answers on %s: %w", pid, e.addr, ErrAddrInUse)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverPID is the process id the Redis c talks to reports (INFO server).
func serverPID(ctx context.Context, c *redis.Client) (int, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// embeddedAddr checks that addr is a loopback host:port and returns it
// ("" is "127.0.0.1:0") with its parts.
func embeddedAddr(addr string) (string, string, string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", "", fmt.Errorf("store: embedded redis: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", "", "", fmt.Errorf("store: embedded redis: %s is not a loopback address", addr)
	}
	return addr, host, port, nil
}

// freePort finds a port nobody listens on right now on host.
func freePort(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// expire advances the TTLs by the wall-clock time elapsed, every tick.
func (e *Embedded) expire() {
	defer close(e.done)
	t := time.NewTicker(expiryTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Kind says which embedded Redis runs.
func (e *Embedded) Kind() EmbeddedKind { return e.kind }

// Durable reports whether its state survives a restart: a redis-server
// with an append-only file (writes of the last second may be lost on a
// crash: appendfsync everysec).
func (e *Embedded) Durable() bool { return e.kind == EmbeddedRedisServer }

// DataDir is where a redis-server keeps its file; "" for the in-memory one.
func (e *Embedded) DataDir() string { return e.dataDir }

// Addr is the host:port it listens on.
func (e *Embedded) Addr() string { return e.addr }

// URL is its address for Connect: redis://host:port.
func (e *Embedded) URL() string { return "redis://" + e.addr }

// Close stops it: a redis-server is asked to write its file and exit
// (SIGTERM), and killed if it has not within serverStopTimeout; the
// in-memory one's state is gone. Safe to repeat.
func (e *Embedded) Close() {
	e.once.Do(func() {
		if e.cmd != nil {
			if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				_ = e.cmd.Process.Kill()
			}
			t := time.NewTimer(serverStopTimeout)
			defer t.Stop()
			select {
			case <-e.exited:
			case <-t.C:
				_ = e.cmd.Process.Kill()
				<-e.exited
			}
			return
		}
		close(e.stop)
		<-e.done
		e.m.Close()
	})
}

// limitedBuffer keeps the first max bytes written to it, for an error
// message; the rest is dropped. Safe for concurrent use.
type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.max - len(l.b); n > 0 {
		l.b = append(l.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
