package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// StartSentinel starts a Redis Sentinel on a free loopback port that
// monitors the server at masterAddr under the name master.
func StartSentinel(masterAddr, master string) (*Server, error) {
	if !Installed() {
		return nil, ErrNotInstalled
	}
	host, port, err := net.SplitHostPort(masterAddr)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-sentinel-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		p, err := freePort(false)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s 1\n", p, dir, master, host, port)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		cmd := exec.Command("redis-server", conf, "--sentinel")
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		setPdeathsig(cmd)
		if err := cmd.Start(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: start sentinel: %w", err)
		}
		exited := make(chan struct{})
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), cmd: cmd, out: out, exited: exited, dir: dir}
		go func() { _ = cmd.Wait(); close(exited) }()
		if err := waitPing(s.Addr, exited); err != nil {
			s.stop()
			lastErr = fmt.Errorf("redistest: sentinel on %s: %w\n%s", s.Addr, err, out.String())
			continue
		}
		return s, nil
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}
