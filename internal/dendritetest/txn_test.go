package dendritetest

import (
	"context"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// sendTxn sends content as typ to room with the transaction ID txn.
func sendTxn(t *testing.T, cli *mautrix.Client, room id.RoomID, typ event.Type, txn string, content any) id.EventID {
	t.Helper()
	resp, err := cli.SendMessageEvent(context.Background(), room, typ, content, mautrix.ReqSendEvent{TransactionID: txn})
	if err != nil {
		t.Fatalf("%s sends %s with transaction %q: %v", cli.UserID, typ.Type, txn, err)
	}
	return resp.EventID
}

// bodies returns the bodies of the m.room.message events among evts.
func bodies(evts []*event.Event) []string {
	var out []string
	for _, evt := range evts {
		if evt.Type == event.EventMessage {
			out = append(out, evt.Content.Raw["body"].(string))
		}
	}
	return out
}

// Dendrite answers a repeated PUT .../send/{type}/{txnId} with the first
// one's event ID and posts once, when the access token, the room and the
// event type are the same (clientapi/routing/sendevent.go,
// internal/transactions/transactions.go). The same transaction ID under a
// new access token (a new login) posts again. The sender's own sync echoes
// the transaction ID in unsigned.transaction_id only on the session that
// sent it (syncapi/storage/shared/storage_consumer.go).
func TestTransactionIDsAreScopedToTheAccessToken(t *testing.T) {
	t.Parallel()
	r := newRoom(t, "txn")
	aliceTL := NewTimeline(t, r.aliceCli, r.id)
	botTL := NewTimeline(t, r.botCli, r.id)

	first := sendTxn(t, r.botCli, r.id, event.EventMessage, "q1", text("once"))
	sameToken := hs.Client(t, r.bot) // another client, the same access token
	if again := sendTxn(t, sameToken, r.id, event.EventMessage, "q1", text("once")); again != first {
		t.Errorf("the same transaction, the same token: event %s, want the first one's %s", again, first)
	}
	if other := sendTxn(t, r.botCli, r.id, event.EventReaction, "q1", map[string]any{}); other == first {
		t.Errorf("the same transaction ID for another event type returned the first event %s", first)
	}
	newLogin := hs.Login(t, r.bot)
	fresh := sendTxn(t, newLogin, r.id, event.EventMessage, "q1", text("once"))
	if fresh == first {
		t.Errorf("the same transaction ID under a new access token returned the first event %s, want a new one", first)
	}
	marker := Send(t, r.botCli, r.id, event.EventMessage, text("marker"))

	got := bodies(aliceTL.Upto(t, marker))
	want := []string{"once", "once", "marker"} // the first send, the new login's, the marker
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("alice saw the messages %q, want %q", got, want)
	}

	echoes := map[string]string{} // event ID of each of the bot's messages -> its transaction_id
	for _, evt := range botTL.Upto(t, marker) {
		if evt.Type == event.EventMessage {
			echoes[evt.ID.String()] = evt.Unsigned.TransactionID
		}
	}
	if echoes[first.String()] != "q1" {
		t.Errorf("the bot's own sync shows its first send with transaction_id %q, want \"q1\"", echoes[first.String()])
	}
	if len(echoes) != 3 {
		t.Fatalf("the bot's sync shows %d messages, want 3", len(echoes))
	}
	for eventID, txn := range echoes {
		if eventID != first.String() && eventID != marker.String() && txn != "" {
			t.Errorf("the new login's send %s shows transaction_id %q on the first session, want none", eventID, txn)
		}
	}
}
