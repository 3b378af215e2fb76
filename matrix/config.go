package matrix

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/askbridge/askbridge/config/settings"
	"github.com/askbridge/askbridge/internal/lazyre"
)

// Platform names Matrix in targets ("matrix:!room:server") and answerers
// ("matrix:@user:server").
const Platform = "matrix"

const (
	// DefaultLeaseTTL and DefaultRenewEvery size the syncer lease as
	// Telegram's poller lease: a standby replica takes over within
	// LeaseTTL + RenewEvery = 5 s of the holder dying.
	DefaultLeaseTTL   = 4 * time.Second
	DefaultRenewEvery = time.Second
	// DefaultSyncTimeout is how long one /sync long poll may wait.
	DefaultSyncTimeout = 30 * time.Second
)

// Config configures the Matrix channel (ask-user.md §11). Homeserver, User
// and Token are required; every other zero value means its default. Fields
// with a YAML key are what config loads; formatted or logged, a Config
// shows no secret.
type Config struct {
	// Homeserver is the client-server API's base URL
	// (https://matrix.example.org).
	Homeserver string `yaml:"homeserver"`
	// User is the bot's full user id (@askbridge:example.org).
	User string `yaml:"user"`
	// Token is the bot's access token. It is never logged.
	Token string `yaml:"token" json:"-"`
	// AutoJoin says which invitations the bot accepts: "" or "none" (the
	// default: the operator joins it), or a comma-separated list of
	// server names whose rooms it joins when invited.
	AutoJoin string `yaml:"autoJoin"`
	// Replica names this replica in the syncer lease and in logs.
	Replica string
	// Panicked counts a panic the channel recovered, by where (nil: not
	// counted).
	Panicked func(op string) `json:"-"`
	// LeaseTTL is how long the syncer lease lives without renewal
	// (default 4 s) and RenewEvery how often the holder renews it and a
	// standby replica tries to take it (default 1 s).
	LeaseTTL   time.Duration
	RenewEvery time.Duration
	// SyncTimeout is the long-poll wait of one /sync (default 30 s).
	SyncTimeout time.Duration
	// HTTPClient makes the API calls (default: outwaits a long poll).
	HTTPClient *http.Client `json:"-"`
}

// Format and LogValue show the settings, secrets redacted.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, settings.String(c)) }
func (c Config) LogValue() slog.Value       { return settings.LogValue(c) }

var (
	// A user id: @localpart:server (spec: "Identifier Grammar").
	userPattern = lazyre.New(`^@[a-z0-9._=/+-]+:[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)
	// A server name as an auto-join entry: a host, optionally with a port.
	serverPattern = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)
)

// roomPattern is a room id: !opaque:server (spec: "Identifier Grammar";
// an alias, #name:server, must be resolved to its id first).
var roomPattern = lazyre.New(`^![A-Za-z0-9._~=+/-]{1,255}:[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)

// ValidRoomID reports whether s is a room id, "!abc:example.org".
func ValidRoomID(s string) bool { return len(s) <= 255 && roomPattern().MatchString(s) }

// ValidUserID reports whether s is a user id, "@alice:example.org".
func ValidUserID(s string) bool { return len(s) <= 255 && userPattern().MatchString(s) }

// AutoJoinServers is AutoJoin as a list; nil joins none.
func (c Config) AutoJoinServers() []string {
	v := strings.TrimSpace(c.AutoJoin)
	if v == "" || strings.EqualFold(v, "none") {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Check adds every problem of c to p, naming each setting with p.Name.
func (c Config) Check(p *settings.Problems) {
	if c.Homeserver == "" {
		p.Addf("%s is required: the homeserver's client API URL, such as https://matrix.example.org", p.Name("homeserver"))
	} else {
		p.APIURL("homeserver", c.Homeserver)
	}
	if c.User == "" {
		p.Addf("%s is required: the bot's user id, such as @askbridge:example.org", p.Name("user"))
	} else if !userPattern().MatchString(c.User) {
		p.Addf("%s: %q is not a Matrix user id such as @askbridge:example.org", p.Name("user"), c.User)
	}
	if c.Token == "" {
		p.Addf("%s is required: the bot's access token", p.Name("token"))
	} else if strings.ContainsAny(c.Token, " \t\r\n") {
		p.Addf("%s: an access token has no spaces", p.Name("token"))
	}
	for _, s := range c.AutoJoinServers() {
		if !serverPattern.MatchString(s) {
			p.Addf("%s: %q is not a server name such as example.org (or none)", p.Name("autoJoin"), s)
		}
	}
	if c.LeaseTTL < 0 || c.RenewEvery < 0 || c.SyncTimeout < 0 {
		p.Addf("lease ttl, renew every and sync timeout must not be negative")
	}
}

// Validate returns every problem of c as one error naming each setting in
// words ("matrix: homeserver is required…"), or nil.
func (c Config) Validate() error {
	p := settings.Problems{Section: Platform}
	c.Check(&p)
	return p.Err()
}

// withDefaults fills every zero setting with its default.
func (c Config) withDefaults() Config {
	c.Homeserver = strings.TrimRight(c.Homeserver, "/")
	settings.Default(&c.Replica, "bridge")
	settings.Default(&c.LeaseTTL, DefaultLeaseTTL)
	settings.Default(&c.RenewEvery, DefaultRenewEvery)
	settings.Default(&c.SyncTimeout, DefaultSyncTimeout)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.SyncTimeout + 15*time.Second}
	}
	return c
}
