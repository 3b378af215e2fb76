package dendritetest

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"
)

func TestSendRoom(t *testing.T) {
	tests := []struct {
		name, method, path string
		room               id.RoomID
		ok                 bool
	}{
		{"put with a transaction", "PUT", "/_matrix/client/v3/rooms/!a:localhost/send/m.room.message/t1", "!a:localhost", true},
		{"post without one", "POST", "/_matrix/client/r0/rooms/!a:localhost/send/m.poll.start", "!a:localhost", true},
		{"escaped room ID", "PUT", "/_matrix/client/v3/rooms/%21a:localhost/send/m.room.message/t1", "!a:localhost", true},
		{"a state event", "PUT", "/_matrix/client/v3/rooms/!a:localhost/state/m.room.encryption/", "", false},
		{"sync", "GET", "/_matrix/client/v3/sync", "", false},
		{"a read of the send path", "GET", "/_matrix/client/v3/rooms/!a:localhost/send/m.room.message/t1", "!a:localhost", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room, ok := sendRoom(httptest.NewRequest(tt.method, tt.path, nil))
			if ok != tt.ok || (ok && room != tt.room) {
				t.Errorf("sendRoom(%s %s) = %q, %v; want %q, %v", tt.method, tt.path, room, ok, tt.room, tt.ok)
			}
		})
	}
}

// A second holder of the build lock waits until the first releases it
// (flock locks conflict between open files, even in one process).
func TestLockFileWaitsForTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan func())
	go func() {
		u, err := lockFile(path)
		if err != nil {
			t.Error(err)
			u = func() {}
		}
		second <- u
	}()
	// Nothing can signal that the second caller is blocked in flock rather
	// than not yet there: give it a moment, then check it did not get in.
	select {
	case u := <-second:
		u()
		t.Fatal("the second lockFile returned while the first held the lock")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-second:
		u()
	case <-time.After(10 * time.Second):
		t.Fatal("the second lockFile did not return after the first released the lock")
	}
}
