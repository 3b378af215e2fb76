package telegram

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/config/settings"
	"github.com/askbridge/askbridge/internal/lazyre"
)

const (
	// DefaultAPIURL is the Bot API server.
	DefaultAPIURL = "https://api.telegram.org"
	// DefaultPollTimeout is how long one getUpdates call may wait for an
	// update (Telegram allows long polls up to 50 s in practice; the library
	// sends timeout = PollTimeout - 1 s).
	DefaultPollTimeout = 30 * time.Second
	// DefaultLeaseTTL and DefaultRenewEvery size the poller lease so a
	// standby replica takes over within LeaseTTL + RenewEvery = 5 s of the
	// holder dying; a holder that misses three renewals in a row (Redis
	// slower than a second three times) hands it over.
	DefaultLeaseTTL   = 4 * time.Second
	DefaultRenewEvery = time.Second
	// DefaultChatPace is the average gap between two messages to one chat.
	// Telegram (Bots FAQ, "My bot is hitting limits"): avoid more than one
	// message per second in a chat (short bursts are allowed).
	DefaultChatPace = time.Second
	// DefaultGlobalPace is the average gap between two messages of the bot.
	// Telegram (Bots FAQ): no more than about 30 messages per second overall.
	DefaultGlobalPace = time.Second / 30
	// WebhookPath is where WebhookHandler expects Telegram's POSTs when
	// WebhookURL names no path of its own.
	WebhookPath = "/telegram/webhook"
	// MinSecretLen is the shortest webhook secret accepted: anyone who can
	// reach the webhook may guess at it (issue 13; Telegram itself allows
	// 1 character).
	MinSecretLen = 16
)

// Config configures the Telegram channel. Token is required; every other
// zero value means its default. Fields with a YAML key are what config
// loads; formatted or logged, a Config shows no secret.
type Config struct {
	// Token is the bot token from @BotFather. It is never logged.
	Token string `yaml:"token" json:"-"`
	// APIURL is the Bot API server root (default https://api.telegram.org;
	// tests point it at telegramtest). A trailing slash is dropped.
	APIURL string `yaml:"apiURL"`
	// WebhookURL switches inbound updates from long polling to a webhook:
	// every replica calls setWebhook with it on start and serves
	// WebhookHandler. It must be https. Empty means long polling.
	WebhookURL string `yaml:"webhookURL"`
	// WebhookSecret is the secret_token Telegram sends back in the
	// X-Telegram-Bot-Api-Secret-Token header of every webhook request
	// (Bot API setWebhook). Required with WebhookURL; at least
	// MinSecretLen characters.
	WebhookSecret string `yaml:"webhookSecret" json:"-"`
	// Replica names this replica in the poller lease and in logs.
	Replica string
	// Panicked counts a panic the channel recovered, by where (cmd/bridge
	// wires it to askbridge_panics_total; nil: not counted).
	Panicked func(op string) `json:"-"`
	// PollTimeout is the long-poll wait of one getUpdates (default 30 s,
	// at least 2 s: the library sends PollTimeout - 1 s in whole seconds and
	// a zero timeout would poll in a busy loop).
	PollTimeout time.Duration
	// LeaseTTL is how long the poller lease lives without renewal (default
	// 4 s) and RenewEvery how often the holder renews it and a standby
	// replica tries to take it (default 1 s).
	LeaseTTL   time.Duration
	RenewEvery time.Duration
	// ChatPace is the average gap between two messages (sends and edits)
	// to one chat, after a burst of 3; a group also gets no more than one
	// per 3 × ChatPace after a burst of 20 (Telegram's 20 a minute at the
	// default). GlobalPace is the average gap between any two messages of
	// this replica, after a burst of at most 30. Each is a token
	// bucket of its own: a message waiting for its chat never delays
	// another chat. With several replicas each paces itself: divide the
	// bot's budget among them.
	ChatPace   time.Duration
	GlobalPace time.Duration
	// HTTPClient makes the Bot API calls (default: outwaits a long poll).
	HTTPClient *http.Client `json:"-"`
}

// Format and LogValue show the settings, secrets redacted.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, settings.String(c)) }
func (c Config) LogValue() slog.Value       { return settings.LogValue(c) }

func (c Config) withDefaults() Config {
	settings.Default(&c.APIURL, DefaultAPIURL)
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	settings.Default(&c.Replica, "bridge")
	settings.Default(&c.PollTimeout, DefaultPollTimeout)
	settings.Default(&c.LeaseTTL, DefaultLeaseTTL)
	settings.Default(&c.RenewEvery, DefaultRenewEvery)
	settings.Default(&c.ChatPace, DefaultChatPace)
	settings.Default(&c.GlobalPace, DefaultGlobalPace)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.PollTimeout + 15*time.Second}
	}
	return c
}

var (
	// Telegram: a bot token is "<bot id>:<secret>" as @BotFather gives it.
	tokenPattern = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`)
	// Telegram setWebhook: secret_token is 1-256 of A-Z, a-z, 0-9, _ and -.
	secretPattern = lazyre.New(`^[A-Za-z0-9_-]{1,256}$`)
	// Telegram setWebhook: ports 443, 80, 88, 8443 (a local server: any).
	webhookPorts = []string{"443", "80", "88", "8443"}
)

// Validate reports every setting that cannot work. It makes no network call.
func (c Config) Validate() error {
	p := settings.Problems{Section: Platform}
	c.Check(&p)
	return p.Err()
}

// Check adds every problem of c to p, naming each setting with p.Name
// (Validate names them in words: "webhook secret").
func (c Config) Check(p *settings.Problems) {
	d := c.withDefaults()
	if c.Token == "" {
		p.Addf("%s is required", p.Name("token"))
	} else if !tokenPattern.MatchString(c.Token) {
		p.Addf("%s: is not a Telegram bot token (expected <bot id>:<secret>, as @BotFather gives it)", p.Name("token"))
	}
	p.APIURL("apiURL", c.APIURL)
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		switch name := p.Name("webhookURL"); {
		case err != nil:
			p.Addf("%s: not a URL (%s)", name, settings.URLErrorReason(err))
		case u.Scheme != "https" || u.Host == "":
			// Bot API setWebhook: "An HTTPS URL must be provided for webhook".
			p.Addf("%s: %q must be an https:// URL", name, c.WebhookURL)
		case u.Port() != "" && d.APIURL == DefaultAPIURL && !slices.Contains(webhookPorts, u.Port()):
			p.Addf("%s: port %s is not one Telegram calls (443, 80, 88 or 8443)", name, u.Port())
		}
		if c.WebhookSecret == "" {
			p.Addf("%s is required with %s", p.Name("webhookSecret"), p.Name("webhookURL"))
		}
	} else if c.WebhookSecret != "" {
		p.Addf("%s is set but %s is not: the secret is only used in webhook mode", p.Name("webhookSecret"), p.Name("webhookURL"))
	}
	if c.WebhookSecret != "" && !secretPattern().MatchString(c.WebhookSecret) {
		p.Addf("%s: must be 1 to 256 characters of A-Z, a-z, 0-9, '_' or '-' (Telegram's rule for secret_token)", p.Name("webhookSecret"))
	} else if c.WebhookSecret != "" && len(c.WebhookSecret) < MinSecretLen {
		p.Addf("%s: must be at least %d characters (it has %d); make one with `openssl rand -hex 32`", p.Name("webhookSecret"), MinSecretLen, len(c.WebhookSecret))
	}
	if c.PollTimeout != 0 && c.PollTimeout < 2*time.Second {
		p.Addf("poll timeout must be at least 2s")
	}
	if c.LeaseTTL < 0 || c.RenewEvery < 0 || c.ChatPace < 0 || c.GlobalPace < 0 {
		p.Addf("lease ttl, renew every and paces must not be negative")
	} else if d.RenewEvery >= d.LeaseTTL {
		p.Addf("renew every (%s) must be shorter than the lease ttl (%s)", d.RenewEvery, d.LeaseTTL)
	}
}

// webhookPath is the path WebhookHandler is mounted on: the path of
// WebhookURL, or WebhookPath when it has none.
func (c Config) webhookPath() string {
	if u, err := url.Parse(c.WebhookURL); err == nil && u.Path != "" && u.Path != "/" {
		return u.Path
	}
	return WebhookPath
}
