//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestWalkthrough follows the README's "First run, step by step" with the
// built program, as a reader would: it builds ./cmd/bridge into
// <tmp>/askbridge, starts it with no configuration (only its addresses and
// data directory moved, so it runs beside other tests), runs the README's
// `askbridge ask` command and its redis-cli lines with sh, answers on the
// web page (through the page's API), and checks what the README promises:
// the results, the exit statuses of `askbridge ask` (answered and timed
// out), and that the redis-cli lines can be run again (a new id, and a
// BLPOP that does not wait for ever). The README's commands are read from
// between its <!-- walkthrough:… --> markers. The timed-out question takes
// the shortest timeout there is, 30 seconds, so the test takes about as
// long.
func TestWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("the README walkthrough waits out a 30 s timeout: full tier (go test without -short)")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	askDoc := walkthroughSection(t, readme, "ask")
	askScript := walkthroughShell(t, askDoc)
	cliScript := walkthroughShell(t, walkthroughSection(t, readme, "redis-cli"))

	// What the README says of the exit statuses is what ask returns.
	said := strings.Join(strings.Fields(askDoc), " ")
	for _, want := range []string{
		fmt.Sprintf("exits %d", exitAnswered),
		fmt.Sprintf("%d answered;", exitAnswered),
		fmt.Sprintf("%d no answer (skipped, timed out, cancelled, undeliverable);", exitNoAnswer),
		fmt.Sprintf("%d a refused request or an error", exitError),
	} {
		if !strings.Contains(said, want) {
			t.Errorf("the README's walkthrough of askbridge ask does not say %q", want)
		}
	}
	if !strings.Contains(askScript, "./bin/askbridge ask ") {
		t.Fatalf("the README's ask command is not ./bin/askbridge ask …:\n%s", askScript)
	}
	if !strings.Contains(cliScript, "-p 6380 ") {
		t.Fatalf("the README's redis-cli lines do not name the embedded Redis's default port, -p 6380:\n%s", cliScript)
	}
	// BLPOP with a timeout (0 waits for ever), longer than the question's
	// own, so it returns the result of a question nobody answers too.
	if m := regexp.MustCompile(`BLPOP \S+ (\d+)\s*$`).FindStringSubmatch(cliScript); m == nil {
		t.Errorf("the README's redis-cli lines end with no BLPOP <key> <timeout>:\n%s", cliScript)
	} else if n, _ := strconv.Atoi(m[1]); n <= askbridge.DefaultTimeout {
		t.Errorf("the README's BLPOP waits %d seconds; it must outlast the question's default timeout, %d seconds", n, askbridge.DefaultTimeout)
	}

	bin := walkthroughBuild(t)
	b := walkthroughStart(t, bin)

	// Started first, as it takes the longest: the README's command with
	// the shortest --timeout, 30 seconds, left unanswered.
	timedOut := make(chan walkthroughRun, 1)
	timeoutScript := strings.Replace(askScript, "./bin/askbridge ask ", fmt.Sprintf("%s ask --timeout %d ", bin, askbridge.MinTimeout), 1)
	go func() { timedOut <- b.sh(timeoutScript, 2*time.Minute) }()
	seen := map[string]bool{}
	timeoutID := b.waitNew(t, seen, "ask-")

	t.Run("redis-cli", func(t *testing.T) {
		if _, err := exec.LookPath("redis-cli"); err != nil {
			// The walkthrough is what a user runs: without redis-cli it
			// cannot be followed (install redis-tools, as the README says).
			t.Fatal("redis-cli is not installed: the README's walkthrough needs it (apt-get install redis-tools)")
		}
		script := strings.ReplaceAll(cliScript, "-p 6380 ", "-p "+b.redisPort+" ")
		var ids []string
		for run := 1; run <= 2; run++ {
			if run == 2 {
				// The id is made of $(date +%s): runs a person makes are
				// seconds apart; the second starts once the first's
				// second has passed.
				first, err := strconv.ParseInt(strings.TrimPrefix(ids[0], "deploy-"), 10, 64)
				if err != nil {
					t.Fatalf("the first run's id %q is not deploy-$(date +%%s)", ids[0])
				}
				testwait.For(t, 3*time.Second, "the second after the first run's", func() bool { return time.Now().Unix() > first })
			}
			done := make(chan walkthroughRun, 1)
			go func() { done <- b.sh(script, 30*time.Second) }()
			id := b.waitNew(t, seen, "deploy-")
			ids = append(ids, id)
			b.answer(t, id, `{"answers":{"deploy_target":["Staging (Recommended)"]}}`)
			r := <-done
			if r.hung {
				t.Fatalf("run %d: the redis-cli lines did not end within 30 seconds of the answer:\n%s%s", run, r.stdout, r.stderr)
			}
			if r.code != 0 || !strings.Contains(r.stdout, `"id":"`+id+`"`) || !strings.Contains(r.stdout, `"status":"answered"`) ||
				!strings.Contains(r.stdout, `"deploy_target":["Staging (Recommended)"]`) {
				t.Errorf("run %d: exit %d, BLPOP did not return the answer:\n%s%s", run, r.code, r.stdout, r.stderr)
			}
		}
		if ids[0] == ids[1] {
			t.Errorf("both runs asked %s: the README's lines must make a new id each run", ids[0])
		}
	})

	t.Run("ask answered", func(t *testing.T) {
		done := make(chan walkthroughRun, 1)
		script := strings.Replace(askScript, "./bin/askbridge ask ", bin+" ask ", 1)
		go func() { done <- b.sh(script, 30*time.Second) }()
		id := b.waitNew(t, seen, "ask-")
		b.answer(t, id, `{"answers":{"answer":["Staging (Recommended)"]}}`)
		r := <-done
		var res struct {
			ID, Status string
			Answers    struct{ Answers map[string][]string }
		}
		_ = json.Unmarshal([]byte(r.stdout), &res)
		if r.hung || r.code != exitAnswered || res.ID != id || res.Status != "answered" ||
			!slices.Equal(res.Answers.Answers["answer"], []string{"Staging (Recommended)"}) {
			t.Errorf("askbridge ask: exit %d (want %d), hung %v, result %+v\n%s%s", r.code, exitAnswered, r.hung, res, r.stdout, r.stderr)
		}
	})

	t.Run("ask timed out", func(t *testing.T) {
		r := <-timedOut
		if r.hung || r.code != exitNoAnswer || !strings.Contains(r.stdout, `"id":"`+timeoutID+`"`) ||
			!strings.Contains(r.stdout, `"status":"no_answer"`) || !strings.Contains(r.stdout, `"reason":"timeout"`) {
			t.Errorf("askbridge ask --timeout %d: exit %d (want %d), hung %v\n%s%s", askbridge.MinTimeout, r.code, exitNoAnswer, r.hung, r.stdout, r.stderr)
		}
	})
}

// walkthroughSection is the README between <!-- walkthrough:name --> and
// <!-- /walkthrough:name -->.
func walkthroughSection(t *testing.T, readme []byte, name string) string {
	t.Helper()
	text := string(readme)
	open, end := "<!-- walkthrough:"+name+" -->", "<!-- /walkthrough:"+name+" -->"
	i := strings.Index(text, open)
	j := strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s … %s", open, end)
	}
	return text[i+len(open) : j]
}

// walkthroughUnindent drops the list item's indentation of each line.
func walkthroughUnindent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "   ")
	}
	return strings.Join(lines, "\n")
}

// walkthroughShell is the one ```sh block of a section, as a script.
func walkthroughShell(t *testing.T, section string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(walkthroughUnindent(section), -1)
	if len(m) != 1 {
		t.Fatalf("want one ```sh block in the README section, found %d:\n%s", len(m), section)
	}
	return m[0][1]
}

// walkthroughBuild builds ./cmd/bridge as the README's make build does,
// into <tmp>/askbridge, with the go command on the PATH.
func walkthroughBuild(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "askbridge")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/bridge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s ./cmd/bridge: %v\n%s", bin, err, out)
	}
	return bin
}

// walkthroughBridge is the built bridge running.
type walkthroughBridge struct {
	bin                 string
	env                 []string
	redisPort, httpAddr string

	mu      sync.Mutex
	running map[int]bool // process groups of the scripts running
}

// walkthroughStart starts bin with no configuration but its addresses (free
// loopback ports) and its data directory (the test's), and waits for it to
// print where its web page is.
func walkthroughStart(t *testing.T, bin string) *walkthroughBridge {
	t.Helper()
	redisAddr, httpAddr := freeAddr(t), freeAddr(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ASKUSER_") {
			env = append(env, kv)
		}
	}
	env = append(env, "ASKUSER_EMBEDDED_REDIS_ADDR="+redisAddr, "ASKUSER_HTTP_ADDR="+httpAddr, "ASKUSER_DATA_DIR="+t.TempDir())
	_, port, _ := net.SplitHostPort(redisAddr)
	b := &walkthroughBridge{bin: bin, env: env, redisPort: port, httpAddr: httpAddr, running: map[int]bool{}}

	cmd := exec.Command(bin)
	cmd.Env = env
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the bridge did not stop cleanly on SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the bridge did not stop within 40 seconds of SIGTERM")
		}
	})
	deadline := time.After(20 * time.Second)
	for !strings.Contains(stdout.String(), "web page on http://"+httpAddr+"/") {
		select {
		case err := <-exited:
			t.Fatalf("the bridge exited (%v):\n%s%s", err, stdout.String(), stderr.String())
		case <-deadline:
			t.Fatalf("the bridge did not start within 20 seconds:\n%s%s", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if out := stdout.String(); !strings.Contains(out, "embedded Redis listening on "+redisAddr) {
		t.Errorf("the bridge does not say where its embedded Redis listens:\n%s", out)
	}
	// Before the bridge stops (cleanups run last first): a script still
	// running when the test ends (a failure, or a subtest left out by
	// -run) goes, with all it started.
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for pgid := range b.running {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	return b
}

// walkthroughRun is how a script ended.
type walkthroughRun struct {
	code           int
	hung           bool
	stdout, stderr string
}

// sh runs script with sh, in the bridge's environment (so askbridge ask
// finds its Redis as a local user's would), killing it and all it started
// when it has not ended within limit.
func (b *walkthroughBridge) sh(script string, limit time.Duration) walkthroughRun {
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = b.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return walkthroughRun{code: -1, stderr: err.Error()}
	}
	pgid := cmd.Process.Pid
	b.mu.Lock()
	b.running[pgid] = true
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.running, pgid)
		b.mu.Unlock()
	}()
	var once sync.Once
	kill := func() { once.Do(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) }
	timer := time.AfterFunc(limit, kill)
	err := cmd.Wait()
	hung := !timer.Stop() // the timer fired: Wait returned because of the kill
	kill()                // whatever the script left behind
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return walkthroughRun{code: code, hung: hung, stdout: stdout.String(), stderr: stderr.String()}
}

// waitNew waits for a question not in seen, whose id starts with prefix,
// to appear on the web page, adds it to seen and returns its id.
func (b *walkthroughBridge) waitNew(t *testing.T, seen map[string]bool, prefix string) string {
	t.Helper()
	var id string
	if !testwait.Until(15*time.Second, func() bool {
		resp, err := http.Get("http://" + b.httpAddr + "/api/questions")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct{ Questions []struct{ ID string } }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET /api/questions: %d %s", resp.StatusCode, body)
		}
		for _, q := range page.Questions {
			if strings.HasPrefix(q.ID, prefix) && !seen[q.ID] {
				id = q.ID
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no new question %s… appeared on the web page within 15 seconds", prefix)
	}
	seen[id] = true
	return id
}

// answer answers question id as the page does when a person clicks.
func (b *walkthroughBridge) answer(t *testing.T, id, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+b.httpAddr+"/api/questions/"+id+"/answer", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %s on the page: %d %s", id, resp.StatusCode, out)
	}
}
