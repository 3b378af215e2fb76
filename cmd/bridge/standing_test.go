package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/engine"
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
