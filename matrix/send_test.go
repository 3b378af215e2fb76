package matrix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/matrix"
)

// room is a room on the test's homeserver: the bot's channel in it, and a
// person whose timeline shows what the bot posts.
type room struct {
	id     id.RoomID
	bot    id.UserID
	ch     *matrix.Channel
	person *mautrix.Client
	tl     *dendritetest.Timeline
	srv    *dendritetest.Server
}

// newRoom starts a homeserver for the test, registers a bot and a person
// under names of the test's own (prefix), has the bot create a room the
// person joins, and makes the channel on it.
func newRoom(t *testing.T, prefix string) *room {
	t.Helper()
	srv := dendritetest.Start(t)
	return newRoomVia(t, srv, prefix, srv.URL)
}

// newRoomVia is newRoom on homeserver hs, the channel reaching it at url
// (the server's, or a proxy's).
func newRoomVia(t *testing.T, hs *dendritetest.Server, prefix, url string) *room {
	t.Helper()
	bot, token := hs.Register(t, prefix+"-bot")
	person, _ := hs.Register(t, prefix+"-alice")
	rid := hs.CreateRoom(t, bot, person)
	hs.Join(t, person, rid)
	ch, err := matrix.New(matrix.Config{Homeserver: url, User: bot.String(), Token: token}, newStore(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	cli := hs.Client(t, person)
	return &room{id: rid, bot: bot, ch: ch, person: cli, tl: dendritetest.NewTimeline(t, cli, rid), srv: hs}
}

func plan(t *testing.T, id, js string) (engine.Plan, askbridge.Request) {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return engine.BuildPlan(id, req, matrix.Capabilities), req
}

const (
	pollRequest = `{"questions":[{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]}`
	textRequest = `{"questions":[{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"}]}]}`
)

// send shows p in r and returns the one message Send handed to Sent.
func (r *room) send(t *testing.T, p engine.Plan) (engine.MessageRef, error) {
	t.Helper()
	var refs []engine.MessageRef
	err := r.ch.Send(context.Background(), engine.Delivery{Chat: r.id.String(), Plan: p, Sent: func(ref engine.MessageRef) bool {
		refs = append(refs, ref)
		return true
	}})
	if err != nil {
		return engine.MessageRef{}, err
	}
	if len(refs) != 1 || refs[0].Platform != matrix.Platform || refs[0].Chat != r.id.String() || refs[0].Part != 0 {
		t.Fatalf("Send recorded %+v, want one matrix message, part 0, in %s", refs, r.id)
	}
	return refs[0], nil
}

// marker has the person post a message and returns its id: what the
// bot posted before it is all there is.
func (r *room) marker(t *testing.T) id.EventID {
	t.Helper()
	return dendritetest.Send(t, r.person, r.id, event.EventMessage, map[string]any{"msgtype": "m.text", "body": "marker"})
}

// fromBot is the bot's message events (state events left out) of the
// timeline up to id last.
func (r *room) fromBot(t *testing.T, last id.EventID) []*event.Event {
	t.Helper()
	var out []*event.Event
	for _, ev := range r.tl.Upto(t, last) {
		if ev.Sender == r.bot && ev.StateKey == nil {
			out = append(out, ev)
		}
	}
	return out
}

func TestSendPollAndFinish(t *testing.T) {
	r := newRoom(t, "poll")
	p, req := plan(t, "qpoll001", pollRequest)
	ref, err := r.send(t, p)
	if err != nil {
		t.Fatal(err)
	}
	end := engine.Ending{Plan: p, Status: engine.StatusLine(req, askbridge.NoAnswer("", askbridge.ReasonTimeout, ""))}
	for range 2 { // safe to repeat: the second posts nothing new
		if err := r.ch.Finish(context.Background(), ref, end); err != nil {
			t.Fatal(err)
		}
	}
	evs := r.fromBot(t, r.marker(t))
	if len(evs) != 3 {
		t.Fatalf("the bot posted %d events, want the poll, its end and its edit: %v", len(evs), types(evs))
	}
	poll, ended, edit := evs[0], evs[1], evs[2]
	if poll.ID.String() != ref.Message || poll.Type.Type != "org.matrix.msc3381.poll.start" {
		t.Fatalf("first event %s %s, want the poll %s", poll.Type.Type, poll.ID, ref.Message)
	}
	answers := poll.Content.Raw["org.matrix.msc3381.poll.start"].(map[string]any)["answers"].([]any)
	if len(answers) != len(p.Buttons()) || answers[0].(map[string]any)["id"] != p.Buttons()[0].Payload {
		t.Errorf("poll answers %v, want the plan's buttons", answers)
	}
	if rel := relation(ended); ended.Type.Type != "org.matrix.msc3381.poll.end" || rel["rel_type"] != "m.reference" || rel["event_id"] != ref.Message {
		t.Errorf("second event %s relates %v, want the poll's end", ended.Type.Type, rel)
	}
	newText, _ := edit.Content.Raw["m.new_content"].(map[string]any)["body"].(string)
	if rel := relation(edit); rel["rel_type"] != "m.replace" || !strings.HasSuffix(newText, "\n\n"+end.Status) {
		t.Errorf("third event relates %v with text %q, want an edit ending in %q", rel, newText, end.Status)
	}
}

func TestSendTextAndFinish(t *testing.T) {
	r := newRoom(t, "text")
	p, req := plan(t, "qtext001", textRequest)
	ref, err := r.send(t, p)
	if err != nil {
		t.Fatal(err)
	}
	end := engine.Ending{Plan: p, Status: engine.StatusLine(req, askbridge.NoAnswer("", askbridge.ReasonSkipped, ""))}
	if err := r.ch.Finish(context.Background(), ref, end); err != nil {
		t.Fatal(err)
	}
	evs := r.fromBot(t, r.marker(t))
	if len(evs) != 2 {
		t.Fatalf("the bot posted %v, want the prompt and its edit", types(evs))
	}
	c := evs[0].Content.Raw
	if c["msgtype"] != "m.text" || c["format"] != "org.matrix.custom.html" || !strings.Contains(c["body"].(string), "1. Unit") {
		t.Errorf("prompt content %v, want numbered HTML text", c)
	}
	if m, ok := c["m.mentions"].(map[string]any); !ok || len(m) != 0 {
		t.Errorf("prompt m.mentions = %v, want {}", c["m.mentions"])
	}
	nc := evs[1].Content.Raw["m.new_content"].(map[string]any)
	if rel := relation(evs[1]); rel["event_id"] != ref.Message || !strings.HasSuffix(nc["body"].(string), end.Status) || strings.Contains(nc["body"].(string), "Reply") {
		t.Errorf("edit %v of %v, want the text without instructions and with %q", nc["body"], rel, end.Status)
	}
}

func TestEncryptedRoomRefused(t *testing.T) {
	r := newRoom(t, "crypt")
	bot := r.srv.Client(t, r.bot)
	if _, err := bot.SendStateEvent(context.Background(), r.id, event.StateEncryption, "", map[string]any{"algorithm": "m.megolm.v1.aes-sha2"}); err != nil {
		t.Fatal(err)
	}
	p, _ := plan(t, "qcrypt01", pollRequest)
	_, err := r.send(t, p)
	kind, _, reason := engine.Classify(err)
	if kind != engine.Permanent || !strings.Contains(reason, "end-to-end encrypted, which the bridge does not serve yet") {
		t.Fatalf("Send to an encrypted room: %v, want permanent with the words", err)
	}
	if evs := r.fromBot(t, r.marker(t)); len(evs) != 0 {
		t.Errorf("the bot posted %v in an encrypted room", types(evs))
	}
}

func TestSendErrors(t *testing.T) {
	hs := dendritetest.Start(t)
	bot, token := hs.Register(t, "errs-bot")
	other, _ := hs.Register(t, "errs-other")
	notIn := hs.CreateRoom(t, other)
	p, _ := plan(t, "qerrs001", pollRequest)
	tests := []struct {
		name, room, token string
		words             string
		badCredentials    bool
	}{
		{"not in the room", notIn.String(), token, "M_FORBIDDEN", false},
		{"unknown room", "!nowhere:" + hs.ServerName, token, "M_FORBIDDEN", false},
		{"bad token", notIn.String(), "not-a-token", "M_UNKNOWN_TOKEN", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := matrix.New(matrix.Config{Homeserver: hs.URL, User: bot.String(), Token: tc.token}, newStore(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = ch.Send(context.Background(), engine.Delivery{Chat: tc.room, Plan: p})
			kind, _, reason := engine.Classify(err)
			if kind != engine.Permanent || !strings.Contains(reason, tc.words) {
				t.Fatalf("Send: %v, want permanent saying %s", err, tc.words)
			}
			if got := ch.State() == engine.StateBadCredentials; got != tc.badCredentials {
				t.Errorf("State %q after %v", ch.State(), err)
			}
		})
	}
}

func TestRateLimitWaitedOut(t *testing.T) {
	hs := dendritetest.Start(t)
	proxy := dendritetest.NewProxy(t, hs.URL)
	r := newRoomVia(t, hs, "limit", proxy.URL)
	p, _ := plan(t, "qlimit01", textRequest)
	proxy.LimitSends(r.id, 1, 700*time.Millisecond)
	_, err := r.send(t, p)
	kind, wait, _ := engine.Classify(err)
	if kind != engine.RateLimited || wait != 700*time.Millisecond {
		t.Fatalf("Send under a 429: %v, want rate limited for 700ms", err)
	}
	start := time.Now()
	if _, err := r.send(t, p); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Errorf("the second Send went out after %s, before the room's cooldown ended", waited)
	}
	if evs := r.fromBot(t, r.marker(t)); len(evs) != 1 {
		t.Errorf("the bot posted %v, want the prompt once", types(evs))
	}
}

func TestDroppedReplyPostsOnce(t *testing.T) {
	hs := dendritetest.Start(t)
	proxy := dendritetest.NewProxy(t, hs.URL)
	r := newRoomVia(t, hs, "drop", proxy.URL)
	p, _ := plan(t, "qdrop001", pollRequest)
	proxy.DropSends(r.id, 1, dendritetest.DropReply)
	_, err := r.send(t, p)
	if kind, _, _ := engine.Classify(err); err == nil || kind != engine.Temporary {
		t.Fatalf("Send whose reply was dropped: %v, want a temporary error", err)
	}
	ref, err := r.send(t, p)
	if err != nil {
		t.Fatal(err)
	}
	evs := r.fromBot(t, r.marker(t))
	if len(evs) != 1 || evs[0].ID.String() != ref.Message {
		t.Errorf("the bot posted %v, want the poll %s once", types(evs), ref.Message)
	}
}

func relation(ev *event.Event) map[string]any {
	rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
	return rel
}

func types(evs []*event.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type.Type+" "+ev.ID.String())
	}
	return out
}
