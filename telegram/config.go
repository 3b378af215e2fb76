package telegram

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	// DefaultAPIURL is the Bot API server.
	DefaultAPIURL = "https://api.telegram.org"
	// DefaultPollTimeout is how long one getUpdates call may wait for an
	// update (Telegram allows long polls up to 50 s in practice; the library
	// sends timeout = PollTimeout - 1 s).
	DefaultPollTimeout = 30 * time.Second
	// DefaultLeaseTTL and DefaultRenewEvery size the poller lease so a
	// standby replica takes over within LeaseTTL + RenewEvery = 13 s of the
	// holder dying (issue 5: takeover within 15 s).
	DefaultLeaseTTL   = 10 * time.Second
	DefaultRenewEvery = 3 * time.Second
	// DefaultChatPace is the gap between two messages to one chat. Telegram
	// (Bots FAQ, "My bot is hitting limits"): avoid more than one message
	// per second in a chat.
	DefaultChatPace = time.Second
	// DefaultGlobalPace is the gap between two messages of the bot. Telegram
	// (Bots FAQ): no more than about 30 messages per second overall.
	DefaultGlobalPace = time.Second / 30
	// WebhookPath is where WebhookHandler expects Telegram's POSTs when
	// WebhookURL names no path of its own.
	WebhookPath = "/telegram/webhook"
)

// Config configures the Telegram channel. Token is required; every other
// zero value means its default.
type Config struct {
	// Token is the bot token from @BotFather. It is never logged.
	Token string
	// APIURL is the Bot API server root, without a trailing slash (default
	// https://api.telegram.org; tests point it at telegramtest).
	APIURL string
	// WebhookURL switches inbound updates from long polling to a webhook:
	// every replica calls setWebhook with it on start and serves
	// WebhookHandler. It must be https. Empty means long polling.
	WebhookURL string
	// WebhookSecret is the secret_token Telegram sends back in the
	// X-Telegram-Bot-Api-Secret-Token header of every webhook request:
	// 1-256 characters A-Z, a-z, 0-9, _ and - (Bot API setWebhook).
	// Required with WebhookURL.
	WebhookSecret string
	// Replica names this replica in the poller lease and in logs.
	Replica string
	// PollTimeout is the long-poll wait of one getUpdates (default 30 s,
	// at least 2 s: the library sends PollTimeout - 1 s in whole seconds and
	// a zero timeout would poll in a busy loop).
	PollTimeout time.Duration
	// LeaseTTL is how long the poller lease lives without renewal (default
	// 10 s) and RenewEvery how often the holder renews it and a standby
	// replica tries to take it (default 3 s).
	LeaseTTL   time.Duration
	RenewEvery time.Duration
	// ChatPace is the least gap between two messages (sends and edits) to
	// one chat, GlobalPace between any two messages of this replica. With
	// several replicas each paces itself: divide the bot's budget among them.
	ChatPace   time.Duration
	GlobalPace time.Duration
	// HTTPClient makes the Bot API calls (default: a client whose timeout
	// covers a long poll).
	HTTPClient *http.Client
}

func (c Config) withDefaults() Config {
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	c.APIURL = strings.TrimRight(c.APIURL, "/")
	if c.Replica == "" {
		c.Replica = "bridge"
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = DefaultRenewEvery
	}
	if c.ChatPace == 0 {
		c.ChatPace = DefaultChatPace
	}
	if c.GlobalPace == 0 {
		c.GlobalPace = DefaultGlobalPace
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.PollTimeout + 15*time.Second}
	}
	return c
}

// Validate reports the first setting that cannot work, naming it. It makes
// no network call.
func (c Config) Validate() error {
	if strings.TrimSpace(c.Token) == "" {
		return errors.New("telegram: token is required")
	}
	if id, _, ok := strings.Cut(c.Token, ":"); !ok || id == "" || strings.Trim(id, "0123456789") != "" {
		return errors.New("telegram: token does not look like <bot id>:<secret> from @BotFather")
	}
	if c.APIURL != "" {
		if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("telegram: api url %q is not an http(s) URL", c.APIURL)
		}
	}
	if c.WebhookURL != "" {
		if u, err := url.Parse(c.WebhookURL); err != nil || u.Scheme != "https" || u.Host == "" {
			// Bot API setWebhook: "An HTTPS URL must be provided for webhook".
			return fmt.Errorf("telegram: webhook url %q must be an https URL", c.WebhookURL)
		}
		if !validSecret(c.WebhookSecret) {
			return errors.New("telegram: webhook secret is required with a webhook url: 1-256 characters of A-Z, a-z, 0-9, _ and -")
		}
	}
	if c.PollTimeout != 0 && c.PollTimeout < 2*time.Second {
		return errors.New("telegram: poll timeout must be at least 2s")
	}
	if c.LeaseTTL < 0 || c.RenewEvery < 0 || c.ChatPace < 0 || c.GlobalPace < 0 {
		return errors.New("telegram: lease ttl, renew every and paces must not be negative")
	}
	d := c.withDefaults()
	if d.RenewEvery >= d.LeaseTTL {
		return fmt.Errorf("telegram: renew every (%s) must be shorter than the lease ttl (%s)", d.RenewEvery, d.LeaseTTL)
	}
	return nil
}

// validSecret checks a webhook secret_token (Bot API setWebhook: 1-256
// characters, only A-Z, a-z, 0-9, _ and - are allowed).
func validSecret(s string) bool {
	if len(s) < 1 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// webhookPath is the path WebhookHandler is mounted on: the path of
// WebhookURL, or WebhookPath when it has none.
func (c Config) webhookPath() string {
	if u, err := url.Parse(c.WebhookURL); err == nil && u.Path != "" && u.Path != "/" {
		return u.Path
	}
	return WebhookPath
}
