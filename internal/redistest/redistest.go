// Package redistest starts throw-away Redis servers for tests: a single
// redis-server and a three-master Redis Cluster, each on free loopback
// ports, with no persistence, in a temporary directory. When redis-server
// is not installed, Start* return ErrNotInstalled and the caller decides:
// fall back to miniredis, or fail when Required (CI sets
// ASKBRIDGE_REQUIRE_REDIS=1, so a missing Redis fails the run).
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotInstalled means redis-server (or redis-cli) is not on the PATH.
var ErrNotInstalled = errors.New("redistest: redis-server or redis-cli not found on PATH")

// startTimeout bounds how long a server or the cluster may take to come up.
const startTimeout = 20 * time.Second

// Required reports whether the environment demands real Redis servers
// (ASKBRIDGE_REQUIRE_REDIS=1): a missing one is then a failure, not a
// fallback.
func Required() bool { return os.Getenv("ASKBRIDGE_REQUIRE_REDIS") == "1" }

// Installed reports whether redis-server and redis-cli are on the PATH.
func Installed() bool {
	_, err1 := exec.LookPath("redis-server")
	_, err2 := exec.LookPath("redis-cli")
	return err1 == nil && err2 == nil
}

// NeedServer ends a test that needs a redis-server binary when there is
// none: a failure where real Redis is required (CI), a skip elsewhere.
func NeedServer(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err == nil {
		return
	}
	if Required() {
		t.Fatal("redis-server is not installed (ASKBRIDGE_REQUIRE_REDIS=1)")
	}
	t.Skip("redis-server is not installed")
}

// Server is one redis-server process.
type Server struct {
	Addr   string
	cmd    *exec.Cmd
	dir    string
	out    *bytes.Buffer
	exited chan struct{}
	once   sync.Once
}

// StartServer starts a redis-server on a free loopback port.
func StartServer() (*Server, error) {
	if !Installed() {
		return nil, ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s, err := start(dir, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.dir = dir
	return s, nil
}

// start runs redis-server in dir on a free port with extra arguments, and
// waits until it answers PING.
func start(dir string, extra func(port int) []string) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(extra != nil)
		if err != nil {
			return nil, err
		}
		args := []string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--dir", dir,
			"--daemonize", "no",
			"--logfile", "",
		}
		if extra != nil {
			args = append(args, extra(port)...)
		}
		cmd := exec.Command("redis-server", args...)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		setPdeathsig(cmd)
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("redistest: start redis-server: %w", err)
		}
		exited := make(chan struct{})
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, out: out, exited: exited}
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		if err := waitPing(s.Addr, exited); err != nil {
			s.stop()
			lastErr = fmt.Errorf("redistest: redis-server on %s: %w (exit: %v)\n%s", s.Addr, err, waitErr, out.String())
			continue // most likely the port was taken meanwhile
		}
		return s, nil
	}
	return nil, lastErr
}

func waitPing(addr string, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return errors.New("redis-server exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the process and waits until it is gone.
func (s *Server) stop() {
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// Close stops the server and removes its directory. Safe to repeat.
func (s *Server) Close() {
	s.once.Do(func() {
		s.stop()
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
	})
}

// freePort finds a free loopback port; for a cluster node also its bus
// port (port + 10000).
func freePort(withBus bool) (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !withBus {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			_ = bus.Close()
			return port, nil
		}
	}
	return 0, errors.New("redistest: no free port")
}

// Cluster is a three-master Redis Cluster without replicas.
type Cluster struct {
	Addrs []string
	nodes []*Server
	dir   string
	once  sync.Once
}

// StartCluster starts three redis-server nodes in cluster mode, joins them
// with redis-cli --cluster create, and waits until every node reports
// cluster_state:ok.
func StartCluster() (*Cluster, error) {
	if !Installed() {
		return nil, ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "redistest-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	for i := 0; i < 3; i++ {
		nodeDir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(nodeDir, 0o755); err != nil {
			c.Close()
			return nil, err
		}
		s, err := start(nodeDir, func(port int) []string {
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
				"--cluster-node-timeout", "5000",
			}
		})
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.waitOK(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// waitOK waits until every node reports cluster_state:ok and knows all
// three masters.
func (c *Cluster) waitOK(ctx context.Context) error {
	for _, addr := range c.Addrs {
		cl := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			select {
			case <-ctx.Done():
				_ = cl.Close()
				return fmt.Errorf("redistest: cluster node %s not ok: %v %s", addr, err, info)
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = cl.Close()
	}
	return nil
}

// Close stops every node and removes their directories. Safe to repeat.
func (c *Cluster) Close() {
	c.once.Do(func() {
		for _, n := range c.nodes {
			n.Close()
		}
		_ = os.RemoveAll(c.dir)
	})
}
