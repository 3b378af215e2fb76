package tscheck

// TestTypeScriptClient runs each scenario of check.mjs with node against
// the askbridge binary and a bridge with no platforms, and plays the person
// on the bridge's web page when a scenario says so (a "step" line on its
// stdout). Without node (or npm, when node_modules is missing) the test
// skips, except in CI (CI set, or ASKBRIDGE_REQUIRE_REDIS=1 as .ci/run
// sets it), where it fails: a check that skips there checks nothing.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// scenarioTimeout bounds one run of check.mjs: its calls wait 30 s at
// most for a form that does not come.
const scenarioTimeout = 90 * time.Second

// The person's answers on the web page (check.mjs expects these).
const (
	webAnswer    = `{"answers":{"deploy_target":["Staging (Recommended)"]}}`
	webAnswerTwo = `{"answers":{"deploy_target":["Staging (Recommended)"],"checks":["Unit","Load"]}}`
)

// scenario is one scenario of check.mjs and the person's part in it.
type scenario struct {
	name string
	// args follow `askbridge mcp`; env is added to the server's.
	args, env []string
	// steps act on the script's step lines, by step name.
	steps map[string]stepFunc
	// wantStatus (default answered), wantVia (unchecked when empty) and
	// wantAnswers are the final result's.
	wantStatus  string
	wantVia     string
	wantAnswers map[string][]string
}

// stepFunc acts on one step line of a run.
type stepFunc func(t *testing.T, r *run, s step)

// step is a line check.mjs prints when the person is to act.
type step struct {
	Step string `json:"step"`
	ID   string `json:"id"`
}

// final is the last line of a run.
type final struct {
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Client   string `json:"client"`
	Error    string `json:"error"`
	Result   struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Via     string `json:"via"`
		Answers struct {
			Answers map[string][]string `json:"answers"`
		} `json:"answers"`
		AnsweredBy struct {
			Platform string `json:"platform"`
			ID       string `json:"id"`
		} `json:"answeredBy"`
	} `json:"result"`
}

var (
	deployStaging = map[string][]string{"deploy_target": {"Staging (Recommended)"}}
	deployAndChks = map[string][]string{"deploy_target": {"Staging (Recommended)"}, "checks": {"Unit", "Load"}}
	budget        = []string{"--max-wait", "2s"}
)

var scenarios = []scenario{
	{
		name:  "plain",
		steps: map[string]stepFunc{"asking": answerWhenListed(webAnswer)},
		// A plain ask_user, answered on the page: what works without
		// elicitation or a wait budget.
		wantVia: "web", wantAnswers: deployStaging,
	},
	{
		name: "elicit",
		steps: map[string]stepFunc{"form": func(t *testing.T, r *run, _ step) {
			// The form is open: the question must be on the page too
			// before the form answers.
			r.waitListed(t)
			r.send(t, "accept")
		}},
		wantVia: "mcp", wantAnswers: map[string][]string{"deploy_target": {"Production"}},
	},
	{
		name:    "elicitother",
		wantVia: "mcp", wantAnswers: map[string][]string{"deploy_target": {"Only after the release freeze"}},
	},
	{
		name: "decline",
		steps: map[string]stepFunc{"declined": func(t *testing.T, r *run, _ step) {
			// Nothing marks "the decline changed nothing": give the server
			// a moment to act on it wrongly (cancel the question), then
			// the question must still be open on the page.
			time.Sleep(time.Second)
			id := r.waitListed(t)
			r.bridge.answer(t, id, webAnswerTwo)
		}},
		wantVia: "web", wantAnswers: deployAndChks,
	},
	{
		name:    "chatfirst",
		steps:   map[string]stepFunc{"form": answerWhenListed(webAnswer)},
		wantVia: "web", wantAnswers: deployStaging,
	},
	{
		name:    "elicitoff",
		env:     []string{"ASKUSER_MCP_ELICIT=off"},
		steps:   map[string]stepFunc{"asking": answerWhenListed(webAnswer)},
		wantVia: "web", wantAnswers: deployStaging,
	},
	{
		name: "budget",
		args: budget,
		steps: map[string]stepFunc{
			"pending": func(t *testing.T, r *run, s step) {
				// Pending must leave the question open.
				r.bridge.mustBeOpen(t, s.ID)
				r.send(t, "go")
			},
			"waiting": func(t *testing.T, r *run, s step) {
				// The script is about to call wait_for_answer, which waits
				// up to the 2 s budget: answer in the middle of that wait
				// (nothing on this side shows the call has reached the
				// server), so the answer must wake it.
				time.Sleep(300 * time.Millisecond)
				r.bridge.mustBeOpen(t, s.ID)
				r.answered = s.ID
				r.bridge.answer(t, s.ID, webAnswer)
			},
		},
		wantVia: "web", wantAnswers: deployStaging,
	},
	{
		name: "formbudget",
		args: budget,
		// The form, withdrawn at the budget, comes again with
		// wait_for_answer and answers.
		wantVia: "mcp", wantAnswers: map[string][]string{"deploy_target": {"Production"}},
	},
	{
		name: "declinebudget",
		args: budget,
		steps: map[string]stepFunc{"pending": func(t *testing.T, r *run, s step) {
			r.bridge.mustBeOpen(t, s.ID)
			r.answered = s.ID
			r.bridge.answer(t, s.ID, webAnswer)
		}},
		wantVia: "web", wantAnswers: deployStaging,
	},
	{
		name:    "partial",
		wantVia: "mcp", wantAnswers: map[string][]string{"deploy_target": {"Production"}, "checks": {"Lint"}},
	},
	{
		// to "mcp": only the form; declined, the question is skipped.
		name: "tomcp", wantStatus: "no_answer",
	},
	{
		name: "resource",
		args: budget,
		steps: map[string]stepFunc{"pending": func(t *testing.T, r *run, s step) {
			r.bridge.mustBeOpen(t, s.ID)
			r.answered = s.ID
			r.bridge.answer(t, s.ID, webAnswer)
			r.send(t, "go")
		}},
		wantVia: "web", wantAnswers: deployStaging,
	},
}

// answerWhenListed answers the run's question on the page with body once
// the page lists it.
func answerWhenListed(body string) stepFunc {
	return func(t *testing.T, r *run, _ step) {
		id := r.waitListed(t)
		r.answered = id
		r.bridge.answer(t, id, body)
	}
}

func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("the TypeScript SDK client against the askbridge binary: full tier (go test without -short)")
	}
	node := need(t, "node")
	installSDK(t)
	b := startBridge(t, buildAskbridge(t))
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			r := startRun(t, node, b, sc)
			f := r.play(t, sc)
			if !f.OK {
				t.Fatalf("check.mjs %s failed: %s\n%s", sc.name, f.Error, r.transcript())
			}
			res := f.Result
			wantStatus := cmp.Or(sc.wantStatus, "answered")
			if res.Status != wantStatus || (sc.wantVia != "" && res.Via != sc.wantVia) || !mapsEqual(res.Answers.Answers, sc.wantAnswers) {
				t.Errorf("result %+v, want %s via %q with %v\n%s", res, wantStatus, sc.wantVia, sc.wantAnswers, r.transcript())
			}
			if r.answered != "" && res.ID != r.answered {
				t.Errorf("result of %s, want the question answered on the page, %s", res.ID, r.answered)
			}
			if sc.wantVia == "mcp" && (res.AnsweredBy.Platform != "mcp" || res.AnsweredBy.ID != f.Client) {
				t.Errorf("answeredBy %+v, want platform mcp and id %s", res.AnsweredBy, f.Client)
			}
			// However it ended, it ended everywhere: the page no longer
			// lists it.
			r.waitGone(t)
			if t.Failed() || testing.Verbose() {
				t.Logf("%s: %s", sc.name, r.last)
			}
		})
	}
}

// inCI reports whether the check must run: CI (CI set, not "false"), or
// real dependencies required as .ci/run requires them.
func inCI() bool {
	ci := os.Getenv("CI")
	return (ci != "" && ci != "false" && ci != "0") || os.Getenv("ASKBRIDGE_REQUIRE_REDIS") == "1"
}

// need finds a program on the PATH, or ends the test: a failure in CI, a
// skip elsewhere.
func need(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s is not installed (apt-get install nodejs npm): the TypeScript SDK check needs Node 20 or later", name)
	if inCI() {
		t.Fatal(msg + " (in CI this is a failure)")
	}
	t.Skip(msg)
	return ""
}

// installSDK runs npm ci when node_modules does not hold what
// package-lock.json locks (scripts/test-deps.sh does it in CI).
func installSDK(t *testing.T) {
	t.Helper()
	stamp, err := os.Stat(filepath.Join("node_modules", ".package-lock.json"))
	lock, lerr := os.Stat("package-lock.json")
	if lerr != nil {
		t.Fatal(lerr)
	}
	if err == nil && !lock.ModTime().After(stamp.ModTime()) {
		return
	}
	npm := need(t, "npm")
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
}

// buildAskbridge builds cmd/bridge, as a user does, into the test's
// temporary directory.
func buildAskbridge(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "askbridge")
	build := exec.Command("go", "build", "-o", bin, "./cmd/bridge")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bridge: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address no one listened on a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// bridge is the askbridge binary running with no configuration but its
// addresses: its embedded Redis and its web page on free loopback ports,
// no token.
type bridge struct {
	bin       string
	url       string
	redisAddr string
	output    *syncBuffer
}

// startBridge runs bin until the test ends (then SIGTERM) and waits until
// its web page answers.
func startBridge(t *testing.T, bin string) *bridge {
	t.Helper()
	dir := t.TempDir()
	b := &bridge{bin: bin, redisAddr: freeAddr(t), output: &syncBuffer{}}
	httpAddr := freeAddr(t)
	b.url = "http://" + httpAddr
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"ASKUSER_HTTP_ADDR=" + httpAddr,
		"ASKUSER_EMBEDDED_REDIS_ADDR=" + b.redisAddr,
		"ASKUSER_DATA_DIR=" + filepath.Join(dir, "data"),
		"ASKUSER_LOG_LEVEL=warn",
	}
	cmd.Stdout, cmd.Stderr = b.output, b.output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("the bridge did not stop on SIGTERM:\n%s", b.output)
		}
	})
	ok := until(30*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("the bridge exited:\n%s", b.output)
		default:
		}
		resp, err := http.Get(b.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ok {
		t.Fatalf("the bridge did not start:\n%s", b.output)
	}
	return b
}

// webQuestion is a question as GET /api/questions lists it.
type webQuestion struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
}

// questions lists the questions open on the page.
func (b *bridge) questions(t *testing.T) []webQuestion {
	t.Helper()
	resp, err := http.Get(b.url + "/api/questions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Questions []webQuestion }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/questions: %s, %v", resp.Status, err)
	}
	return list.Questions
}

// mustBeOpen fails the test unless the page lists the question id.
func (b *bridge) mustBeOpen(t *testing.T, id string) {
	t.Helper()
	qs := b.questions(t)
	if !slices.ContainsFunc(qs, func(q webQuestion) bool { return q.ID == id }) {
		t.Fatalf("question %s is not open on the page (open: %+v)", id, qs)
	}
}

// answer posts an answer as the page does; it must end the question.
func (b *bridge) answer(t *testing.T, id, body string) {
	t.Helper()
	resp, err := http.Post(b.url+"/api/questions/"+id+"/answer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %s on the page: %s: %s", id, resp.Status, out)
	}
}

// run is one run of check.mjs.
type run struct {
	bridge *bridge
	// client is the MCP client's name check.mjs declares: the question's
	// agent on the page.
	client string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	// seen is every stdout line so far; last the final one.
	seen []string
	last string
	// answered is the question the person answered on the page.
	answered string
}

// startRun starts `node check.mjs <scenario> -- askbridge mcp <args>`
// against b's Redis; it is killed if it outlives the test.
func startRun(t *testing.T, node string, b *bridge, sc scenario) *run {
	t.Helper()
	argv := append([]string{"check.mjs", sc.name, "--", b.bin, "mcp"}, sc.args...)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"ASKUSER_EMBEDDED_REDIS_ADDR=" + b.redisAddr,
		"ASKUSER_LOG_LEVEL=debug",
	}, sc.env...)
	r := &run{bridge: b, client: "tscheck-" + sc.name, cmd: cmd, lines: make(chan string), stderr: &syncBuffer{}}
	cmd.Stderr = r.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case r.lines <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		_ = r.stdin.Close()
		cancel()
		_ = cmd.Wait()
	})
	return r
}

// play reads the run's lines, acts on its steps, and returns its final
// line once it has exited.
func (r *run) play(t *testing.T, sc scenario) final {
	t.Helper()
	timeout := time.After(scenarioTimeout)
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-r.lines:
		case <-timeout:
			t.Fatalf("check.mjs %s did not end within %s\n%s", sc.name, scenarioTimeout, r.transcript())
		}
		if !ok {
			err := r.cmd.Wait()
			t.Fatalf("check.mjs %s ended (%v) without its final line\n%s", sc.name, err, r.transcript())
		}
		r.seen = append(r.seen, line)
		var s step
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("check.mjs printed a line that is not JSON (%v): %q\n%s", err, line, r.transcript())
		}
		if s.Step == "" {
			r.last = line
			var f final
			if err := json.Unmarshal([]byte(line), &f); err != nil || f.Scenario != sc.name {
				t.Fatalf("check.mjs's last line is not its final line (%v): %q", err, line)
			}
			if err := r.cmd.Wait(); f.OK != (err == nil) {
				t.Errorf("check.mjs said ok=%v, and exited %v", f.OK, err)
			}
			return f
		}
		act, known := sc.steps[s.Step]
		if !known {
			t.Fatalf("check.mjs %s reached step %q, which the test does not know\n%s", sc.name, s.Step, r.transcript())
		}
		act(t, r, s)
	}
}

// send writes one line on the run's stdin: the person acted, go on.
func (r *run) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatalf("write to check.mjs: %v", err)
	}
}

// waitListed waits until the page lists the run's question (the one its
// client asked, the question's agent) and returns its id.
func (r *run) waitListed(t *testing.T) string {
	t.Helper()
	id := ""
	ok := until(15*time.Second, func() bool {
		for _, q := range r.bridge.questions(t) {
			if q.Agent == r.client {
				id = q.ID
			}
		}
		return id != ""
	})
	if !ok {
		t.Fatalf("no question of %s showed on the page\n%s", r.client, r.transcript())
	}
	return id
}

// waitGone waits until the page lists no question of the run's client.
func (r *run) waitGone(t *testing.T) {
	t.Helper()
	var open []webQuestion
	ok := until(10*time.Second, func() bool {
		open = slices.DeleteFunc(r.bridge.questions(t), func(q webQuestion) bool { return q.Agent != r.client })
		return len(open) == 0
	})
	if !ok {
		t.Errorf("the call has returned, and the page still lists %+v", open)
	}
}

// transcript is what the run printed: its stdout lines, then its stderr
// (every JSON-RPC message both ways, and the server's log).
func (r *run) transcript() string {
	return fmt.Sprintf("--- check.mjs stdout:\n%s\n--- check.mjs stderr (jsonrpc -> sent, <- received; the server's log):\n%s",
		strings.Join(r.seen, "\n"), r.stderr)
}

// until checks cond every 20 ms until it holds or within has passed.
func until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test
// reading it at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
