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

// NewTimeline starts reading room's timeline through cli's /sync, from
// now on: events sent before it are not returned.
func NewTimeline(t testing.TB, cli *mautrix.Client, room id.RoomID) *Timeline {
	t.Helper()
	tl := &Timeline{cli: cli, room: room}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := cli.SyncRequest(ctx, 0, "", "", false, event.PresenceOffline)
	if err != nil {
		t.Fatalf("dendritetest: first sync of %s: %v", cli.UserID, err)
	}
	tl.since = resp.NextBatch
	return tl
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

// Rest returns the events that arrive within wait and match accepts, for
// checking that something was not posted (twice).
func (tl *Timeline) Rest(t testing.TB, wait time.Duration, match func(*event.Event) bool) []*event.Event {
	t.Helper()
	var got []*event.Event
	deadline := time.Now().Add(wait)
	for {
		for _, evt := range tl.pending {
			if match(evt) {
				got = append(got, evt)
			}
		}
		tl.pending = nil
		if time.Now().After(deadline) {
			return got
		}
		tl.pending = tl.syncFor(t, time.Until(deadline))
	}
}

// sync long-polls up to 5 seconds and returns the room's new events.
func (tl *Timeline) sync(t testing.TB) []*event.Event { return tl.syncFor(t, 5*time.Second) }

// syncFor long-polls up to wait and returns the room's new events.
func (tl *Timeline) syncFor(t testing.TB, wait time.Duration) []*event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait+callTimeout)
	defer cancel()
	resp, err := tl.cli.SyncRequest(ctx, int(max(wait, time.Millisecond).Milliseconds()), tl.since, "", false, event.PresenceOffline)
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
