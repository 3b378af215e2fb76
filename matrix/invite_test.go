package matrix_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge/internal/testwait"
)

// TestAutoJoin: invited to a room of a server in autoJoin, the bot joins;
// with autoJoin none, it stays out.
func TestAutoJoin(t *testing.T) {
	for _, tc := range []struct {
		name, autoJoin string
		joins          bool
	}{
		{"server listed", "example.org, " + "localhost", true},
		{"none", "none", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "join-"+tc.name[:4])
			e.autoJoin = tc.autoJoin
			e.syncing(e.start("r1"))
			ctx := context.Background()
			resp, err := e.alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{e.bot}})
			if err != nil {
				t.Fatal(err)
			}
			bot := e.srv.Client(t, e.bot)
			joined := func() bool {
				rooms, err := bot.JoinedRooms(ctx)
				return err == nil && slices.Contains(rooms.JoinedRooms, resp.RoomID)
			}
			if tc.joins {
				testwait.For(t, 15*time.Second, "the bot joining", joined)
				return
			}
			time.Sleep(3 * time.Second) // a sync or two
			if joined() {
				t.Fatal("the bot joined a room of a server not in autoJoin")
			}
		})
	}
}
