package matrix_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestEscalationToAnotherRoom: a question asked in room A with an
// escalation step to room B is not answered in A within the step's time,
// so it is also asked in B, saying why; bob answers by poll vote in B,
// and the question ends answered there, with both polls ended and edited
// to show the end. Each room holds exactly what the bot should have
// posted: A the poll, its end and its edit; B the same and the notice to
// bob's vote.
func TestEscalationToAnotherRoom(t *testing.T) {
	e := newEnv(t, "escalate")
	roomB := e.srv.CreateRoom(t, e.bot, e.alice.UserID, e.bob.UserID)
	e.srv.Join(t, e.alice.UserID, roomB)
	e.srv.Join(t, e.bob.UserID, roomB)
	tlB := dendritetest.NewTimeline(t, e.srv.Client(t, e.alice.UserID), roomB)
	nextB := func(match func(*event.Event) bool) *event.Event {
		t.Helper()
		return tlB.Next(t, func(ev *event.Event) bool { return ev.Sender == e.bot && match(ev) })
	}
	e.syncing(e.start("r1"))
	qid := e.Ask(fmt.Sprintf(`{"id":"qesc0001","to":"matrix:%s","timeoutSeconds":3600,"escalate":[{"afterSeconds":600,"to":"matrix:%s"}],"questions":%s}`,
		e.room, roomB, pollQuestions))
	pollA := e.next(ofType("org.matrix.msc3381.poll.start"))
	e.clock.Advance(599 * time.Second)
	e.NoResult(qid)
	e.clock.Advance(2 * time.Second)
	pollB := nextB(ofType("org.matrix.msc3381.poll.start"))
	why := "No answer after 10 min, so this is asked here too."
	if body, _ := pollB.Content.Raw["body"].(string); !strings.Contains(body, why) {
		t.Errorf("the poll in room B says %q, want it to say why it is there", body)
	}
	if got := answers(pollB); len(got) != 4 || !slices.Equal(got[:2], answers(pollA)[:2]) {
		t.Errorf("room B's poll answers %v, want room A's options (%v) with Skip and Seen", got, answers(pollA))
	}
	dendritetest.Send(t, e.bob, roomB, event.Type{Type: "org.matrix.msc3381.poll.response", Class: event.MessageEventType}, map[string]any{
		"m.relates_to":                     map[string]any{"rel_type": "m.reference", "event_id": pollB.ID},
		"org.matrix.msc3381.poll.response": map[string]any{"answers": []string{answers(pollB)[1]}},
	})
	res := e.Result(qid, 20*time.Second)
	if by := res.AnsweredBy; !answered(res, "target", "Production") || by == nil || by.ID != e.bob.UserID.String() || res.Place != "matrix:"+roomB.String() {
		t.Fatalf("result %+v (by %+v, place %q), want bob's Production in room B", res, by, res.Place)
	}
	for _, r := range []struct {
		name string
		poll *event.Event
		next func(func(*event.Event) bool) *event.Event
	}{{"A", pollA, e.next}, {"B", pollB, nextB}} {
		r.next(func(ev *event.Event) bool {
			rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
			return ev.Type.Type == "org.matrix.msc3381.poll.end" && rel["event_id"] == r.poll.ID.String()
		})
		if body := newBody(r.next(editOf(r.poll.ID))); !strings.Contains(body, "Production") {
			t.Errorf("room %s's poll edited to %q, want the status line", r.name, body)
		}
	}
	checkPosted(t, "A", e.history(e.room, e.marker()), []string{"org.matrix.msc3381.poll.start", "org.matrix.msc3381.poll.end", "edit"})
	markB := dendritetest.Send(t, e.bob, roomB, event.EventMessage, map[string]any{"msgtype": "m.text", "body": "marker"})
	checkPosted(t, "B", e.history(roomB, markB), []string{"org.matrix.msc3381.poll.start", "m.notice", "org.matrix.msc3381.poll.end", "edit"})
	var kinds []string
	for _, ev := range e.events(qid) {
		kinds = append(kinds, string(ev.Kind)+" "+ev.To)
	}
	want := []string{"requested ", "delivered ", "escalated matrix:" + roomB.String(), "delivered ", "answered "}
	if !slices.Equal(sorted(kinds), sorted(want)) {
		t.Errorf("events %q, want %q", kinds, want)
	}
}

// history is the bot's message events in room up to event last, oldest
// first, read back through alice's /messages (the whole room, not only
// what a Timeline has not yet returned).
func (e *env) history(room id.RoomID, last id.EventID) []*event.Event {
	e.t.Helper()
	var out []*event.Event
	testwait.For(e.t, 10*time.Second, "the room's history up to "+last.String(), func() bool {
		resp, err := e.alice.Messages(context.Background(), room, "", "", mautrix.DirectionBackward, nil, 100)
		if err != nil || len(resp.Chunk) == 0 || resp.Chunk[0].ID != last {
			return false
		}
		out = out[:0]
		for _, ev := range slices.Backward(resp.Chunk) {
			if ev.Sender == e.bot && ev.StateKey == nil {
				out = append(out, ev)
			}
		}
		return true
	})
	return out
}

// checkPosted checks what the bot posted in a room, in any order (a
// notice to a vote and the end are posted by different parts of the
// bridge): event types, "m.notice" for a notice and "edit" for an
// m.replace.
func checkPosted(t *testing.T, room string, evs []*event.Event, want []string) {
	t.Helper()
	var got []string
	for _, ev := range evs {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		switch {
		case rel["rel_type"] == "m.replace":
			got = append(got, "edit")
		case ev.Content.Raw["msgtype"] == "m.notice":
			got = append(got, "m.notice")
		default:
			got = append(got, ev.Type.Type)
		}
	}
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("the bot posted %q in room %s, want %q", got, room, want)
	}
}

// sorted is a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
