package discord

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/askbridge/askbridge/config/settings"
)

// DefaultAPIURL is Discord's base URL (discordgo's EndpointDiscord).
const DefaultAPIURL = discordBase

// Config configures the Discord channel. Token is required; every other
// field has a default. Fields with a YAML key are what config loads;
// formatted or logged, a Config shows no secret.
type Config struct {
	// Token is the bot token, with or without the "Bot " prefix. Never
	// logged.
	Token string `yaml:"token" json:"-"`
	// APIURL is Discord's base URL (default DefaultAPIURL); REST calls go
	// to <APIURL>api/v9/…, and the gateway URL is what <APIURL>api/v9/gateway
	// returns.
	APIURL string `yaml:"apiURL"`
	// AppID is the application id; by default the bot user's id (the two
	// are the same for every bot made in the developer portal). It names
	// the gateway lease and the interaction webhooks.
	AppID string
	// Replica names this replica as holder of the gateway lease; it must
	// differ between replicas (default: host name and process id).
	Replica string
	// Panicked counts a panic the channel recovered, by where (cmd/bridge
	// wires it to askbridge_panics_total; nil: not counted).
	Panicked func(op string) `json:"-"`
	// LeaseTTL is how long the gateway lease lives without renewal
	// (default 10s; the issue requires at most 10s). It is renewed every
	// third of it; a standby replica tries to take it every StandbyPoll
	// (default 2s), so a dead holder is replaced within LeaseTTL +
	// StandbyPoll (12s by default, the issue allows 15s).
	LeaseTTL    time.Duration
	StandbyPoll time.Duration
	// AckAfter is how long a button press may wait for the engine before
	// it is acknowledged with a deferred update and answered by follow-up
	// (default 1.5s; Discord requires the first response within 3s).
	AckAfter time.Duration
	// RetryMin and RetryMax bound the reconnect backoff (defaults 1s, 2m).
	RetryMin, RetryMax time.Duration
	// BadCredentialsRetry is how long to wait after Discord refused the
	// token before trying again (default 5m).
	BadCredentialsRetry time.Duration
	// OpenTimeout bounds connecting to the gateway up to READY (default 30s).
	OpenTimeout time.Duration
	// HTTPClient carries REST calls (default: a client with a 20s timeout);
	// its Transport is wrapped, not replaced.
	HTTPClient *http.Client `json:"-"`
}

// Format and LogValue show the settings, secrets redacted.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, settings.String(c)) }
func (c Config) LogValue() slog.Value       { return settings.LogValue(c) }

func (c Config) withDefaults() Config {
	settings.Default(&c.APIURL, DefaultAPIURL)
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	if c.Replica == "" {
		host, _ := os.Hostname()
		c.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	settings.Default(&c.LeaseTTL, 10*time.Second)
	settings.Default(&c.StandbyPoll, 2*time.Second)
	settings.Default(&c.AckAfter, 1500*time.Millisecond)
	settings.Default(&c.RetryMin, time.Second)
	settings.Default(&c.RetryMax, 2*time.Minute)
	settings.Default(&c.BadCredentialsRetry, 5*time.Minute)
	settings.Default(&c.OpenTimeout, 30*time.Second)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 20 * time.Second}
	}
	return c
}

// Validate reports every setting that cannot work. It makes no network call.
func (c Config) Validate() error {
	p := settings.Problems{Section: Platform}
	c.Check(&p)
	return p.Err()
}

// Check adds every problem of c to p, naming each setting with p.Name
// (Validate names them in words: "api url").
func (c Config) Check(p *settings.Problems) {
	if token := c.bare(); token == "" {
		p.Addf("%s is required", p.Name("token"))
	} else {
		p.Plain("token", token)
	}
	p.APIURL("apiURL", c.APIURL)
	if c.LeaseTTL > 10*time.Second {
		p.Addf("LeaseTTL %s is over 10s: a dead gateway holder would be replaced too late", c.LeaseTTL)
	}
	if c.AckAfter >= 3*time.Second {
		p.Addf("AckAfter %s must be under Discord's 3s interaction deadline", c.AckAfter)
	}
}

// bare is the token without the "Bot " prefix and surrounding spaces.
func (c Config) bare() string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(c.Token, " \t\r\n"), "Bot "))
}

// token is the Authorization value discordgo sends.
func (c Config) token() string { return "Bot " + c.bare() }
