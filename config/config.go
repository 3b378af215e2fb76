package config

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults and bounds.
const (
	DefaultEmbeddedAddr = "127.0.0.1:6380"
	DefaultPrefix       = "askuser:" // redis-protocol.md
	DefaultHTTPAddr     = "127.0.0.1:8080"
	DefaultTarget       = "web"          // the default of Config.DefaultRoute
	DefaultRetention    = 24 * time.Hour // redis-protocol.md: result retention
	MinRetention        = time.Minute
	MaxRetention        = 30 * 24 * time.Hour
	DefaultClaimIdle    = 30 * time.Second
	MinClaimIdle        = time.Second
	MaxClaimIdle        = time.Hour
	DefaultLogLevel     = "info"

	// DefaultTelegramAPIURL is the Bot API server; go-telegram/bot appends
	// "/bot<token>/<method>", so it is kept without a trailing slash.
	DefaultTelegramAPIURL = "https://api.telegram.org"
	// DefaultDiscordAPIURL is Discord's base URL (discordgo's
	// EndpointDiscord); the adapter appends the versioned REST paths.
	DefaultDiscordAPIURL = "https://discord.com/"
	// DefaultSlackAPIURL is the Web API base; slack-go appends the method
	// name, so it always ends with a slash.
	DefaultSlackAPIURL = "https://slack.com/api/"

	// MinHTTPTokenChars keeps the web page's token out of guessing range.
	MinHTTPTokenChars = 16
	maxPrefixChars    = 64
	maxReplicaChars   = 128
	maxTargetChars    = 200 // the request's `to` limit (askbridge.MaxToChars)
)

// Config is the whole configuration of a bridge process. Load builds one
// from defaults, an optional YAML file and the environment; a Config built
// by hand should be checked with Validate. Formatting a Config (any fmt verb)
// or logging it with slog never shows a secret.
type Config struct {
	Redis Redis
	HTTP  HTTP
	// Replica names this process among the replicas sharing one Redis (the
	// consumer name on the requests stream, the holder of leases). Default:
	// <hostname>-<pid>.
	Replica string
	// DefaultRoute is where a request without `to` goes: a route name or a
	// target ("web", "telegram:123"). Default "web".
	DefaultRoute string
	// Routes maps a route name to its target and who may answer there.
	Routes map[string]Route
	// Retention is how long a result (and the question hash) is kept after a
	// question ended. Default 24h, from 1m to 30 days.
	Retention time.Duration
	// ClaimIdle is how long a request another replica took may stay
	// unacknowledged before this one takes it over. Default 30s.
	ClaimIdle time.Duration
	// A nil platform section means that platform is off (no token).
	Telegram *Telegram
	Discord  *Discord
	Slack    *Slack
	// LogLevel is debug, info, warn or error (default info).
	LogLevel string

	keys keyNames
}

// Redis says which Redis to use.
type Redis struct {
	// URL of a shared Redis: redis://, rediss://, redis-sentinel:// or
	// redis-cluster://. Empty: the bridge starts an embedded Redis. It may
	// hold a password, so it is never printed whole.
	URL string `json:"-"`
	// EmbeddedAddr is where the embedded Redis listens when URL is empty
	// (loopback only: it has no password). Default 127.0.0.1:6380.
	EmbeddedAddr string
	// Prefix starts every key (default "askuser:").
	Prefix string

	keys keyNames
}

// HTTP configures the server of the web page, the API and the operational
// endpoints.
type HTTP struct {
	// Addr is host:port (default 127.0.0.1:8080). ":8080" listens on every
	// interface.
	Addr string
	// Token, when set, is required by the web page and the API. It must be
	// set when Addr listens beyond loopback.
	Token string `json:"-"`

	keys keyNames
}

// Route is a named destination: a target and who may answer there.
type Route struct {
	// To is a target: telegram:<chat id>, discord:<channel id>,
	// discord:@<user id>, slack:<channel or user id>, or web.
	To string
	// Answerers lists "<platform>:<user id>" entries allowed to answer.
	// Empty: anyone who sees the question. A request's own answerers narrow
	// this list.
	Answerers []string
}

// Telegram turns the Telegram channel on.
type Telegram struct {
	Token string `json:"-"` // the bot token from @BotFather
	// APIURL is the Bot API server (default https://api.telegram.org),
	// without a trailing slash (Load removes one).
	APIURL string
	// WebhookURL, when set, switches inbound updates from long polling to a
	// webhook Telegram calls at this https URL (the bridge calls setWebhook
	// on start). It needs WebhookSecret.
	WebhookURL string
	// WebhookSecret is the secret_token Telegram sends with every webhook
	// call and the bridge checks.
	WebhookSecret string `json:"-"`

	keys keyNames
}

// Discord turns the Discord channel on.
type Discord struct {
	Token string `json:"-"` // the bot token, without the "Bot " prefix
	// APIURL is Discord's base URL (default https://discord.com/).
	APIURL string

	keys keyNames
}

// Slack turns the Slack channel on. With AppToken, inbound events come over
// socket mode; without it, over HTTP (Events API and interactivity
// endpoints), which needs SigningSecret.
type Slack struct {
	BotToken string `json:"-"` // xoxb-…
	AppToken string `json:"-"` // xapp-…: socket mode
	// APIURL is the Web API base (default https://slack.com/api/). It must
	// end with '/', as slack-go appends the method name: Load adds a missing
	// one, Validate reports it.
	APIURL string
	// SigningSecret checks the signature of every request in HTTP mode.
	SigningSecret string `json:"-"`

	keys keyNames
}

// SocketMode reports whether inbound events come over socket mode.
func (s Slack) SocketMode() bool { return s.AppToken != "" }

// Default returns the configuration with every default and no platform on:
// embedded Redis, the web page on loopback, everything to "web".
func Default() *Config {
	return &Config{
		Redis:        Redis{EmbeddedAddr: DefaultEmbeddedAddr, Prefix: DefaultPrefix},
		HTTP:         HTTP{Addr: DefaultHTTPAddr},
		Replica:      defaultReplica(),
		DefaultRoute: DefaultTarget,
		Routes:       map[string]Route{},
		Retention:    DefaultRetention,
		ClaimIdle:    DefaultClaimIdle,
		LogLevel:     DefaultLogLevel,
	}
}

var replicaPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// defaultReplica is <hostname>-<pid>, with characters a replica name does
// not allow replaced by '-'.
func defaultReplica() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "bridge"
	}
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	host = strings.TrimLeft(string(b), "-_.")
	if host == "" {
		host = "bridge"
	}
	if len(host) > 100 {
		host = host[:100]
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// Level returns LogLevel as a slog level (info when it is not valid).
func (c *Config) Level() slog.Level {
	switch c.LogLevel {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Enabled reports whether targets on platform can be used: "web" always,
// the others when their section is present.
func (c *Config) Enabled(platform string) bool {
	switch platform {
	case "web":
		return true
	case "telegram":
		return c.Telegram != nil
	case "discord":
		return c.Discord != nil
	case "slack":
		return c.Slack != nil
	}
	return false
}

// ValidationError lists every problem found in a configuration, each naming
// the key it is about: the environment variable, the _FILE variable or the
// YAML path the value came from. No message contains a secret.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "invalid configuration: " + strings.Join(e.Problems, "; ")
}

// problems collects messages; err returns nil when there are none.
type problems []string

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}

// keyNames maps a setting's environment variable to the key its value was
// actually read from (a YAML path such as "http.addr", or a _FILE
// variable), so that a message names what the operator wrote. A setting not
// in the map is named by its environment variable.
type keyNames map[string]string

func (k keyNames) of(env string) string {
	if name, ok := k[env]; ok {
		return name
	}
	return env
}

// Validate checks the whole configuration and reports every problem.
func (c *Config) Validate() error {
	var p problems
	p = append(p, c.Redis.problems()...)
	p = append(p, c.HTTP.problems()...)
	if c.Telegram != nil {
		p = append(p, c.Telegram.problems()...)
	}
	if c.Discord != nil {
		p = append(p, c.Discord.problems()...)
	}
	if c.Slack != nil {
		p = append(p, c.Slack.problems()...)
	}

	if !replicaPattern.MatchString(c.Replica) || len(c.Replica) > maxReplicaChars {
		p.addf("%s: %q must be 1 to %d letters, digits, '_', '.' or '-', starting with a letter or digit", c.keys.of(envReplica), c.Replica, maxReplicaChars)
	}
	if c.Retention < MinRetention || c.Retention > MaxRetention {
		p.addf("%s: %s is out of range: from %s to %s", c.keys.of(envRetention), c.Retention, MinRetention, fmtDays(MaxRetention))
	}
	if c.ClaimIdle < MinClaimIdle || c.ClaimIdle > MaxClaimIdle {
		p.addf("%s: %s is out of range: from %s to %s", c.keys.of(envClaimIdle), c.ClaimIdle, MinClaimIdle, MaxClaimIdle)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p.addf("%s: %q is not one of debug, info, warn, error", c.keys.of(envLogLevel), c.LogLevel)
	}

	for _, name := range slices.Sorted(maps.Keys(c.Routes)) {
		p = append(p, c.routeProblems(name, c.Routes[name])...)
	}

	if c.DefaultRoute == "" {
		p.addf("%s must not be empty", c.keys.of(envDefaultTo))
	} else if _, err := c.Resolve(c.DefaultRoute); err != nil {
		p.addf("%s: %v", c.keys.of(envDefaultTo), err)
	}
	return p.err()
}

func fmtDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd (%s)", d/(24*time.Hour), d)
	}
	return d.String()
}

var routeNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (c *Config) routeProblems(name string, r Route) problems {
	var p problems
	if !routeNamePattern.MatchString(name) {
		p.addf("routes: route name %q must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
		return p
	}
	if isPlatform(name) {
		p.addf("routes.%s: %q is a platform name and cannot name a route", name, name)
		return p
	}
	key := "routes." + name
	if r.To == "" {
		p.addf("%s.to is required", key)
	} else if platform, _, err := ParseTarget(r.To); err != nil {
		p.addf("%s.to: %v", key, err)
	} else if !c.Enabled(platform) {
		p.addf("%s.to: %v", key, offError(r.To, platform))
	}
	for i, a := range r.Answerers {
		if _, _, err := ParseAnswerer(a); err != nil {
			p.addf("%s.answerers[%d]: %v", key, i, err)
		}
	}
	return p
}

// Validate checks the Redis section.
func (r Redis) Validate() error { return r.problems().err() }

func (r Redis) problems() problems {
	var p problems
	if r.URL != "" {
		checkRedisURL(&p, r.keys.of(envRedisURL), r.URL)
	}
	key := r.keys.of(envEmbeddedAddr)
	if host, ok := checkHostPort(&p, key, r.EmbeddedAddr); ok && r.URL == "" && !isLoopback(host) {
		p.addf("%s: %q must be a loopback address (the embedded Redis has no password); use ASKUSER_REDIS_URL for a Redis others reach", key, r.EmbeddedAddr)
	}
	key = r.keys.of(envPrefix)
	switch {
	case r.Prefix == "":
		p.addf("%s must not be empty", key)
	case len(r.Prefix) > maxPrefixChars:
		p.addf("%s: must be at most %d bytes", key, maxPrefixChars)
	case strings.ContainsAny(r.Prefix, "{}"):
		p.addf("%s: %q must not contain braces (they would break the {<id>} hash tags Redis Cluster needs)", key, r.Prefix)
	case hasSpaceOrControl(r.Prefix):
		p.addf("%s: %q must not contain spaces or control characters", key, r.Prefix)
	}
	return p
}

var redisSchemes = []string{"redis", "rediss", "redis-sentinel", "redis-cluster"}

// checkRedisURL never puts the URL, which may hold a password, in a message.
func checkRedisURL(p *problems, key, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		p.addf("%s: not a URL (%s)", key, urlErrorReason(err))
		return
	}
	if !slices.Contains(redisSchemes, u.Scheme) {
		p.addf("%s: scheme %q is not one of %s", key, u.Scheme, strings.Join(redisSchemes, ", "))
		return
	}
	if u.Hostname() == "" {
		p.addf("%s: has no host (expected %s://[user:password@]host:port[/db])", key, u.Scheme)
	}
}

// urlErrorReason is the reason of a url.Parse error without the URL itself.
func urlErrorReason(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return "unparseable"
}

// Validate checks the HTTP section.
func (h HTTP) Validate() error { return h.problems().err() }

func (h HTTP) problems() problems {
	var p problems
	addrKey := h.keys.of(envHTTPAddr)
	host, ok := checkHostPort(&p, addrKey, h.Addr)
	tokenKey := h.keys.of(envHTTPToken)
	switch {
	case h.Token == "":
		if ok && !isLoopback(host) {
			p.addf("%s is required when %s listens beyond loopback", envHTTPToken, addrKey)
		}
	case len(h.Token) < MinHTTPTokenChars:
		p.addf("%s: must be at least %d characters", tokenKey, MinHTTPTokenChars)
	case hasSpaceOrControl(h.Token):
		p.addf("%s: must not contain spaces or control characters", tokenKey)
	}
	return p
}

// Loopback reports whether Addr listens on loopback only.
func (h HTTP) Loopback() bool {
	host, _, err := net.SplitHostPort(h.Addr)
	return err == nil && isLoopback(host)
}

// Validate checks the Telegram section.
func (t Telegram) Validate() error { return t.problems().err() }

var (
	// Telegram: a bot token is "<bot id>:<secret>" as @BotFather gives it.
	telegramTokenPattern = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`)
	// Telegram setWebhook: secret_token is 1-256 characters A-Z, a-z, 0-9,
	// _ and -.
	webhookSecretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
)

// Telegram setWebhook: "Ports currently supported for webhooks: 443, 80,
// 88, 8443" (the official server; a local Bot API server takes any port).
var telegramWebhookPorts = []string{"443", "80", "88", "8443"}

func (t Telegram) problems() problems {
	var p problems
	if !telegramTokenPattern.MatchString(t.Token) {
		p.addf("%s: is not a Telegram bot token (expected <bot id>:<secret>, as @BotFather gives it)", t.keys.of(envTelegramToken))
	}
	checkAPIURL(&p, t.keys.of(envTelegramAPIURL), t.APIURL)
	urlKey := t.keys.of(envTelegramWebhookURL)
	secretKey := t.keys.of(envTelegramWebhookSecret)
	if t.WebhookURL != "" {
		u, err := url.Parse(t.WebhookURL)
		switch {
		case err != nil:
			p.addf("%s: not a URL (%s)", urlKey, urlErrorReason(err))
		case u.Scheme != "https" || u.Host == "":
			p.addf("%s: %q must be an https:// URL", urlKey, t.WebhookURL)
		case u.Port() != "" && t.APIURL == DefaultTelegramAPIURL && !slices.Contains(telegramWebhookPorts, u.Port()):
			p.addf("%s: port %s is not one Telegram calls (443, 80, 88 or 8443)", urlKey, u.Port())
		}
		if t.WebhookSecret == "" {
			p.addf("%s is required with %s", envTelegramWebhookSecret, urlKey)
		}
	} else if t.WebhookSecret != "" {
		p.addf("%s is set but %s is not: the secret is only used in webhook mode", secretKey, envTelegramWebhookURL)
	}
	if t.WebhookSecret != "" && !webhookSecretPattern.MatchString(t.WebhookSecret) {
		p.addf("%s: must be 1 to 256 characters of A-Z, a-z, 0-9, '_' or '-' (Telegram's rule for secret_token)", secretKey)
	}
	return p
}

// Validate checks the Discord section.
func (d Discord) Validate() error { return d.problems().err() }

func (d Discord) problems() problems {
	var p problems
	checkSecret(&p, d.keys.of(envDiscordToken), d.Token)
	checkAPIURL(&p, d.keys.of(envDiscordAPIURL), d.APIURL)
	return p
}

// Validate checks the Slack section.
func (s Slack) Validate() error { return s.problems().err() }

func (s Slack) problems() problems {
	var p problems
	botKey := s.keys.of(envSlackBotToken)
	appKey := s.keys.of(envSlackAppToken)
	switch {
	case s.BotToken == "":
		p.addf("%s is required", envSlackBotToken)
	case strings.HasPrefix(s.BotToken, "xapp-"):
		p.addf("%s: is an app-level token (xapp-…); the bot token starts with xoxb-, the app token goes in %s", botKey, envSlackAppToken)
	default:
		checkSecret(&p, botKey, s.BotToken)
	}
	if s.AppToken != "" {
		// slack-go's socket mode refuses an app token without this prefix.
		if !strings.HasPrefix(s.AppToken, "xapp-") {
			p.addf("%s: must be an app-level token starting with xapp- (with the connections:write scope)", appKey)
		} else {
			checkSecret(&p, appKey, s.AppToken)
		}
	} else if s.SigningSecret == "" {
		p.addf("%s or %s is required: the app token for socket mode, or the signing secret for HTTP mode", envSlackAppToken, envSlackSigningSecret)
	}
	if s.SigningSecret != "" {
		checkSecret(&p, s.keys.of(envSlackSigningSecret), s.SigningSecret)
	}
	key := s.keys.of(envSlackAPIURL)
	checkAPIURL(&p, key, s.APIURL)
	if s.APIURL != "" && !strings.HasSuffix(s.APIURL, "/") {
		p.addf("%s: %q must end with '/' (slack-go appends the method name)", key, s.APIURL)
	}
	return p
}

func checkSecret(p *problems, key, value string) {
	if hasSpaceOrControl(value) {
		p.addf("%s: must not contain spaces or control characters", key)
	}
}

func checkAPIURL(p *problems, key, raw string) {
	if raw == "" {
		p.addf("%s must not be empty", key)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		p.addf("%s: not a URL (%s)", key, urlErrorReason(err))
	case u.Scheme != "http" && u.Scheme != "https":
		p.addf("%s: %q must be an http:// or https:// URL", key, raw)
	case u.Host == "":
		p.addf("%s: %q has no host", key, raw)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		p.addf("%s: must not carry credentials, a query or a fragment", key)
	}
}

// checkHostPort reports whether addr is host:port with a numeric port and
// returns the host.
func checkHostPort(p *problems, key, addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		p.addf("%s: %q is not host:port", key, addr)
		return "", false
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		p.addf("%s: %q has an invalid port (want 0 to 65535)", key, addr)
		return "", false
	}
	if hasSpaceOrControl(host) {
		p.addf("%s: %q is not host:port", key, addr)
		return "", false
	}
	return host, true
}

// isLoopback reports whether host names the loopback interface only. An
// empty host, 0.0.0.0 and :: listen everywhere; a name other than localhost
// may resolve anywhere.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hasSpaceOrControl(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u00a0' || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}
