package dendritetest

import (
	"context"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// room is a room on the shared server with a bot and two people in it.
type room struct {
	id               id.RoomID
	bot, alice, bob  id.UserID
	botCli, aliceCli *mautrix.Client
	bobCli           *mautrix.Client
}

// newRoom registers a bot and two people under names starting with
// prefix, has the bot create a room inviting both, and has them join.
func newRoom(t *testing.T, prefix string) room {
	t.Helper()
	SkipShort(t)
	var r room
	r.bot, _ = hs.Register(t, prefix+"-bot")
	r.alice, _ = hs.Register(t, prefix+"-alice")
	r.bob, _ = hs.Register(t, prefix+"-bob")
	r.id = hs.CreateRoom(t, r.bot, r.alice, r.bob)
	hs.Join(t, r.alice, r.id)
	hs.Join(t, r.bob, r.id)
	r.botCli, r.aliceCli, r.bobCli = hs.Client(t, r.bot), hs.Client(t, r.alice), hs.Client(t, r.bob)
	return r
}

// ofID matches the event with the given ID.
func ofID(eventID id.EventID) func(*event.Event) bool {
	return func(evt *event.Event) bool { return evt.ID == eventID }
}

// ofType matches events of type typ.
func ofType(typ string) func(*event.Event) bool {
	return func(evt *event.Event) bool { return evt.Type.Type == typ }
}

func text(body string) map[string]any { return map[string]any{"msgtype": "m.text", "body": body} }

func TestMessagesReachTheOthersThroughSync(t *testing.T) {
	t.Parallel()
	r := newRoom(t, "msg")
	aliceTL := NewTimeline(t, r.aliceCli, r.id)
	botTL := NewTimeline(t, r.botCli, r.id)

	sent := Send(t, r.botCli, r.id, event.EventMessage, text("Which plan?"))
	got := aliceTL.Next(t, ofType("m.room.message"))
	if got.ID != sent || got.Sender != r.bot || got.Content.Raw["body"] != "Which plan?" {
		t.Errorf("alice saw %s from %s with %v, want %s from %s saying \"Which plan?\"", got.ID, got.Sender, got.Content.Raw, sent, r.bot)
	}

	reply := Send(t, r.bobCli, r.id, event.EventMessage, text("2"))
	// (The bot's sync may first show bob's join: the sync API learns of
	// events asynchronously.)
	got = botTL.Next(t, func(evt *event.Event) bool { return evt.Sender == r.bob && evt.Type == event.EventMessage })
	if got.ID != reply || got.Content.Raw["body"] != "2" {
		t.Errorf("the bot saw %s with %v, want %s saying \"2\"", got.ID, got.Content.Raw, reply)
	}
}

// The room's encryption state, once set, is in the room state every
// member reads.
func TestEncryptionStateIsVisible(t *testing.T) {
	t.Parallel()
	r := newRoom(t, "enc")
	ctx := context.Background()
	content := map[string]any{"algorithm": "m.megolm.v1.aes-sha2"}
	if _, err := r.botCli.SendStateEvent(ctx, r.id, event.StateEncryption, "", content); err != nil {
		t.Fatalf("turn encryption on: %v", err)
	}
	var enc event.EncryptionEventContent
	if err := r.aliceCli.StateEvent(ctx, r.id, event.StateEncryption, "", &enc); err != nil {
		t.Fatalf("alice reads m.room.encryption: %v", err)
	}
	if enc.Algorithm != id.AlgorithmMegolmV1 {
		t.Errorf("alice reads algorithm %q, want %q", enc.Algorithm, id.AlgorithmMegolmV1)
	}
}
