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
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/locale"
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

	for _, ex := range walkthroughExamples {
		t.Run("example "+ex.name, func(t *testing.T) { walkthroughExample(t, b, seen, ex) })
	}

	t.Run("ask timed out", func(t *testing.T) {
		r := <-timedOut
		if r.hung || r.code != exitNoAnswer || !strings.Contains(r.stdout, `"id":"`+timeoutID+`"`) ||
			!strings.Contains(r.stdout, `"status":"no_answer"`) || !strings.Contains(r.stdout, `"reason":"timeout"`) {
			t.Errorf("askbridge ask --timeout %d: exit %d (want %d), hung %v\n%s%s", askbridge.MinTimeout, r.code, exitNoAnswer, r.hung, r.stdout, r.stderr)
		}
	})
}

// exampleWalk is one of examples/: its README's run section is followed
// like the main README's.
type exampleWalk struct {
	name, dir, idPrefix string
	// install is what its README must say to install its Redis client.
	install []string
	// ready finds what the run command needs, or says what is missing: the
	// PATH to run it with (nil: the test's), for Python one whose python3
	// has redis-py.
	ready func(t *testing.T, dir string) (path []string, err error)
}

var walkthroughExamples = []exampleWalk{
	{name: "python", dir: filepath.Join("examples", "python"), idPrefix: "py-",
		install: []string{"python3 -m pip install -r requirements.txt", "sudo apt-get install python3-redis", "/usr/bin/python3 ask.py"},
		ready:   pythonWithRedis},
	{name: "node", dir: filepath.Join("examples", "node"), idPrefix: "node-",
		install: []string{"npm ci", "sudo apt-get install nodejs npm"},
		ready: func(t *testing.T, dir string) ([]string, error) {
			if _, err := exec.LookPath("node"); err != nil {
				return nil, fmt.Errorf("node is not installed (apt-get install nodejs npm)")
			}
			if _, err := os.Stat(filepath.Join(dir, "node_modules", "redis", "package.json")); err != nil {
				return nil, fmt.Errorf("the redis package is not installed: run npm ci in %s", dir)
			}
			return nil, nil
		}},
}

// pythonWithRedis is a PATH whose python3 has redis-py: the test's own
// when its python3 has it, else one that puts the distribution's
// /usr/bin/python3 first, as the README says to run it when python3-redis
// is installed and another python3 (pyenv's) comes first.
func pythonWithRedis(t *testing.T, _ string) ([]string, error) {
	if py, err := exec.LookPath("python3"); err == nil && exec.Command(py, "-c", "import redis").Run() == nil {
		return nil, nil
	}
	if exec.Command("/usr/bin/python3", "-c", "import redis").Run() != nil {
		return nil, fmt.Errorf("no python3 with redis-py: apt-get install python3-redis, or python3 -m pip install -r examples/python/requirements.txt")
	}
	bin := t.TempDir()
	if err := os.Symlink("/usr/bin/python3", filepath.Join(bin, "python3")); err != nil {
		return nil, err
	}
	return []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, nil
}

// walkthroughExample checks what an example's README says of installing
// and exit statuses, and runs its marked command against the walkthrough's
// bridge (ASKUSER_REDIS_URL, which the README says it reads, set to the
// bridge's embedded Redis): answered, it prints the result and exits 0;
// skipped, it exits 1.
func walkthroughExample(t *testing.T, b *walkthroughBridge, seen map[string]bool, ex exampleWalk) {
	dir := filepath.Join("..", "..", ex.dir)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	said := strings.Join(strings.Fields(string(readme)), " ")
	for _, want := range append(ex.install, "exits 0", "Exit status: 0 answered; 1 anything else", `"status":"answered"`, `"deploy_target":["Staging (Recommended)"]`) {
		if !strings.Contains(said, want) {
			t.Errorf("%s/README.md does not say %q", ex.dir, want)
		}
	}
	if ex.name == "python" {
		req, err := os.ReadFile(filepath.Join(dir, "requirements.txt"))
		if err != nil || !regexp.MustCompile(`(?m)^redis==\d+\.\d+\.\d+$`).Match(req) {
			t.Errorf("%s/requirements.txt does not pin redis-py (redis==X.Y.Z): %v\n%s", ex.dir, err, req)
		}
	}
	script := walkthroughShell(t, walkthroughSection(t, readme, "run"))
	env, err := ex.ready(t, dir)
	if err != nil {
		if redistest.Required() {
			t.Fatalf("the %s example cannot run (ASKBRIDGE_REQUIRE_REDIS=1): %v", ex.name, err)
		}
		t.Skipf("the %s example cannot run: %v", ex.name, err)
	}
	env = append(env, "ASKUSER_REDIS_URL=redis://127.0.0.1:"+b.redisPort)

	for _, tc := range []struct {
		answer, result string
		code           int
	}{
		{`{"answers":{"deploy_target":["Staging (Recommended)"]}}`, `"deploy_target":["Staging (Recommended)"]`, 0},
		{`{"skip":true}`, `"reason":"skipped"`, 1},
	} {
		done := make(chan walkthroughRun, 1)
		go func() { done <- b.shIn(dir, env, script, 30*time.Second) }()
		id := b.waitNew(t, seen, ex.idPrefix)
		b.answer(t, id, tc.answer)
		r := <-done
		if r.hung || r.code != tc.code || !strings.Contains(r.stdout, `"id":"`+id+`"`) || !strings.Contains(r.stdout, tc.result) ||
			!strings.Contains(r.stderr, "asked "+id+"; answer it on the bridge's web page (Ctrl-C cancels)") {
			t.Errorf("%s in %s: exit %d (want %d), hung %v\nstdout: %s\nstderr: %s", strings.TrimSpace(script), ex.dir, r.code, tc.code, r.hung, r.stdout, r.stderr)
		}
	}
}

// TestWalkthroughNamesTheButton: the README's walkthrough tells the reader
// to click the option the way the web page shows it: a recommended
// option's label without its "(Recommended)" suffix, with the page's
// badge (the catalog's WebRecommended) beside it.
func TestWalkthroughNamesTheButton(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	askDoc := walkthroughSection(t, readme, "ask")
	m := regexp.MustCompile(`--option "([^"(]+?) \((\w+)\)`).FindStringSubmatch(walkthroughShell(t, askDoc))
	if m == nil {
		t.Fatal("the README's ask command has no option with a (Recommended) suffix")
	}
	said := strings.Join(strings.Fields(askDoc), " ")
	badge := locale.For("en").Get("WebRecommended")
	for _, want := range []string{"Click **" + m[1] + "**", "*" + badge + "* badge"} {
		if !strings.Contains(said, want) {
			t.Errorf("the README's walkthrough does not say %q: the page shows %q with a %q badge", want, m[1], badge)
		}
	}
}

// TestReadmeRunTheTests: the README's "Run the tests" says what the full
// tests need before the command that runs them: its first command
// installs every package scripts/test-deps.sh may install, the next is
// make test, and it says how long that takes.
func TestReadmeRunTheTests(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	deps, err := os.ReadFile(filepath.Join("..", "..", "scripts", "test-deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\n## Run the tests\n(.*?)\n## `).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md has no "## Run the tests" section`)
	}
	section := string(m[1])
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 2 || !strings.Contains(blocks[0][1], "apt-get install") || strings.TrimSpace(blocks[1][1]) != "make test" {
		t.Fatalf("the section's first commands must be the prerequisites' install, then make test:\n%s", section)
	}
	for _, pkg := range regexp.MustCompile(`need_apt\+=\(([a-z0-9.+-]+)\)`).FindAllStringSubmatch(string(deps), -1) {
		if !slices.Contains(strings.Fields(blocks[0][1]), pkg[1]) {
			t.Errorf("the README's install command lacks %s, which scripts/test-deps.sh installs", pkg[1])
		}
	}
	if !strings.Contains(blocks[0][1], "npm ci") {
		t.Errorf("the README's install commands lack npm ci (examples/node), which scripts/test-deps.sh runs")
	}
	if !strings.Contains(strings.Join(strings.Fields(section), " "), "takes about 10 minutes") {
		t.Errorf("the section does not say how long make test takes")
	}
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
	return b.shIn("", nil, script, limit)
}

// shIn is sh in directory dir ("": the test's) with env added to the
// bridge's environment (a later one wins).
func (b *walkthroughBridge) shIn(dir string, env []string, script string, limit time.Duration) walkthroughRun {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(slices.Clone(b.env), env...)
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
