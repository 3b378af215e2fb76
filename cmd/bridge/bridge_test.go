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
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer = platformtest.SyncBuffer

// runningBridge is `bridge` started in-process with an environment.
type runningBridge struct {
	redisAddr, httpAddr string
	stdout, stderr      *syncBuffer
	stop                context.CancelFunc
	done                chan int
}

func startBridge(t *testing.T, env map[string]string) *runningBridge {
	t.Helper()
	return startBridgeWith(t, env, defaultLimits())
}

// startBridgeWith is startBridge with the HTTP server's limits. The embedded
// Redis keeps its data (when it is a redis-server) in a directory of the
// test's; ASKUSER_HTTP_ADDR is a free loopback address unless env sets one.
func startBridgeWith(t *testing.T, env map[string]string, lim limits) *runningBridge {
	t.Helper()
	b := &runningBridge{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	if env["ASKUSER_REDIS_URL"] == "" {
		b.redisAddr = freeAddr(t)
		env["ASKUSER_EMBEDDED_REDIS_ADDR"] = b.redisAddr
		if env["ASKUSER_DATA_DIR"] == "" {
			env["ASKUSER_DATA_DIR"] = t.TempDir()
		}
	}
	if env["ASKUSER_HTTP_ADDR"] == "" {
		env["ASKUSER_HTTP_ADDR"] = freeAddr(t)
	}
	// Requests go to the loopback side of a listener on every interface.
	b.httpAddr = strings.Replace(env["ASKUSER_HTTP_ADDR"], "0.0.0.0:", "127.0.0.1:", 1)
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	go func() { b.done <- serveWith(ctx, envList(env), b.stdout, b.stderr, lim) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(40 * time.Second):
			t.Errorf("bridge did not stop")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(b.stdout.String(), "web page on") {
			return b
		}
		select {
		case code := <-b.done:
			t.Fatalf("bridge exited with %d: %s", code, b.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("bridge did not start: %s %s", b.stdout.String(), b.stderr.String())
	return nil
}

func mapEnv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// envList is env as an environment, "NAME=value" strings.
func envList(env map[string]string) []string {
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	slices.Sort(environ)
	return environ
}

func (b *runningBridge) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + b.httpAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// askAsync runs `askbridge ask` in-process and returns its exit status and
// output on a channel.
type askRun struct {
	code           int
	stdout, stderr string
}

func askAsync(ctx context.Context, env map[string]string, args ...string) <-chan askRun {
	ch := make(chan askRun, 1)
	go func() {
		var out, errb syncBuffer
		code := ask(ctx, args, strings.NewReader(""), &out, &errb, mapEnv(env))
		ch <- askRun{code, out.String(), errb.String()}
	}()
	return ch
}

func waitOpen(t *testing.T, b *runningBridge, id string) {
	t.Helper()
	testwait.For(t, 5*time.Second, "question "+id+" on the page", func() bool {
		_, body := b.get(t, "/api/questions")
		return strings.Contains(body, `"id":"`+id+`"`)
	})
}

func answerOnPage(t *testing.T, b *runningBridge, id, body string) {
	t.Helper()
	if code, out := postAnswer(t, b, id, body); code != http.StatusOK {
		t.Fatalf("answer: %d %s", code, out)
	}
}

func postAnswer(t *testing.T, b *runningBridge, id, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+b.httpAddr+"/api/questions/"+id+"/answer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestFirstRun is the README walkthrough: start with no configuration
// (embedded Redis, web page), ask with `askbridge ask`, answer on the page;
// with redis-server on the PATH (the embedded Redis is one) and without (it
// is the in-memory stand-in).
func TestFirstRun(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		redistest.NeedServer(t)
		firstRun(t)
	})
	t.Run("in-memory", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir()) // no redis-server
		firstRun(t)
	})
}

// An embedded Redis address another process already listens on is an
// error that says so and names the settings to change, never a bridge that
// takes the Redis answering there (a second bridge's, most often) for its
// own and says it started one: with redis-server and with the in-memory
// stand-in, behind a first bridge and behind a plain listener.
func TestEmbeddedAddrTaken(t *testing.T) {
	for _, kind := range []string{"redis-server", "in-memory"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "redis-server" {
				redistest.NeedServer(t)
			} else {
				t.Setenv("PATH", t.TempDir()) // no redis-server
			}
			t.Run("by a bridge", func(t *testing.T) {
				first := startBridge(t, map[string]string{})
				embeddedTaken(t, first.redisAddr)
			})
			t.Run("by a listener", func(t *testing.T) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				embeddedTaken(t, ln.Addr().String())
			})
		})
	}
}

// embeddedTaken starts a bridge whose embedded Redis address, addr, is
// taken, and checks that it refuses to start.
func embeddedTaken(t *testing.T, addr string) {
	t.Helper()
	env := envList(map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": addr, "ASKUSER_DATA_DIR": t.TempDir(), "ASKUSER_HTTP_ADDR": freeAddr(t)})
	// Bounded: a bridge that started after all runs until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := serveWith(ctx, env, &out, &errb, defaultLimits())
	if code != 1 || strings.Contains(out.String(), "listening") || strings.Contains(out.String(), "web page on") {
		t.Errorf("exit %d (want 1), and it must not say it listens\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
	for _, want := range []string{"cannot listen on " + addr + " (ASKUSER_EMBEDDED_REDIS_ADDR): another process already does", "ASKUSER_DATA_DIR", "ASKUSER_REDIS_URL=redis://" + addr} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errb.String())
		}
	}
}

func firstRun(t *testing.T) {
	b := startBridge(t, map[string]string{})
	out := b.stdout.String()
	if !strings.Contains(out, "embedded Redis listening on "+b.redisAddr) || !strings.Contains(out, "http://"+b.httpAddr+"/") {
		t.Errorf("start-up does not say where things are:\n%s", out)
	}
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	res := askAsync(context.Background(), env, "--question", "Where should this deploy?", "--header", "Target",
		"--option", "Staging: safer default", "--option", "Production", "--id", "walk-1", "--agent", "deploy-bot")
	waitOpen(t, b, "walk-1")
	answerOnPage(t, b, "walk-1", `{"answers":{"answer":["Staging"]}}`)
	r := <-res
	if r.code != exitAnswered {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	var result struct {
		ID      string
		Status  string
		Answers struct{ Answers map[string][]string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &result); err != nil {
		t.Fatalf("output is not the result JSON: %q", r.stdout)
	}
	if result.ID != "walk-1" || result.Status != "answered" || result.Answers.Answers["answer"][0] != "Staging" {
		t.Errorf("result %+v", result)
	}

	// The same Redis is open to redis-cli users: the protocol example.
	rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
	defer rdb.Close()
	ctx := context.Background()
	req := `{"id":"deploy-42","to":"web","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask", req}}).Err(); err != nil {
		t.Fatal(err)
	}
	waitOpen(t, b, "deploy-42")
	answerOnPage(t, b, "deploy-42", `{"answers":{"deploy_target":["Staging (Recommended)"]}}`)
	got, err := rdb.BLPop(ctx, 5*time.Second, "askuser:result:{deploy-42}").Result()
	if err != nil || !strings.Contains(got[1], `"answers":{"answers":{"deploy_target":["Staging (Recommended)"]}}`) {
		t.Errorf("BLPOP: %v %v", got, err)
	}
}

func TestAskCancelOnInterrupt(t *testing.T) {
	b := startBridge(t, map[string]string{})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	ctx, interrupt := context.WithCancel(context.Background())
	res := askAsync(ctx, env, "--question", "Proceed?", "--option", "A", "--option", "B", "--id", "ctrl-c")
	waitOpen(t, b, "ctrl-c")
	interrupt()
	r := <-res
	if r.code != exitNoAnswer || !strings.Contains(r.stdout, `"reason":"cancelled"`) {
		t.Errorf("exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
	}
}

func TestAskExitStatuses(t *testing.T) {
	b := startBridge(t, map[string]string{})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"id":"refused-1","questions":[{"id":"Bad","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-askAsync(context.Background(), env, "--json", bad)
	if r.code != exitError || !strings.Contains(r.stdout, "snake_case") {
		t.Errorf("refused: exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
	}
	r = <-askAsync(context.Background(), env, "--question", "Q?", "--option", "A", "--option", "B", "--to", "nowhere", "--id", "refused-2")
	if r.code != exitError || !strings.Contains(r.stdout, `unknown route \"nowhere\"`) {
		t.Errorf("unknown route: exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
	}
	res := askAsync(context.Background(), env, "--question", "Q?", "--option", "A", "--option", "B", "--id", "skip-1", "--multi")
	waitOpen(t, b, "skip-1")
	answerOnPage(t, b, "skip-1", `{"skip":true}`)
	if r := <-res; r.code != exitNoAnswer || !strings.Contains(r.stdout, `"reason":"skipped"`) {
		t.Errorf("skip: exit %d, out %s", r.code, r.stdout)
	}
	if r := <-askAsync(context.Background(), env, "--question", "Q?"); r.code != exitError || !strings.Contains(r.stderr, "--option") {
		t.Errorf("missing options: exit %d, err %s", r.code, r.stderr)
	}
}

// TestRefusalsArriveAtOnce pushes one invalid request per validation rule
// and expects each error result within a second.
func TestRefusalsArriveAtOnce(t *testing.T) {
	b := startBridge(t, map[string]string{})
	rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
	defer rdb.Close()
	q := func(s string) string { return `"questions":[` + s + `]` }
	ok := `{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}`
	tests := []struct{ body, want string }{
		{`{"id":"r1"}`, "questions is required"},
		{`{"id":"r2",` + q(``) + `}`, "questions must contain 1 to 3 questions"},
		{`{"id":"r3",` + q(ok+","+ok) + `}`, `questions[1].id "a" is already used`},
		{`{"id":"r4",` + q(`{"id":"A","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}`) + `}`, "snake_case"},
		{`{"id":"r5",` + q(`{"id":"a","header":" ","question":"Q?","options":[{"label":"A"},{"label":"B"}]}`) + `}`, "questions[0].header must not be empty"},
		{`{"id":"r6",` + q(`{"id":"a","header":"H","question":"","options":[{"label":"A"},{"label":"B"}]}`) + `}`, "questions[0].question must not be empty"},
		{`{"id":"r7",` + q(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A"}]}`) + `}`, "questions[0].options must contain 2 to 4 options"},
		{`{"id":"r8",` + q(`{"id":"a","header":"H","question":"Q?","options":[{"label":"`+strings.Repeat("x", 65)+`"},{"label":"B"}]}`) + `}`, "questions[0].options[0].label must be at most 64 characters"},
		{`{"id":"r9",` + q(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"a"}]}`) + `}`, "labels must be unique, ignoring case"},
		{`{"id":"r10",` + q(`{"id":"a","header":"H","question":"Q?","options":[{"label":""},{"label":"B"}]}`) + `}`, "questions[0].options[0].label must not be empty"},
		{`{"id":"r11",` + q(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}],"multiSelect":"yes"}`) + `}`, "multiSelect must be a boolean"},
		{`{"id":"r12",` + q(ok) + `,"timeoutSeconds":12.5}`, "timeoutSeconds must be an integer"},
		{`{"id":"r13",` + q(ok) + `,"timeoutSeconds":"60"}`, "timeoutSeconds must be an integer"},
		{`{"id":"r14",` + q(ok) + `,"extra":1}`, `"extra" is not a known field`},
		{`{"id":"r15",` + q(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A","value":1},{"label":"B"}]}`) + `}`, `questions[0].options[0]."value" is not a known field`},
		{`{"id":"r16","to":"nowhere",` + q(ok) + `}`, `unknown route "nowhere"`},
	}
	ctx := context.Background()
	for _, tt := range tests {
		var probe struct{ ID string }
		_ = json.Unmarshal([]byte(tt.body), &probe)
		t.Run(probe.ID, func(t *testing.T) {
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask", tt.body}}).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := rdb.BLPop(ctx, time.Second, "askuser:result:{"+probe.ID+"}").Result()
			if err != nil {
				t.Fatalf("no error result within a second: %v", err)
			}
			if !strings.Contains(got[1], `"status":"error"`) || !strings.Contains(got[1], jsonQuote(tt.want)) {
				t.Errorf("result %s, want an error containing %q", got[1], tt.want)
			}
		})
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestProfiler: with ASKUSER_PPROF_ADDR the profiler answers on its own
// loopback listener, and never on the main one; without it, it is off.
func TestProfiler(t *testing.T) {
	addr := freeAddr(t)
	b := startBridge(t, map[string]string{"ASKUSER_PPROF_ADDR": addr})
	resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) == 0 {
		t.Fatalf("profiler: %d %q", resp.StatusCode, body)
	}
	if code, body := b.get(t, "/debug/pprof/cmdline"); code == 200 && !strings.Contains(body, "<html") {
		t.Fatalf("the main listener serves the profiler: %d %q", code, body)
	}
	off := startBridge(t, map[string]string{})
	if strings.Contains(off.stderr.String(), "profiler listening") {
		t.Fatal("the profiler started without ASKUSER_PPROF_ADDR")
	}
}

func TestOperations(t *testing.T) {
	b := startBridge(t, map[string]string{})
	if code, body := b.get(t, "/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	code, body := b.get(t, "/readyz")
	var ready struct {
		Ready    bool
		Redis    string
		Channels map[string]string
	}
	if err := json.Unmarshal([]byte(body), &ready); err != nil || code != 200 || !ready.Ready || ready.Channels["web"] != "connected" {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// One answered question shows in the metrics.
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	res := askAsync(context.Background(), env, "--question", "Q?", "--option", "A", "--option", "B", "--id", "metrics-1")
	waitOpen(t, b, "metrics-1")
	_, body = b.get(t, "/metrics")
	if !strings.Contains(body, "askbridge_questions_pending 1") {
		t.Errorf("metrics do not show the pending question:\n%s", grepLines(body, "askbridge_"))
	}
	answerOnPage(t, b, "metrics-1", `{"answers":{"answer":["A"]}}`)
	<-res
	_, body = b.get(t, "/metrics")
	for _, want := range []string{
		`askbridge_questions_ended_total{outcome="answered",platform="web"} 1`,
		`askbridge_time_to_answer_seconds_count{platform="web"} 1`,
		`askbridge_messages_sent_total{platform="web"} 1`,
		"askbridge_questions_pending 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "askbridge_"))
		}
	}
	// Logs are JSON and never hold a secret.
	for _, line := range strings.Split(strings.TrimSpace(b.stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestBadConfigurationNamesTheKey(t *testing.T) {
	var out, errb syncBuffer
	code := serve(context.Background(), envList(map[string]string{"ASKUSER_HTTP_ADDR": "not-an-address"}), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "ASKUSER_HTTP_ADDR") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	code = serve(context.Background(), envList(map[string]string{"ASKUSER_TELEGRAM_TOKEN": "123:abc", "ASKUSER_TELEGRAM_TOKEN_FILE": "/x"}), &out, &errb)
	if code != 2 || strings.Contains(errb.String(), "123:abc") {
		t.Errorf("exit %d, stderr shows the token or is wrong: %q", code, errb.String())
	}
}

// A misspelt setting stops the bridge before it starts anything, naming
// the variable and the setting it is closest to: left out, the bridge
// would run on the defaults as if nothing were set.
func TestMisspeltSettingRefused(t *testing.T) {
	environ := envList(map[string]string{
		"ASKUSER_HTTP_ADRR": freeAddr(t),
		// Where the bridge would run if it started after all, beside other tests.
		"ASKUSER_HTTP_ADDR": freeAddr(t), "ASKUSER_EMBEDDED_REDIS_ADDR": freeAddr(t), "ASKUSER_DATA_DIR": t.TempDir(),
	})
	// Bounded: a bridge that started after all runs until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := serve(ctx, environ, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "ASKUSER_HTTP_ADRR is not a setting; did you mean ASKUSER_HTTP_ADDR?") || out.String() != "" {
		t.Errorf("exit %d (want 2)\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
	}
}

func TestGracefulShutdownReleasesWork(t *testing.T) {
	b := startBridge(t, map[string]string{})
	b.stop()
	select {
	case code := <-b.done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
		b.done <- code // for the cleanup
	case <-time.After(35 * time.Second):
		t.Fatal("bridge did not stop on its context")
	}
	if !strings.Contains(b.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no stop logged: %s", b.stderr.String())
	}
}

// The program names itself askbridge in its usage, its errors and its
// version.
func TestVersionAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, nil, &out, &errb, nil); code != 0 || !strings.HasPrefix(out.String(), "usage:\n  askbridge ") {
		t.Errorf("help: %d %q", code, out.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		if fields := strings.Fields(line); fields[0] != "askbridge" && !strings.HasPrefix(line, "                         ") {
			t.Errorf("usage line does not name askbridge: %q", line)
		}
	}
	out.Reset()
	if code := run([]string{"frobnicate"}, nil, &out, &errb, nil); code != 2 || !strings.HasPrefix(errb.String(), `askbridge: unknown command "frobnicate"`) {
		t.Errorf("unknown command: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"serve", "now"}, nil, &out, &errb, nil); code != 2 || !strings.HasPrefix(errb.String(), "askbridge: serve takes no arguments") {
		t.Errorf("serve with an argument: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := ask(context.Background(), []string{"extra"}, nil, &out, &errb, mapEnv(nil)); code != exitError || !strings.HasPrefix(errb.String(), `askbridge ask: unexpected argument "extra"`) {
		t.Errorf("ask with an argument: %d %q", code, errb.String())
	}
}

// Not stamped with -ldflags, `askbridge version` says what the build
// information says: a test binary has some (the main module's version,
// the Go release), though no commit.
func TestVersionFromBuildInfo(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("the test binary has no build information")
	}
	if version != "dev" {
		t.Fatalf("version is stamped (%q): this test wants the fallback", version)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, nil, &out, &errb, nil); code != 0 {
		t.Fatalf("version: exit %d %s", code, errb.String())
	}
	want := fmt.Sprintf("askbridge %s (%s", info.Main.Version, info.GoVersion)
	if info.Main.Version == "" || !strings.HasPrefix(out.String(), want) || !strings.HasSuffix(out.String(), ")\n") {
		t.Errorf("version printed %q, want it to start with %q", out.String(), want)
	}
}

// A stamped version wins over the module's; the commit comes from the
// build information either way.
func TestBuildFrom(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.27.3", Main: debug.Module{Path: "github.com/askbridge/askbridge", Version: "v1.2.1-0.20260102030405-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	plain := &debug.BuildInfo{GoVersion: "go1.27.3", Main: debug.Module{Path: "github.com/askbridge/askbridge", Version: "(devel)"}}
	tests := []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"stamped", "v1.3.0", vcs, "askbridge v1.3.0 (go1.27.3, revision 0123456789abcdef0123456789abcdef01234567, committed 2026-01-02T03:04:05Z, modified)"},
		{"build information", "dev", vcs, "askbridge v1.2.1-0.20260102030405-0123456789ab+dirty (go1.27.3, revision 0123456789abcdef0123456789abcdef01234567, committed 2026-01-02T03:04:05Z, modified)"},
		{"no commit", "dev", plain, "askbridge (devel) (go1.27.3)"},
		{"no build information", "dev", nil, "askbridge dev (" + runtime.Version() + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildFrom(tc.stamped, tc.info).String(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
