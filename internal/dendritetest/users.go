package dendritetest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/synapseadmin"
)

// callTimeout bounds one client-server API call of a helper.
const callTimeout = 30 * time.Second

// User is an account registered on a Server.
type User struct {
	ID          id.UserID
	AccessToken string
	DeviceID    id.DeviceID
	Password    string
}

// Register creates the account @localpart:ServerName, a normal user (not
// a server admin: Dendrite never rate-limits admins), with the shared
// secret registration API Dendrite implements at
// /_synapse/admin/v1/register (clientapi/routing/register_secret.go). It
// returns the user ID and the access token of the device the registration
// made. Localparts must be unique on the server: tests sharing a server
// pick names of their own.
func (s *Server) Register(t testing.TB, localpart string) (id.UserID, string) {
	t.Helper()
	anon := s.newClient(t, "", "")
	admin := synapseadmin.Client{Client: anon}
	password := "password-" + localpart
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := admin.SharedSecretRegister(ctx, s.secret, synapseadmin.ReqSharedSecretRegister{
		Username: localpart,
		Password: password,
	})
	userID := id.NewUserID(localpart, s.ServerName)
	s.mu.Lock()
	_, known := s.users[userID.String()]
	s.mu.Unlock()
	switch {
	case err == nil:
		userID = resp.UserID
	case errors.Is(err, mautrix.MUserInUse) && !known:
		// A registration Dendrite made but answered 500 (retry500 sent it
		// again): the account is ours, with our password.
		resp, err = s.login(ctx, userID, password)
		if err != nil {
			t.Fatalf("dendritetest: register %q: the account was made by a request answered 500, and logging in failed: %v", localpart, err)
		}
	default:
		t.Fatalf("dendritetest: register %q: %v", localpart, err)
	}
	s.mu.Lock()
	s.users[userID.String()] = User{ID: userID, AccessToken: resp.AccessToken, DeviceID: resp.DeviceID, Password: password}
	s.mu.Unlock()
	return userID, resp.AccessToken
}

// login logs user in with password on a new device, for Register.
func (s *Server) login(ctx context.Context, user id.UserID, password string) (*mautrix.RespRegister, error) {
	cli, err := mautrix.NewClient(s.URL, "", "")
	if err != nil {
		return nil, err
	}
	cli.Client.Transport = retry500{s.transport}
	resp, err := cli.Login(ctx, &mautrix.ReqLogin{
		Type:       mautrix.AuthTypePassword,
		Identifier: mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: user.String()},
		Password:   password,
	})
	if err != nil {
		return nil, err
	}
	return &mautrix.RespRegister{UserID: resp.UserID, AccessToken: resp.AccessToken, DeviceID: resp.DeviceID}, nil
}

// User returns what Register recorded for user.
func (s *Server) User(t testing.TB, user id.UserID) User {
	t.Helper()
	s.mu.Lock()
	u, ok := s.users[user.String()]
	s.mu.Unlock()
	if !ok {
		t.Fatalf("dendritetest: %s was not registered with Register", user)
	}
	return u
}

// Client returns a mautrix client for user, logged in with the access
// token (and device) Register made. Each call returns a new client on the
// same device.
func (s *Server) Client(t testing.TB, user id.UserID) *mautrix.Client {
	t.Helper()
	u := s.User(t, user)
	cli := s.newClient(t, u.ID, u.AccessToken)
	cli.DeviceID = u.DeviceID
	return cli
}

// Login logs user in again with the password, which makes a new device
// with a new access token, and returns a client using it.
func (s *Server) Login(t testing.TB, user id.UserID) *mautrix.Client {
	t.Helper()
	u := s.User(t, user)
	cli := s.newClient(t, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, err := cli.Login(ctx, &mautrix.ReqLogin{
		Type:             mautrix.AuthTypePassword,
		Identifier:       mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: u.ID.String()},
		Password:         u.Password,
		StoreCredentials: true,
	})
	if err != nil {
		t.Fatalf("dendritetest: log %s in: %v", user, err)
	}
	return cli
}

// newClient returns a mautrix client of the server's, whose connections
// Close closes.
func (s *Server) newClient(t testing.TB, user id.UserID, token string) *mautrix.Client {
	t.Helper()
	cli, err := mautrix.NewClient(s.URL, user, token)
	if err != nil {
		t.Fatalf("dendritetest: client for %s: %v", s.URL, err)
	}
	cli.Client.Transport = retry500{s.transport}
	return cli
}

// CreateRoom has owner create a private room, inviting the users given,
// and returns its ID.
func (s *Server) CreateRoom(t testing.TB, owner id.UserID, invite ...id.UserID) id.RoomID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := s.Client(t, owner).CreateRoom(ctx, &mautrix.ReqCreateRoom{
		Preset: "private_chat",
		Invite: invite,
	})
	if err != nil {
		t.Fatalf("dendritetest: %s creates a room: %v", owner, err)
	}
	return resp.RoomID
}

// Join has user join room (which must have invited them, or be public).
func (s *Server) Join(t testing.TB, user id.UserID, room id.RoomID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := s.Client(t, user).JoinRoomByID(ctx, room); err != nil {
		t.Fatalf("dendritetest: %s joins %s: %v", user, room, err)
	}
}

// Send has cli send a message event of type typ with content to room, with
// a transaction ID of the client's, and returns the event ID.
func Send(t testing.TB, cli *mautrix.Client, room id.RoomID, typ event.Type, content any) id.EventID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := cli.SendMessageEvent(ctx, room, typ, content)
	if err != nil {
		t.Fatalf("dendritetest: %s sends %s to %s: %v", cli.UserID, typ.Type, room, err)
	}
	return resp.EventID
}

// retry500 sends a request again, up to six times over about six
// seconds, when Dendrite
// answered 500: its SQLite store, busy under parallel tests on a loaded
// machine, now and then fails a request whole ("database is locked").
// Only the clients the helpers make for the tests' people use it: the
// channel under test meets Dendrite's answers as they are.
type retry500 struct{ next http.RoundTripper }

func (r retry500) RoundTrip(req *http.Request) (*http.Response, error) {
	for try := 1; ; try++ {
		resp, err := r.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusInternalServerError || try == 6 || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		resp.Body.Close()
		time.Sleep(min(time.Duration(1<<try)*125*time.Millisecond, 2*time.Second))
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}
