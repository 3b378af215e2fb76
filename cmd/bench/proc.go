package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startTimeout bounds how long a bridge process may take to print its
// page address.
const startTimeout = 30 * time.Second

// proc is one bridge process: the cmd/bridge binary, configured by
// ASKUSER_* variables as an operator runs it.
type proc struct {
	name string
	cmd  *exec.Cmd
	// addr is where its HTTP server listens (page, API, /readyz).
	addr   string
	logf   string
	exited chan struct{}
	// started is when the process was executed (just before fork and
	// exec): where a cold start is timed from.
	started time.Time
}

// startBridge runs the bridge binary bin as replica name with env (ASKUSER_*
// settings; the caller's own ASKUSER_* variables are not passed on). Its
// output goes to <dir>/<name>.log. It returns once the bridge has printed
// the address of its page.
func startBridge(bin, name, dir string, env map[string]string) (*proc, error) {
	logf := filepath.Join(dir, name+".log")
	out, err := os.Create(logf)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ASKUSER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "ASKUSER_REPLICA="+name)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		out.Close()
		return nil, err
	}
	cmd.Stderr = out
	setPdeathsig(cmd)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start bridge %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logf: logf, exited: make(chan struct{}), started: started}
	addr := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(out, line)
			if rest, ok := strings.CutPrefix(line, "askbridge: web page on http://"); ok {
				hostPort, _, _ := strings.Cut(rest, "/")
				select {
				case addr <- hostPort:
				default:
				}
			}
		}
	}()
	go func() {
		<-copied
		_ = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	select {
	case p.addr = <-addr:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("bridge %s exited at start:\n%s", name, tail(logf, 20))
	case <-time.After(startTimeout):
		p.kill()
		return nil, fmt.Errorf("bridge %s printed no address within %s:\n%s", name, startTimeout, tail(logf, 20))
	}
}

// stop asks the bridge to stop (SIGTERM) and kills it if it has not within
// grace.
func (p *proc) stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
	}
}

// kill ends the process with SIGKILL and waits until it is gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// ready waits until the bridge's /readyz reports the channel of platform in
// state want.
func (p *proc) ready(ctx context.Context, platform, want string, within time.Duration) error {
	deadline := time.Now().Add(within)
	last := ""
	for {
		if s, err := p.channelState(ctx, platform); err == nil {
			if s == want {
				return nil
			}
			last = s
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bridge %s: %s is %q, not %q, after %s", p.name, platform, last, want, within)
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func (p *proc) channelState(ctx context.Context, platform string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/readyz", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Channels map[string]string `json:"channels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", err
	}
	return body.Channels[platform], nil
}

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// syscalls is how many read and write system calls the bridge made so far
// (/proc/<pid>/io: syscr and syscw; zero where there is none). Counts, not
// times: the machine's noise does not move them.
func (p *proc) syscalls() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "syscr" || k == "syscw") {
			c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			n += c
		}
	}
	return n
}

// cpu is the CPU time (user and system, all threads) the process used so
// far, from /proc/<pid>/stat.
func (p *proc) cpu() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from after its closing parenthesis (field 3 on).
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, errors.New("bench: unreadable /proc stat")
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("bench: short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// wakeups is how many times the process's threads went to sleep and were
// woken again so far: voluntary_ctxt_switches summed over
// /proc/<pid>/task/*/status. (/proc/<pid>/status alone gives the main
// thread's, not the process's.) A thread that exited takes its count
// with it; the Go runtime keeps its threads. A count, not a time.
func (p *proc) wakeups() (int64, error) {
	dir := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "status"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		n += statusField(raw, "voluntary_ctxt_switches:")
	}
	return n, nil
}

// statusField is the number after key in a /proc status file; 0 when
// there is none.
func statusField(raw []byte, key string) int64 {
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// rss is the process's resident set size, from /proc/<pid>/status.
func (p *proc) rss() (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("bench: no VmRSS in /proc status")
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// buildBridge builds the bridge (cmd/bridge of github.com/askbridge/askbridge)
// into dir and returns the binary's path. The bench is a module of its
// own, whose go.mod replaces github.com/askbridge/askbridge with the
// repository it is in: the bridge is built there, in the main module, with
// that module's requirements, as `make build` builds it.
func buildBridge(ctx context.Context, dir string) (string, error) {
	const mod = "github.com/askbridge/askbridge"
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	root := strings.TrimSpace(string(out))
	if err != nil || root == "" {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("go list -m %s: no directory (%v)\n%s", mod, err, stderr)
	}
	bin := filepath.Join(dir, "bridge")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/bridge")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/bridge in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// fetchProfile takes a CPU profile of secs seconds from the bridge's
// profiler (ASKUSER_PPROF_ADDR) on addr and writes it to path.
func fetchProfile(ctx context.Context, addr string, secs int, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("bench: cpu profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bench: cpu profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
