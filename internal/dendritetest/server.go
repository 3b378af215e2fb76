package dendritetest

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long Dendrite may take to answer after it is
// started (it creates and migrates its SQLite databases first).
const startTimeout = 60 * time.Second

// Server is one Dendrite process on a free loopback port, with its
// configuration, signing key and SQLite files in a directory of its own.
// Its methods are safe for concurrent use.
type Server struct {
	// URL is the homeserver's base URL, http://127.0.0.1:<port>.
	URL string
	// ServerName is the Matrix server name in user and room IDs.
	ServerName string

	secret string
	dir    string
	rmDir  bool
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once

	// transport carries the requests of the clients the helpers make;
	// Close closes its idle connections.
	transport *http.Transport

	mu    sync.Mutex
	users map[string]User
}

// SkipShort skips a test that needs Dendrite under go test -short: the
// quick tier neither builds nor starts a homeserver.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: this test runs a Dendrite homeserver")
	}
}

// Start starts a homeserver for one test, with rate limiting off, and
// stops it when the test ends. It skips the test under -short and fails
// it when Dendrite cannot be built or started.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start with Options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	SkipShort(t)
	s, err := start(t.TempDir(), false, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("the last lines of Dendrite's log:\n%s", s.LogTail(40))
		}
	})
	return s
}

// LogTail returns the last n lines Dendrite wrote (its log is at level
// warn: errors, panics and what led to them), for a failed test to show.
func (s *Server) LogTail(n int) string {
	log, err := os.ReadFile(filepath.Join(s.dir, "dendrite.log"))
	if err != nil {
		return err.Error()
	}
	return tail(log, n)
}

// Shared starts the one homeserver a package's tests share, for TestMain,
// and returns it with the function that stops it. Under -short it starts
// nothing and returns a nil Server: tests call SkipShort first. Tests on
// the shared server register users with localparts of their own, so they
// can run in parallel.
//
//	func TestMain(m *testing.M) {
//		srv, stop, err := dendritetest.Shared()
//		if err != nil { fmt.Fprintln(os.Stderr, err); os.Exit(1) }
//		hs = srv
//		code := m.Run()
//		stop()
//		os.Exit(code)
//	}
func Shared() (*Server, func(), error) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		return nil, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "dendritetest-")
	if err != nil {
		return nil, nil, fmt.Errorf("dendritetest: %w", err)
	}
	s, err := start(dir, true, Options{})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, s.Close, nil
}

// start builds Dendrite if needed and runs it in dir on a free port,
// trying another port when the chosen one is taken meanwhile.
func start(dir string, rmDir bool, opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	conf, secret, err := writeConfig(dir, opts)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := run(bin, conf, dir)
		if err == nil {
			s.secret, s.rmDir = secret, rmDir
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// run starts the binary on a free port and waits until it answers.
func run(bin, conf, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "dendrite.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("dendritetest: %w", err)
	}
	defer logFile.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, "-config", conf, "-http-bind-address", addr)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dendritetest: start %s: %w", bin, err)
	}
	s := &Server{URL: "http://" + addr, ServerName: ServerName, dir: dir, cmd: cmd,
		exited: make(chan struct{}), users: map[string]User{}, transport: &http.Transport{}}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(); err != nil {
		s.stop()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("dendritetest: Dendrite on %s: %w\n%s", addr, err, tail(log, 30))
	}
	return s, nil
}

// waitReady polls GET /_matrix/client/versions until it answers 200.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/_matrix/client/versions", nil)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/_matrix/client/versions answered %s", resp.Status)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("dendrite exited (%v)", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", startTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop kills the process group and waits until the process is gone.
func (s *Server) stop() {
	killGroup(s.cmd)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// Close stops the server and, for a Shared one, removes its directory
// (Start's directory is the test's TempDir). Safe to repeat.
func (s *Server) Close() {
	s.once.Do(func() {
		s.stop()
		s.transport.CloseIdleConnections()
		if s.rmDir {
			_ = os.RemoveAll(s.dir)
		}
	})
}

// freePort finds a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("dendritetest: no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
