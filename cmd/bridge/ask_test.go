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

// TestAskIDs: without --id, `askbridge ask` asks under an id of its own (a
// retried push cannot ask twice); a --json request without one is pushed
// as it is and answered under the stream entry id, as the protocol says.
func TestAskIDs(t *testing.T) {
	b := startBridge(t, map[string]string{})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}

	res := askAsync(context.Background(), env, "--question", "Q?", "--option", "A", "--option", "B")
	id := firstOpen(t, b)
	if !strings.HasPrefix(id, client.IDPrefix) {
		t.Errorf("askbridge ask asked under %q, want a %s… id", id, client.IDPrefix)
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

// TestAskSaysWhatHappens: a request the bridge refuses at once is said to
// be refused, with the reason, and never to be waited for; a --timeout
// (or a JSON timeoutSeconds) out of bounds is said to be clamped, and to
// what.
func TestAskSaysWhatHappens(t *testing.T) {
	b := startBridge(t, map[string]string{})
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}

	t.Run("refused", func(t *testing.T) {
		r := <-askAsync(context.Background(), env, "--to", "nowhere", "--question", "Q?", "--option", "A", "--option", "B")
		if r.code != exitError || !strings.Contains(r.stdout, `"status":"error"`) {
			t.Fatalf("exit %d (want %d), stdout %s", r.code, exitError, r.stdout)
		}
		if !strings.Contains(r.stderr, "askbridge ask: the bridge refused request ask-") || !strings.Contains(r.stderr, `"nowhere"`) ||
			strings.Contains(r.stderr, "waiting") {
			t.Errorf("stderr must say it was refused and why, and not that it waits:\n%s", r.stderr)
		}
	})

	file := filepath.Join(t.TempDir(), "req.json")
	if err := os.WriteFile(file, []byte(`{"to":"web","timeoutSeconds":4000,"questions":[{"id":"a","header":"A","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"below", []string{"--timeout", "10", "--question", "Q?", "--option", "A", "--option", "B"}, "askbridge ask: --timeout 10 is below the least, 30: the question waits 30 seconds\n"},
		{"above", []string{"--timeout", "5000", "--question", "Q?", "--option", "A", "--option", "B"}, "askbridge ask: --timeout 5000 is above the most, 3600: the question waits 3600 seconds\n"},
		{"json", []string{"--json", file}, "askbridge ask: timeoutSeconds 4000 is above the most, 3600: the question waits 3600 seconds\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := askAsync(context.Background(), env, tc.args...)
			answerOnPage(t, b, firstOpen(t, b), `{"skip":true}`)
			r := <-res
			if r.code != exitNoAnswer || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "waiting for the answer") {
				t.Errorf("exit %d (want %d), stderr does not say %q and that it waits:\n%q", r.code, exitNoAnswer, tc.want, r.stderr)
			}
		})
	}
}
