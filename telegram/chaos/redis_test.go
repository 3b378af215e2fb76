package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/testwait"
)

// aofRedis is a redis-server that keeps every write in its append-only
// file, fsynced before the write is acknowledged (appendfsync always), so
// a crash and restart keeps everything a client was told was written. It
// restarts on the same port, in the same directory.
type aofRedis struct {
	Addr   string
	port   int
	dir    string
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{}
}

// startAOF starts an AOF redis-server in dir on a free loopback port.
func startAOF(dir string) (*aofRedis, error) {
	var lastErr error
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		r := &aofRedis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, dir: dir}
		if lastErr = r.run(); lastErr == nil {
			return r, nil
		}
	}
	return nil, lastErr
}

// run starts the server process and waits until it answers PING.
func (r *aofRedis) run() error {
	r.cmd = exec.Command("redis-server",
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--daemonize", "no", "--logfile", "")
	r.out = &bytes.Buffer{}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	r.exited = exited
	go func() { _ = r.cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	// Loading the AOF answers LOADING until it is done.
	var err error
	gone := false
	answered := testwait.Until(20*time.Second, func() bool {
		select {
		case <-exited:
			gone = true
			return true
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = c.Ping(ctx).Err()
		return err == nil
	})
	switch {
	case gone:
		return fmt.Errorf("redis-server on %s exited:\n%s", r.Addr, r.out.String())
	case !answered:
		r.crash()
		return errors.Join(fmt.Errorf("redis-server on %s: no PING answer", r.Addr), err)
	}
	return nil
}

// crash kills the server (SIGKILL: no shutdown, no final save) and waits
// until it is gone.
func (r *aofRedis) crash() {
	_ = r.cmd.Process.Kill()
	<-r.exited
}

// Restart crashes the server and starts it again on the same port and
// directory, from its append-only file.
func (r *aofRedis) Restart() error {
	r.crash()
	return r.run()
}

// Close stops the server.
func (r *aofRedis) Close() { r.crash() }
