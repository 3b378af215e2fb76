package slack

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/askbridge/askbridge/config/settings"
)

// DefaultAPIURL is Slack's Web API base; slack-go appends the method name,
// so it ends with '/'.
const DefaultAPIURL = "https://slack.com/api/"

// MinSecretLen is the shortest signing secret accepted (issue 13; Slack's
// own are 32 hex characters).
const MinSecretLen = 16

// Config configures the Slack channel. BotToken is required, and one of
// AppToken (socket mode) or SigningSecret (HTTP mode). Fields with a YAML
// key are what config loads; formatted or logged, a Config shows no secret.
type Config struct {
	// BotToken (xoxb-…) calls the Web API.
	BotToken string `yaml:"botToken" json:"-"`
	// AppToken (xapp-…, scope connections:write) turns socket mode on:
	// inbound events come over a websocket every replica opens.
	AppToken string `yaml:"appToken" json:"-"`
	// APIURL is the Web API base (default DefaultAPIURL); it must end
	// with '/'.
	APIURL string `yaml:"apiURL"`
	// SigningSecret checks the requests of HTTP mode (used when AppToken
	// is empty); at least MinSecretLen characters.
	SigningSecret string `yaml:"signingSecret" json:"-"`
	// HTTPClient calls the Web API (default: a client with a 30 s timeout).
	HTTPClient *http.Client `json:"-"`
	// PingInterval is how long socket mode waits for Slack's websocket
	// ping before it reconnects (default 30 s, the library's).
	PingInterval time.Duration
	// RetryMin and RetryMax bound the backoff between reconnects
	// (defaults 1 s and 1 min).
	RetryMin, RetryMax time.Duration
	// HandleTimeout bounds the handling of one inbound event after it was
	// acknowledged (default 30 s).
	HandleTimeout time.Duration
	// Panicked counts a panic the channel recovered, by where (cmd/bridge
	// wires it to askbridge_panics_total; nil: not counted).
	Panicked func(op string) `json:"-"`
	// Now is the clock for the signature replay window; tests pass their
	// own (default time.Now).
	Now func() time.Time `json:"-"`
}

// Format and LogValue show the settings, secrets redacted.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, settings.String(c)) }
func (c Config) LogValue() slog.Value       { return settings.LogValue(c) }

// Validate reports every setting that cannot work. Unset durations and
// clients are not errors: New fills in their defaults.
func (c Config) Validate() error {
	p := settings.Problems{Section: Platform}
	c.Check(&p)
	return p.Err()
}

// Check adds every problem of c to p, naming each setting with p.Name
// (Validate names them in words: "bot token").
func (c Config) Check(p *settings.Problems) {
	switch {
	case c.BotToken == "":
		p.Addf("%s is required", p.Name("botToken"))
	case strings.HasPrefix(c.BotToken, "xapp-"):
		p.Addf("%s: is an app-level token (xapp-…); the bot token starts with xoxb-, the app token goes in %s", p.Name("botToken"), p.Name("appToken"))
	default:
		p.Plain("botToken", c.BotToken)
	}
	if c.AppToken != "" {
		// slack-go's socket mode refuses an app token without this prefix.
		if !strings.HasPrefix(c.AppToken, "xapp-") {
			p.Addf("%s: must be an app-level token starting with xapp- (with the connections:write scope)", p.Name("appToken"))
		} else {
			p.Plain("appToken", c.AppToken)
		}
	} else if c.SigningSecret == "" {
		p.Addf("%s or %s is required: the app token for socket mode, or the signing secret for HTTP mode", p.Name("appToken"), p.Name("signingSecret"))
	}
	p.Plain("signingSecret", c.SigningSecret)
	if c.SigningSecret != "" && !settings.HasSpaceOrControl(c.SigningSecret) && len(c.SigningSecret) < MinSecretLen {
		// Slack's are 32 hex characters: a short one is a typo or a
		// placeholder, and anyone who reaches the endpoints may guess.
		p.Addf("%s: must be at least %d characters (it has %d); copy it from the app's Basic Information page", p.Name("signingSecret"), MinSecretLen, len(c.SigningSecret))
	}
	p.APIURL("apiURL", c.APIURL)
	if c.APIURL != "" && !strings.HasSuffix(c.APIURL, "/") {
		p.Addf("%s: %q must end with '/' (slack-go appends the method name)", p.Name("apiURL"), c.APIURL)
	}
}

// withDefaults returns c with every unset field given its default.
func (c Config) withDefaults() Config {
	settings.Default(&c.APIURL, DefaultAPIURL)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	settings.Default(&c.PingInterval, 30*time.Second)
	settings.Default(&c.RetryMin, time.Second)
	settings.Default(&c.RetryMax, time.Minute)
	settings.Default(&c.HandleTimeout, 30*time.Second)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
