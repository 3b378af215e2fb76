package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestMatrixWalkthrough is the operator's setup against a real homeserver
// (Dendrite): a bot user and its token, a room it was invited to and
// joined; `askbridge ask --to matrix:<room>` posts a poll, a person's vote
// answers, the poll is ended, /readyz shows the channel, and the platform
// calls are timed under platform="matrix".
func TestMatrixWalkthrough(t *testing.T) {
	dendritetest.SkipShort(t)
	hs := dendritetest.Start(t)
	bot, botToken := hs.Register(t, "askbridge")
	alice, _ := hs.Register(t, "alice")
	room := hs.CreateRoom(t, alice, bot)
	hs.Join(t, bot, room)
	tl := dendritetest.NewTimeline(t, hs.Client(t, alice), room)

	b := startBridge(t, map[string]string{
		"ASKUSER_MATRIX_TOKEN":      botToken,
		"ASKUSER_MATRIX_HOMESERVER": hs.URL,
		"ASKUSER_MATRIX_USER":       bot.String(),
	})
	last := ""
	if !testwait.Until(15*time.Second, func() bool {
		_, last = b.get(t, "/readyz")
		var r struct{ Channels map[string]string }
		return json.Unmarshal([]byte(last), &r) == nil && r.Channels["matrix"] == "connected"
	}) {
		t.Fatalf("the Matrix channel did not connect: /readyz %s\nthe bridge's log:\n%s", last, grepLines(b.stderr.String(), "matrix"))
	}
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	res := askAsync(context.Background(), env, "--to", "matrix:"+room.String(), "--question", "Ship build 4812?", "--option", "Ship", "--option", "Hold")

	poll := tl.Next(t, func(ev *event.Event) bool {
		return ev.Sender == bot && ev.Type.Type == "org.matrix.msc3381.poll.start"
	})
	body, _ := poll.Content.Raw["body"].(string)
	if !strings.Contains(body, "Ship build 4812?") {
		t.Fatalf("poll fallback %q", body)
	}
	pollContent, _ := poll.Content.Raw["org.matrix.msc3381.poll.start"].(map[string]any)
	list, _ := pollContent["answers"].([]any)
	if len(list) < 2 {
		t.Fatalf("poll answers %v", list)
	}
	hold := list[1].(map[string]any)["id"].(string)
	dendritetest.Send(t, hs.Client(t, alice), room, event.Type{Type: "org.matrix.msc3381.poll.response", Class: event.MessageEventType}, map[string]any{
		"m.relates_to":                     map[string]any{"rel_type": "m.reference", "event_id": poll.ID},
		"org.matrix.msc3381.poll.response": map[string]any{"answers": []string{hold}},
	})
	select {
	case r := <-res:
		for _, want := range []string{`"status":"answered"`, `"Hold"`, `"platform":"matrix"`, `"id":"` + alice.String() + `"`} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("result lacks %s: %s", want, r.stdout)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no result after the vote")
	}
	tl.Next(t, func(ev *event.Event) bool {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		return ev.Sender == bot && ev.Type.Type == "org.matrix.msc3381.poll.end" && rel["event_id"] == poll.ID.String()
	})
	if _, metrics := b.get(t, "/metrics"); !strings.Contains(metrics, `askbridge_platform_call_duration_seconds_count{method="PUT /rooms/{id}/send/org.matrix.msc3381.poll.start/{id}",platform="matrix"}`) {
		t.Errorf("the poll's send is not timed under platform matrix:\n%s", grepLines(metrics, `platform="matrix"`))
	}
}
