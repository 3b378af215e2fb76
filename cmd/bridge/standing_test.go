package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

// runStanding runs `askbridge standing args…` against env's Redis.
func runStanding(env map[string]string, args ...string) askRun {
	var out, errb syncBuffer
	code := standing(context.Background(), args, &out, &errb, mapEnv(env))
	return askRun{code, out.String(), errb.String()}
}

// keepOn makes a standing answer stand on the bridge's Redis, as a keep
// would: this build's bridge refuses remember, so none is kept through it.
func keepOn(t *testing.T, b *runningBridge, agent, key string) {
	t.Helper()
	rdb, err := store.Connect(t.Context(), "redis://"+b.redisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	st := store.New(rdb, store.Options{Prefix: config.DefaultPrefix})
	now := time.Now()
	s := engine.StandingAnswer{
		Agent: agent, Key: key, Shape: "s", Answers: map[string][]string{"deploy_target": {"Production"}},
		By:    askbridge.Person{Platform: "telegram", ID: "1", Name: "Alice"},
		Since: now, Until: now.Add(time.Hour), Gen: engine.Nonce(),
		Target: askbridge.Target{Platform: "telegram", Chat: "1"}, Locale: "en",
	}
	if set, err := st.SetStanding(t.Context(), s); err != nil || !set {
		t.Fatalf("set standing: %v, %v", set, err)
	}
}

// TestStandingCommand: `askbridge standing list` prints the standing
// answers as a table and as JSON lines; `standing revoke` pushes the
// revoke entry and says the bridge revoked it; a second says none stands.
func TestStandingCommand(t *testing.T) {
	b := startBridge(t, map[string]string{})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	if r := runStanding(env, "list"); r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, "AGENT") {
		t.Fatalf("empty list: exit %d, out %q, err %s", r.code, r.stdout, r.stderr)
	}
	keepOn(t, b, "deploy-bot", "deploy:prod")

	r := runStanding(env, "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("list: exit %d, out %q, err %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"deploy-bot", "deploy:prod", "deploy_target=Production", "Alice", " UTC", " 0"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	r = runStanding(env, "list", "--json")
	var line standingLine
	if err := json.Unmarshal([]byte(r.stdout), &line); err != nil || r.code != 0 {
		t.Fatalf("list --json: exit %d, %v: %q", r.code, err, r.stdout)
	}
	if line.Agent != "deploy-bot" || line.Key != "deploy:prod" || line.By.Name != "Alice" || line.Until-line.Since != time.Hour.Milliseconds() {
		t.Errorf("json line = %+v", line)
	}

	if r := runStanding(env, "revoke", "deploy-bot", "no spaces please"); r.code != exitError || !strings.Contains(r.stderr, "key") {
		t.Errorf("bad key: exit %d, err %s", r.code, r.stderr)
	}
	if r := runStanding(env, "revoke", "deploy-bot", "deploy:prod"); r.code != exitAnswered || !strings.Contains(r.stdout, "revoked deploy-bot's deploy:prod (kept by Alice)") {
		t.Fatalf("revoke: exit %d, out %q, err %s", r.code, r.stdout, r.stderr)
	}
	if r := runStanding(env, "list", "--json"); r.code != 0 || r.stdout != "" {
		t.Errorf("list after revoke: exit %d, out %q", r.code, r.stdout)
	}
	if r := runStanding(env, "revoke", "deploy-bot", "deploy:prod"); r.code != exitNoAnswer || !strings.Contains(r.stderr, "no standing answer") {
		t.Errorf("revoke again: exit %d, out %q, err %s", r.code, r.stdout, r.stderr)
	}
	if r := runStanding(env, "forget"); r.code != exitError {
		t.Errorf("unknown subcommand: exit %d", r.code)
	}
}

// TestStandingMetrics: a kept answer, its use by the next ask and its
// revoke by a stream entry are counted in askbridge_standing_total.
func TestStandingMetrics(t *testing.T) {
	b := startBridge(t, map[string]string{})
	rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
	defer rdb.Close()
	ctx := context.Background()
	xadd := func(field, value string) {
		t.Helper()
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{field, value}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(id string) string {
		return `{"id":"` + id + `","to":"web","agent":"bot","remember":{"key":"deploy","offer":[3600]},"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`
	}
	xadd("ask", ask("sm-first"))
	waitOpen(t, b, "sm-first")
	answerOnPage(t, b, "sm-first", `{"answers":{"a":["A"]}}`)
	resp, err := http.Post("http://"+b.httpAddr+"/api/questions/sm-first/keep", "application/json", strings.NewReader(`{"index":0}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("keep: %s", resp.Status)
	}
	xadd("ask", ask("sm-second"))
	got, err := rdb.BLPop(ctx, 5*time.Second, "askuser:result:{sm-second}").Result()
	if err != nil || !strings.Contains(got[1], `"via":"standing"`) {
		t.Fatalf("second ask: %v %v; want it answered via standing", got, err)
	}
	xadd("revoke", `{"agent":"bot","key":"deploy"}`)
	wants := []string{
		`askbridge_standing_total{event="kept"} 1`,
		`askbridge_standing_total{event="used"} 1`,
		`askbridge_standing_total{event="revoked"} 1`,
	}
	var body string
	ok := testwait.Until(5*time.Second, func() bool {
		_, body = b.get(t, "/metrics")
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Errorf("metrics lack %q:\n%s", wants, grepLines(body, "askbridge_standing"))
	}
}
