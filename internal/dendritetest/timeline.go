package dendritetest

import (
	"context"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// waitTimeout bounds how long Timeline.Next waits for a matching event.
const waitTimeout = 30 * time.Second

// Timeline reads one room's new timeline events as a user sees them
// through /sync: a first sync marks where it starts, and Next long-polls
// from there. Not safe for concurrent use.
type Timeline struct {
	cli     *mautrix.Client
	room    id.RoomID
	since   string
	pending []*event.Event
}

// timelineFilter is the inline /sync filter a Timeline uses: up to 100
// events a room per sync (Dendrite's default is 20), so a test's events
// are never cut off.
const timelineFilter = `{"room":{"timeline":{"limit":100}}}`

// NewTimeline starts reading room's timeline through cli's /sync, from
// now on: events sent before it are not returned. It syncs until the
// user's own join to room has come through their timeline. Dendrite's
// sync API learns of events asynchronously (from the roomserver, through
// NATS), and a room whose join arrives after the sync position a Timeline
// starts from comes back as a newly joined room: its past, with
// limited=true, instead of only the new events. The room must have had
// fewer than 100 events when the user joined.
func NewTimeline(t testing.TB, cli *mautrix.Client, room id.RoomID) *Timeline {
	t.Helper()
	tl := &Timeline{cli: cli, room: room}
	deadline := time.Now().Add(waitTimeout)
	for timeout := 0; ; timeout = 1000 {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := cli.SyncRequest(ctx, timeout, tl.since, timelineFilter, false, event.PresenceOffline)
		cancel()
		if err != nil {
			t.Fatalf("dendritetest: sync of %s: %v", cli.UserID, err)
		}
		tl.since = resp.NextBatch
		if hasOwnJoin(resp, room, cli.UserID) {
			return tl
		}
		if time.Now().After(deadline) {
			t.Fatalf("dendritetest: %s's join to %s has not come through their sync within %s", cli.UserID, room, waitTimeout)
		}
	}
}

// hasOwnJoin reports whether the sync response's timeline of room holds
// user's join.
func hasOwnJoin(resp *mautrix.RespSync, room id.RoomID, user id.UserID) bool {
	joined, ok := resp.Rooms.Join[room]
	if !ok {
		return false
	}
	for _, evt := range joined.Timeline.Events {
		if evt.Type == event.StateMember && evt.GetStateKey() == user.String() && evt.Content.Raw["membership"] == "join" {
			return true
		}
	}
	return false
}

// Next returns the next timeline event that match accepts, skipping the
// others, and fails the test when none comes within 30 seconds.
func (tl *Timeline) Next(t testing.TB, match func(*event.Event) bool) *event.Event {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		for len(tl.pending) > 0 {
			evt := tl.pending[0]
			tl.pending = tl.pending[1:]
			if match(evt) {
				return evt
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dendritetest: %s saw no matching event in %s within %s", tl.cli.UserID, tl.room, waitTimeout)
		}
		tl.pending = tl.sync(t)
	}
}

// Upto returns every timeline event up to and including the one with ID
// last, for checking what else was posted before it (that something was
// posted once, not twice): send a marker after the events under test and
// read up to it.
func (tl *Timeline) Upto(t testing.TB, last id.EventID) []*event.Event {
	t.Helper()
	var got []*event.Event
	tl.Next(t, func(evt *event.Event) bool {
		got = append(got, evt)
		return evt.ID == last
	})
	return got
}

// sync long-polls up to 5 seconds and returns the room's new events.
func (tl *Timeline) sync(t testing.TB) []*event.Event {
	t.Helper()
	const wait = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), wait+callTimeout)
	defer cancel()
	resp, err := tl.cli.SyncRequest(ctx, int(wait.Milliseconds()), tl.since, timelineFilter, false, event.PresenceOffline)
	if err != nil {
		t.Fatalf("dendritetest: sync of %s: %v", tl.cli.UserID, err)
	}
	tl.since = resp.NextBatch
	room, ok := resp.Rooms.Join[tl.room]
	if !ok {
		return nil
	}
	if room.Timeline.Limited {
		t.Fatalf("dendritetest: the sync of %s in %s was limited: events were left out", tl.cli.UserID, tl.room)
	}
	for _, evt := range room.Timeline.Events {
		evt.RoomID = tl.room
	}
	return room.Timeline.Events
}
