package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/testwait"
)

// firstOpen waits for the page to show a question and returns its id.
func firstOpen(t *testing.T, b *runningBridge) string {
	t.Helper()
	var id string
	if !testwait.Until(5*time.Second, func() bool {
		_, body := b.get(t, "/api/questions")
		var list struct{ Questions []struct{ ID string } }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("GET /api/questions: %v: %s", err, body)
		}
		if len(list.Questions) > 0 {
			id = list.Questions[0].ID
		}
		return id != ""
	}) {
		t.Fatal("no question appeared on the page")
	}
	return id
}

// TestAskIDs: without --id, `bridge ask` asks under an id of its own (a
// retried push cannot ask twice); a --json request without one is pushed
// as it is and answered under the stream entry id, as the protocol says.
func TestAskIDs(t *testing.T) {
	b := startBridge(t, map[string]string{})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}

	res := askAsync(context.Background(), env, "--question", "Q?", "--option", "A", "--option", "B")
	id := firstOpen(t, b)
	if !strings.HasPrefix(id, client.IDPrefix) {
		t.Errorf("bridge ask asked under %q, want a %s… id", id, client.IDPrefix)
	}
	answerOnPage(t, b, id, `{"answers":{"answer":["B"]}}`)
	r := <-res
	if r.code != exitAnswered || !strings.Contains(r.stdout, `"id":"`+id+`"`) || !strings.Contains(r.stderr, "asked "+id) {
		t.Errorf("exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
	}

	file := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(file, []byte(`{"to":"web","questions":[{"id":"size","header":"Size","question":"Which size?","options":[{"label":"S"},{"label":"L"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res = askAsync(context.Background(), env, "--json", file)
	id = firstOpen(t, b)
	if strings.HasPrefix(id, client.IDPrefix) || !strings.Contains(id, "-") {
		t.Errorf("a --json request without an id was asked under %q, want the stream entry id", id)
	}
	answerOnPage(t, b, id, `{"skip":true}`)
	if r := <-res; r.code != exitNoAnswer || !strings.Contains(r.stdout, `"reason":"skipped"`) || !strings.Contains(r.stdout, `"id":"`+id+`"`) {
		t.Errorf("exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
	}
}
