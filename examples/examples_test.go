package examples

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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// example is one agent in another language and how to run it.
type example struct {
	name string
	// idPrefix opens the ids the example makes.
	idPrefix string
	// command finds the interpreter and returns the command line, or says
	// what is missing.
	command func() ([]string, error)
}

var examples = []example{
	{name: "python", idPrefix: "py-", command: pythonCommand},
	{name: "node", idPrefix: "node-", command: nodeCommand},
}

// pythonCommand runs python/ask.py with the first python3 that has
// redis-py: the one on the PATH, else Debian's (python3-redis installs for
// it, while a python3 of pyenv's may come first on the PATH).
func pythonCommand() ([]string, error) {
	var tried []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import redis").Run() == nil {
			return []string{path, filepath.Join("python", "ask.py")}, nil
		}
		tried = append(tried, path)
	}
	if len(tried) == 0 {
		return nil, fmt.Errorf("python3 is not installed: apt-get install python3 python3-redis")
	}
	return nil, fmt.Errorf("no python3 with redis-py (tried %s): apt-get install python3-redis", strings.Join(tried, ", "))
}

// nodeCommand runs node/ask.mjs once its dependencies are installed.
func nodeCommand() ([]string, error) {
	path, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not installed: apt-get install nodejs npm, then npm ci in examples/node")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "redis", "package.json")); err != nil {
		return nil, fmt.Errorf("the redis package is not installed: run npm ci in examples/node")
	}
	return []string{path, filepath.Join("node", "ask.mjs")}, nil
}

// need ends the test when an interpreter is missing: a failure where the
// examples must run (ASKBRIDGE_REQUIRE_REDIS=1, as in CI), a skip
// elsewhere.
func need(t *testing.T, ex example) []string {
	t.Helper()
	argv, err := ex.command()
	if err == nil {
		return argv
	}
	if redistest.Required() {
		t.Fatalf("the %s example cannot run (ASKBRIDGE_REQUIRE_REDIS=1): %v", ex.name, err)
	}
	t.Skipf("the %s example cannot run: %v", ex.name, err)
	return nil
}

// TestPythonWithoutRedisPy: ask.py under a python3 without redis-py (here
// one started with -S, without its site packages, as a pyenv or venv
// python3 without redis-py is) says what to install, in one line, and
// exits 1, instead of "No module named 'redis'" in a traceback.
func TestPythonWithoutRedisPy(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-S", "ask.py")
	cmd.Dir = "python"
	cmd.Env = append(os.Environ(), "ASKUSER_REDIS_URL=redis://127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || stdout.Len() != 0 {
		t.Fatalf("exit %v, want 1 and nothing on stdout\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"ask.py needs redis-py", "-m pip install -r requirements.txt", "python3-redis", "README.md"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q:\n%s", want, msg)
		}
	}
	if strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("want one line on stderr, got:\n%s", msg)
	}
}

// TestExamples runs each example against the real bridge binary: once
// answered on the web page (exit 0, the answered result printed), once
// cancelled with Ctrl-C (exit 1, the cancelled result printed and stored).
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("the Python and Node examples against the bridge binary: full tier (go test without -short)")
	}
	redistest.NeedServer(t)
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	// Not the default prefix, so the examples must read theirs.
	const prefix = "exampletest:"
	b := startBridge(t, srv.Addr, prefix)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			argv := need(t, ex)

			t.Run("answered", func(t *testing.T) {
				run := start(t, argv, srv.Addr, prefix)
				id := b.waitOpen(t, run)
				if !strings.HasPrefix(id, ex.idPrefix) {
					t.Errorf("the example asked under %q, want an id of its own (%s…)", id, ex.idPrefix)
				}
				b.answer(t, id, `{"answers":{"deploy_target":["Staging (Recommended)"]}}`)
				code, stdout, stderr := run.wait(t)
				if code != 0 {
					t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
				var res struct {
					ID      string
					Status  string
					Answers struct{ Answers map[string][]string }
				}
				if err := json.Unmarshal([]byte(stdout), &res); err != nil {
					t.Fatalf("stdout is not the result JSON (%v): %q", err, stdout)
				}
				if res.ID != id || res.Status != "answered" || strings.Join(res.Answers.Answers["deploy_target"], ",") != "Staging (Recommended)" {
					t.Errorf("printed %s", stdout)
				}
			})

			t.Run("remembered", func(t *testing.T) {
				// ASK_REMEMBER offers to keep the answer: kept on the page,
				// the next run is answered at once, via standing, unseen.
				env := "ASK_REMEMBER=deploy:" + ex.name
				run := start(t, argv, srv.Addr, prefix, env)
				id := b.waitOpen(t, run)
				b.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
				if code, stdout, stderr := run.wait(t); code != 0 {
					t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
				b.post(t, id, "keep", `{"index":0}`)
				code, stdout, stderr := start(t, argv, srv.Addr, prefix, env).wait(t)
				if code != 0 || !strings.Contains(stdout, `"via":"standing"`) || !strings.Contains(stdout, `"deploy_target":["Production"]`) {
					t.Fatalf("exit %d, want 0 and the kept answer via standing\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
			})

			t.Run("interrupted", func(t *testing.T) {
				run := start(t, argv, srv.Addr, prefix)
				id := b.waitOpen(t, run)
				if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
				code, stdout, stderr := run.wait(t)
				if code != 1 || !strings.Contains(stdout, `"reason":"cancelled"`) || !strings.Contains(stdout, `"id":"`+id+`"`) {
					t.Fatalf("exit %d, want 1 and the cancelled result\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
				ctx := context.Background()
				h := rdb.HGetAll(ctx, prefix+"question:{"+id+"}").Val()
				if h["status"] != "no_answer" || !strings.Contains(h["result"], `"reason":"cancelled"`) {
					t.Errorf("question in Redis: %v", h)
				}
				if n := rdb.LLen(ctx, prefix+"result:{"+id+"}").Val(); n != 0 {
					t.Errorf("%d results left unread", n)
				}
			})
		})
	}
}

// exampleRun is an example running as a subprocess.
type exampleRun struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
	done           chan struct{}
	code           int
}

// start runs an example against the Redis at addr under prefix; it is
// killed if it outlives the test.
func start(t *testing.T, argv []string, addr, prefix string, env ...string) *exampleRun {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "ASKUSER_REDIS_URL=redis://"+addr, "ASKUSER_REDIS_PREFIX="+prefix)
	cmd.Env = append(cmd.Env, env...)
	r := &exampleRun{cmd: cmd, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		r.code = cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// exited reports whether the example has ended.
func (r *exampleRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// wait waits for the example to end and returns its exit status and
// output.
func (r *exampleRun) wait(t *testing.T) (int, string, string) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the example did not end\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	return r.code, r.stdout.String(), r.stderr.String()
}

// bridge is the bridge binary running on a test Redis, with its web page
// on a free loopback port and no token.
type bridge struct {
	url    string
	output *platformtest.SyncBuffer
}

// startBridge builds cmd/bridge and runs it on the Redis at redisAddr
// under prefix until the test ends (then SIGTERM, a graceful stop), and
// waits until its web page answers.
func startBridge(t *testing.T, redisAddr, prefix string) *bridge {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bridge")
	build := exec.Command("go", "build", "-o", bin, "./cmd/bridge")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bridge: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	b := &bridge{url: "http://" + addr, output: &platformtest.SyncBuffer{}}
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"ASKUSER_REDIS_URL=redis://" + redisAddr,
		"ASKUSER_REDIS_PREFIX=" + prefix,
		"ASKUSER_HTTP_ADDR=" + addr,
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
			t.Errorf("the bridge did not stop on SIGTERM: %s", b.output)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(b.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return b
			}
		}
		select {
		case <-exited:
			t.Fatalf("the bridge exited: %s", b.output)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("the bridge did not start: %s", b.output)
	return nil
}

// waitOpen waits until the page shows a question and returns its id; it
// fails if the example ends first.
func (b *bridge) waitOpen(t *testing.T, run *exampleRun) string {
	t.Helper()
	id := ""
	ok := testwait.Until(15*time.Second, func() bool {
		if run.exited() {
			t.Fatalf("the example ended before its question showed (exit %d)\nstdout: %s\nstderr: %s", run.code, run.stdout, run.stderr)
		}
		resp, err := http.Get(b.url + "/api/questions")
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Questions []struct{ ID string } }
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET /api/questions: %v", err)
		}
		if len(list.Questions) > 0 {
			id = list.Questions[0].ID
		}
		return id != ""
	})
	if !ok {
		t.Fatalf("no question showed on the page\nexample stderr: %s\nbridge: %s", run.stderr, b.output)
	}
	return id
}

// answer posts an answer as the page does.
func (b *bridge) answer(t *testing.T, id, body string) {
	t.Helper()
	b.post(t, id, "answer", body)
}

// post posts body to the page's api/questions/<id>/<what>, as the page
// does, and fails the test unless the bridge says 200.
func (b *bridge) post(t *testing.T, id, what, body string) {
	t.Helper()
	resp, err := http.Post(b.url+"/api/questions/"+id+"/"+what, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s: %s", what, id, resp.Status, out)
	}
}
