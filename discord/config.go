package discord

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Config configures the Discord channel. Token is required; every other
// field has a default.
type Config struct {
	// Token is the bot token, with or without the "Bot " prefix. Never
	// logged.
	Token string
	// APIURL is Discord's base URL (default https://discord.com/); REST
	// calls go to <APIURL>api/v9/…, and the gateway URL is what
	// <APIURL>api/v9/gateway returns.
	APIURL string
	// AppID is the application id; by default the bot user's id (the two
	// are the same for every bot made in the developer portal). It names
	// the gateway lease and the interaction webhooks.
	AppID string
	// Replica names this replica as holder of the gateway lease; it must
	// differ between replicas (default: host name and process id).
	Replica string
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
	HTTPClient *http.Client
}

func (c Config) withDefaults() Config {
	if c.APIURL == "" {
		c.APIURL = discordBase
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	if c.Replica == "" {
		host, _ := os.Hostname()
		c.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	if c.StandbyPoll <= 0 {
		c.StandbyPoll = 2 * time.Second
	}
	if c.AckAfter <= 0 {
		c.AckAfter = 1500 * time.Millisecond
	}
	if c.RetryMin <= 0 {
		c.RetryMin = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 2 * time.Minute
	}
	if c.BadCredentialsRetry <= 0 {
		c.BadCredentialsRetry = 5 * time.Minute
	}
	if c.OpenTimeout <= 0 {
		c.OpenTimeout = 30 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 20 * time.Second}
	}
	return c
}

// Validate checks the configuration, naming the bad field.
func (c Config) Validate() error {
	var problems []string
	if strings.TrimSpace(strings.TrimPrefix(c.Token, "Bot ")) == "" {
		problems = append(problems, "discord: Token is required")
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, fmt.Sprintf("discord: APIURL %q must be an http(s) URL", c.APIURL))
		}
	}
	if c.LeaseTTL > 10*time.Second {
		problems = append(problems, fmt.Sprintf("discord: LeaseTTL %s is over 10s: a dead gateway holder would be replaced too late", c.LeaseTTL))
	}
	if c.AckAfter >= 3*time.Second {
		problems = append(problems, fmt.Sprintf("discord: AckAfter %s must be under Discord's 3s interaction deadline", c.AckAfter))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// token is the Authorization value discordgo sends.
func (c Config) token() string {
	return "Bot " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c.Token), "Bot "))
}
