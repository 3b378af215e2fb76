package config

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config/settings"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/email"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/lazyre"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/matrix"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/telegram"
	"go.yaml.in/yaml/v3"
)

// Defaults and bounds.
const (
	DefaultEmbeddedAddr = "127.0.0.1:6380"
	DefaultPrefix       = askbridge.DefaultPrefix // redis-protocol.md
	DefaultHTTPAddr     = "127.0.0.1:8080"
	DefaultTarget       = "web"          // the default of Config.DefaultRoute
	DefaultRetention    = 24 * time.Hour // redis-protocol.md: result retention
	MinRetention        = time.Minute
	MaxRetention        = 30 * 24 * time.Hour
	DefaultClaimIdle    = 30 * time.Second
	MinClaimIdle        = time.Second
	MaxClaimIdle        = time.Hour
	DefaultStandingMax  = 7 * 24 * time.Hour
	MinStandingMax      = time.Minute
	MaxStandingMax      = 720 * time.Hour
	DefaultStopGrace    = 20 * time.Second
	MinStopGrace        = time.Second
	MaxStopGrace        = 10 * time.Minute
	DefaultLogLevel     = "info"
	// LogFormatJSON and LogFormatText are the values of Config.LogFormat;
	// "" chooses by where the log goes (see Config.LogFormat).
	LogFormatJSON = "json"
	LogFormatText = "text"
	// TargetsAny and TargetsRoutesOnly are the values of Config.Targets.
	TargetsAny        = "any"
	TargetsRoutesOnly = "routes-only"
	// DefaultMaxEventStreams bounds the web page's open event streams (one
	// per open tab) on one replica.
	DefaultMaxEventStreams = 100
	MaxEventStreams        = 10000
	// DefaultMCPMaxCalls bounds the ask_user calls waiting at once on one
	// MCP server (/mcp of a replica, or `askbridge mcp`).
	DefaultMCPMaxCalls = 64
	MaxMCPCalls        = 10000
	// DefaultMCPMaxWait is the wait budget of an ask_user call: under the
	// 60 s clients on the TypeScript SDK's defaults allow a call.
	DefaultMCPMaxWait = 50 * time.Second
	MinMCPMaxWait     = time.Second
	MaxMCPMaxWait     = time.Hour
	// The values of HTTP.MCPElicit.
	MCPElicitOn  = "on"
	MCPElicitOff = "off"
	// MaxPendingPerAgentLimit bounds ASKUSER_MAX_PENDING_PER_AGENT.
	MaxPendingPerAgentLimit = 1_000_000

	// MinHTTPTokenChars keeps the web page's token out of guessing range.
	MinHTTPTokenChars = 16
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
	// Targets says what a request's `to` may name: TargetsAny (the default;
	// "" in a Config built by hand) a route or a direct target,
	// TargetsRoutesOnly a route only (and "mcp", which reaches no chat).
	// Either way a request without `to` goes to DefaultRoute. See Resolve.
	Targets string
	// Chats bounds, per platform, the chats a request may name as a direct
	// target.
	Chats Chats
	// MaxPendingPerAgent caps the pending questions of one agent (a
	// request's agent field; requests without one count together). 0, the
	// default: no cap. At most MaxPendingPerAgentLimit.
	MaxPendingPerAgent int
	// Retention is how long a result (and the question hash) is kept after a
	// question ended. Default 24h, from 1m to 30 days.
	Retention time.Duration
	// ClaimIdle is how long a request another replica took may stay
	// unacknowledged before this one takes it over. Default 30s.
	ClaimIdle time.Duration
	// StandingMax caps how long an answer may be kept standing
	// (ask-user.md §9).
	StandingMax time.Duration
	// StopGrace bounds a graceful stop: what is still in hand after it is
	// left to another replica. Default 20s, from 1s to 10m.
	StopGrace time.Duration
	// Each platform's section is its own Config; nil means that platform is
	// off (no token). Load fills in the settings it reads (the table in
	// table.go); cmd/bridge adds the wiring (replica, logger).
	Telegram *telegram.Config
	Discord  *discord.Config
	Slack    *slack.Config
	// Matrix is the Matrix channel (ask-user.md §11); nil: off (no
	// token).
	Matrix *matrix.Config
	// Email is the email channel (ask-user.md §10); nil: off (no SMTP
	// server). It needs PublicURL and LinkSecret: an email carries an
	// answer link.
	Email *email.Config
	// PublicURL is the address people reach the bridge's web server at
	// (ASKUSER_PUBLIC_URL), the root of answer links; empty: no links.
	PublicURL string
	// LinkSecret signs answer links (ASKUSER_LINK_SECRET), at least
	// link.MinSecret bytes; rotating it invalidates every link out.
	LinkSecret string `json:"-"`
	// LogLevel is debug, info, warn or error (default info).
	LogLevel string
	// LogFormat is how log records are written: LogFormatJSON, one JSON
	// object a line, or LogFormatText, key=value pairs. Empty, the default:
	// text when stderr is a terminal, JSON otherwise (a file, a pipe, a
	// container's log collector).
	LogFormat string
	// Locale is the language of the bridge's own words when neither the
	// request nor its route names one (a BCP 47 tag; default "en"). A tag
	// without a shipped catalog falls back to the same language's, then
	// to English.
	Locale string
	// Callback configures result callbacks (ask-user.md §8); they are off
	// without its secret.
	Callback Callback

	keys keyNames
}

// Callback configures result callbacks: the secret that signs them and
// the hosts they may go to (docs/callbacks.md). Each list is
// comma-separated host patterns: a host name, "*." and a domain for any
// name under it, or an IP address.
type Callback struct {
	// Secret signs every callback (Standard Webhooks): at least 16
	// characters, or "whsec_" and base64 of at least 16 bytes, which is
	// then decoded. Empty: callbacks are off and a request with one is
	// refused.
	Secret string `yaml:"secret" json:"-"`
	// Hosts may be called back over https.
	Hosts string `yaml:"hosts"`
	// HTTPHosts may be called back over plain http too (and are allowed
	// like Hosts).
	HTTPHosts string `yaml:"httpHosts"`
	// PrivateHosts may resolve to non-public addresses (loopback, private,
	// link-local…), and are allowed like Hosts.
	PrivateHosts string `yaml:"privateHosts"`
}

// Format prints the callback settings, the secret redacted, for every verb.
func (c Callback) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, settings.String(c)) }

// LogValue logs the callback settings, the secret redacted.
func (c Callback) LogValue() slog.Value { return settings.LogValue(c) }

// Policy is the callback policy of the lists.
func (c Callback) Policy() engine.CallbackPolicy {
	return engine.CallbackPolicy{Hosts: splitList(c.Hosts), HTTPHosts: splitList(c.HTTPHosts), PrivateHosts: splitList(c.PrivateHosts)}
}

func (c Callback) check(p *settings.Problems) {
	lists := false
	for _, l := range []struct{ key, value string }{{"hosts", c.Hosts}, {"httpHosts", c.HTTPHosts}, {"privateHosts", c.PrivateHosts}} {
		for _, h := range splitList(l.value) {
			lists = true
			if err := engine.CheckCallbackHostPattern(h); err != nil {
				p.Addf("%s: %v", p.Name(l.key), err)
			}
		}
	}
	switch {
	case c.Secret == "":
		if lists {
			p.Addf("callback hosts are set but %s is not, so no callback is ever made: set it (or its _FILE), or remove the hosts", p.Name("secret"))
		}
		return
	case !lists:
		p.Addf("%s is set but no host may be called back: list the agents' hosts in %s", p.Name("secret"), p.Name("hosts"))
	}
	if _, err := askbridge.CallbackKey(c.Secret); err != nil {
		p.Addf("%s: %v", p.Name("secret"), err)
	}
	p.Plain("secret", c.Secret)
}

// Redis says which Redis to use.
type Redis struct {
	// URL of a shared Redis: redis://, rediss://, redis-sentinel:// or
	// redis-cluster://. Empty: the bridge starts an embedded Redis. It may
	// hold a password, so it is never printed whole.
	URL string `yaml:"url" json:"-"`
	// EmbeddedAddr is where the embedded Redis listens when URL is empty
	// (loopback only: it has no password). Default 127.0.0.1:6380.
	EmbeddedAddr string `yaml:"embeddedAddr"`
	// Prefix starts every key (default "askuser:").
	Prefix string `yaml:"prefix"`
	// DataDir is where the embedded Redis keeps its append-only file when
	// URL is empty and a redis-server binary is on the PATH. Empty: a
	// directory "askbridge" in the user's cache directory (see
	// DefaultDataDir).
	DataDir string `yaml:"dataDir"`
}

// HTTP configures the server of the web page, the API and the operational
// endpoints.
type HTTP struct {
	// Addr is host:port (default 127.0.0.1:8080). ":8080" listens on every
	// interface.
	Addr string `yaml:"addr"`
	// Token, when set, is required by the web page and the API. It must be
	// set when Addr listens beyond loopback.
	Token string `yaml:"token" json:"-"`
	// Origins lists, comma-separated, the other origins
	// (scheme://host[:port]) the page is opened at, such as a reverse
	// proxy's https://ask.example.com. A browser's answer from any origin
	// but these and Addr's (with their loopback aliases) is refused.
	Origins string `yaml:"origins"`
	// MaxEventStreams bounds the page's open event streams (one per open
	// tab) on this replica; more are refused with 503 until one closes.
	// Default 100; 0 in a Config built by hand means the default.
	MaxEventStreams int `yaml:"maxEventStreams"`
	// MCPMaxCalls bounds the ask_user calls waiting at once on this
	// replica's /mcp (and on `askbridge mcp`, which reads only its
	// variable); more are refused at once (503 with Retry-After over
	// HTTP, a tool error over stdio). Default 64; 0 in a Config built by
	// hand means the default.
	MCPMaxCalls int `yaml:"mcpMaxCalls"`
	// MCPMaxWait is the wait budget of one ask_user call: a question still
	// open after it makes the call return pending (wait_for_answer waits
	// again). Default 50 s; 0 in a Config built by hand means the default.
	MCPMaxWait time.Duration `yaml:"mcpMaxWait"`
	// MCPElicit is "on" (the default; "" in a Config built by hand) or
	// "off": whether a client that shows forms gets each question as one.
	MCPElicit string `yaml:"mcpElicit"`
	// MetricsAddr, when set, serves /metrics, /readyz and /healthz on a
	// listener of its own, without authentication, and no longer serves
	// /metrics and /readyz on Addr. Unset, they are on Addr, behind the
	// token when one is set.
	MetricsAddr string `yaml:"metricsAddr"`
	// PprofAddr, when set, serves Go's profiler (net/http/pprof, under
	// /debug/pprof/) on a listener of its own, for operators. It has no
	// authentication, so it must be a loopback address. Default: off.
	PprofAddr string `yaml:"pprofAddr"`
}

// Route is a named destination: a target and who may answer there.
type Route struct {
	// To is a target: telegram:<chat id>, discord:<channel id>,
	// discord:@<user id>, slack:<channel or user id>, or web.
	To string `yaml:"to"`
	// Answerers lists "<platform>:<user id>" entries allowed to answer.
	// Empty: anyone who sees the question. A request's own answerers narrow
	// this list.
	Answerers []string `yaml:"answerers"`
	// Locale is the language of the bridge's words in this route's
	// questions when the request names none (a BCP 47 tag: "th"). Empty:
	// Config.Locale.
	Locale string `yaml:"locale"`
	// Escalate is the route's default escalation ladder (ask-user.md §5):
	// a request shown first in this route that gives no `escalate` of its
	// own gets these steps.
	Escalate []Step `yaml:"escalate"`
	// Links adds "Answer in the browser" with the person's answer link
	// to a text prompt (several questions, or several choices) shown in
	// this route, when its chat is a DM: a link names one person, so it
	// is never posted where others read it. Needs PublicURL and
	// LinkSecret.
	Links bool `yaml:"links"`
}

// Step is one step of a route's escalation ladder: AfterSeconds after a
// question was accepted, if it is still open and nobody has pressed Seen,
// it is also shown in To (targets or route names).
type Step struct {
	AfterSeconds int    `yaml:"afterSeconds"`
	To           StepTo `yaml:"to"`
}

// StepTo is a step's places: one target or route name, or a list.
type StepTo []string

// UnmarshalYAML reads one string or a list of strings.
func (t *StepTo) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*t = StepTo{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*t = list
	return nil
}

// Chats lists, per platform and comma-separated, the chats a request may
// name as a direct target ("telegram:<chat id>"); an empty list leaves
// that platform's chats unbounded. Routes, the default route included,
// come from the operator and are not bound by these lists; neither is the
// web target. Each field's tag is its full YAML key, under the platform's
// section.
type Chats struct {
	// Telegram: chat ids, such as -1001234567890.
	Telegram string `yaml:"telegram.chats"`
	// Discord: channel ids, or @<user id> for a DM.
	Discord string `yaml:"discord.channels"`
	// Slack: channel ids (C…, G…, D…), or user ids (U…, W…) for a DM.
	Slack string `yaml:"slack.channels"`
	// Matrix: room ids, such as !abc:example.org.
	Matrix string `yaml:"matrix.rooms"`
	// Email: addresses, or @<domain> for every address of a domain.
	Email string `yaml:"email.addresses"`
}

// Default returns the configuration with every default and no platform on:
// embedded Redis, the web page on loopback, everything to "web".
func Default() *Config {
	return &Config{
		Redis:        Redis{EmbeddedAddr: DefaultEmbeddedAddr, Prefix: DefaultPrefix},
		HTTP:         HTTP{Addr: DefaultHTTPAddr, MaxEventStreams: DefaultMaxEventStreams, MCPMaxCalls: DefaultMCPMaxCalls, MCPMaxWait: DefaultMCPMaxWait, MCPElicit: MCPElicitOn},
		Replica:      defaultReplica(),
		DefaultRoute: DefaultTarget,
		Routes:       map[string]Route{},
		Targets:      TargetsAny,
		Retention:    DefaultRetention,
		ClaimIdle:    DefaultClaimIdle,
		StopGrace:    DefaultStopGrace,
		StandingMax:  DefaultStandingMax,
		LogLevel:     DefaultLogLevel,
		Locale:       locale.Default,
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

// ValidLogFormat reports whether format is a value of Config.LogFormat:
// LogFormatJSON, LogFormatText or "" (chosen by where the log goes). For
// commands that read ASKUSER_LOG_FORMAT without loading the whole
// configuration.
func ValidLogFormat(format string) bool {
	return format == "" || format == LogFormatJSON || format == LogFormatText
}

// MCP reads the settings of the MCP server from getenv for `askbridge
// mcp`, which loads no other setting of the bridge: ASKUSER_MCP_MAX_CALLS,
// ASKUSER_MCP_MAX_WAIT and ASKUSER_MCP_ELICIT, each its default when
// unset. A bad value is an error naming its variable.
func MCP(getenv func(string) string) (HTTP, error) {
	c := Default()
	for _, env := range []string{envMCPMaxCalls, envMCPMaxWait, envMCPElicit} {
		v := strings.TrimSpace(getenv(env))
		if v == "" {
			continue
		}
		for _, s := range table {
			if s.env == env {
				if err := s.set(c, v); err != nil {
					return HTTP{}, fmt.Errorf("%s: %w", env, err)
				}
			}
		}
	}
	h := c.HTTP
	for i, err := range []error{checkMCPMaxCalls(h.MCPMaxCalls), checkMCPMaxWait(h.MCPMaxWait), checkMCPElicit(h.MCPElicit)} {
		if err != nil {
			return HTTP{}, fmt.Errorf("%s: %w", []string{envMCPMaxCalls, envMCPMaxWait, envMCPElicit}[i], err)
		}
	}
	return h, nil
}

// checkMCPMaxWait checks a value of HTTP.MCPMaxWait (0: the default).
func checkMCPMaxWait(d time.Duration) error {
	if d != 0 && (d < MinMCPMaxWait || d > MaxMCPMaxWait) {
		return fmt.Errorf("%s is out of range: from %s to %s", d, MinMCPMaxWait, MaxMCPMaxWait)
	}
	return nil
}

// checkMCPElicit checks a value of HTTP.MCPElicit ("": the default).
func checkMCPElicit(v string) error {
	if v != "" && v != MCPElicitOn && v != MCPElicitOff {
		return fmt.Errorf("%q is not %s or %s", v, MCPElicitOn, MCPElicitOff)
	}
	return nil
}

// checkMCPMaxCalls checks a value of HTTP.MCPMaxCalls (0: the default).
func checkMCPMaxCalls(n int) error {
	if n < 0 || n > MaxMCPCalls {
		return fmt.Errorf("%d is out of range: from 1 to %d", n, MaxMCPCalls)
	}
	return nil
}

// Enabled reports whether targets on platform can be used: "web" and
// "mcp" always, the others when their section is present.
func (c *Config) Enabled(platform string) bool {
	if ps := platformNamed(platform); ps != nil {
		return ps.on(c)
	}
	return chatless(platform)
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

// name names the setting with YAML key key (or, for a setting without one,
// environment variable key) the way the operator wrote it.
func (k keyNames) name(key string) string {
	if s := settingAt(key); s != nil {
		return k.of(s.env)
	}
	return k.of(key)
}

// Validate checks the whole configuration and reports every problem.
func (c *Config) Validate() error {
	var list []string
	section := func(name string, check func(*settings.Problems)) {
		p := settings.Problems{Section: name, Names: c.keys.name}
		check(&p)
		list = append(list, p.List...)
	}
	section("redis", c.Redis.check)
	section("http", c.HTTP.check)
	section("callback", c.Callback.check)
	for _, ps := range platforms {
		if ps.on(c) {
			section(ps.name, func(p *settings.Problems) {
				ps.check(c, p)
				ps.checkChats(c, p)
			})
		}
	}
	section("", c.check)
	if len(list) == 0 {
		return nil
	}
	return &ValidationError{Problems: list}
}

// check checks the settings outside a section, the routes and the default
// route.
func (c *Config) check(p *settings.Problems) {
	if !replicaPattern.MatchString(c.Replica) || len(c.Replica) > maxReplicaChars {
		p.Addf("%s: %q must be 1 to %d letters, digits, '_', '.' or '-', starting with a letter or digit", p.Name(envReplica), c.Replica, maxReplicaChars)
	}
	if c.Retention < MinRetention || c.Retention > MaxRetention {
		p.Addf("%s: %s is out of range: from %s to %s", p.Name("resultRetention"), c.Retention, MinRetention, fmtDays(MaxRetention))
	}
	if c.ClaimIdle < MinClaimIdle || c.ClaimIdle > MaxClaimIdle {
		p.Addf("%s: %s is out of range: from %s to %s", p.Name("claimIdle"), c.ClaimIdle, MinClaimIdle, MaxClaimIdle)
	}
	if c.StandingMax < MinStandingMax || c.StandingMax > MaxStandingMax {
		p.Addf("%s: %s is out of range: from %s to %s", p.Name("standingMax"), c.StandingMax, MinStandingMax, MaxStandingMax)
	}
	if c.StopGrace < MinStopGrace || c.StopGrace > MaxStopGrace {
		p.Addf("%s: %s is out of range: from %s to %s", p.Name("stopGrace"), c.StopGrace, MinStopGrace, MaxStopGrace)
	}
	if !askbridge.ValidLocale(c.Locale) {
		p.Addf("%s: %q is not a language tag such as en or th (shipped: %s)", p.Name("locale"), c.Locale, strings.Join(locale.Tags(), ", "))
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		p.Addf("%s: %q is not one of debug, info, warn, error", p.Name("log.level"), c.LogLevel)
	}
	if !ValidLogFormat(c.LogFormat) {
		p.Addf("%s: %q is not one of %s, %s", p.Name("log.format"), c.LogFormat, LogFormatJSON, LogFormatText)
	}
	if c.MaxPendingPerAgent < 0 || c.MaxPendingPerAgent > MaxPendingPerAgentLimit {
		p.Addf("%s: %d is out of range: from 0 (no cap) to %d", p.Name("maxPendingPerAgent"), c.MaxPendingPerAgent, MaxPendingPerAgentLimit)
	}
	if c.Targets != "" && c.Targets != TargetsAny && c.Targets != TargetsRoutesOnly {
		p.Addf("%s: %q is not one of %s, %s", p.Name("targets"), c.Targets, TargetsAny, TargetsRoutesOnly)
	}
	c.checkLinks(p)
	for _, name := range slices.Sorted(maps.Keys(c.Routes)) {
		c.checkRoute(p, name, c.Routes[name])
	}
	if c.DefaultRoute == "" {
		p.Addf("%s must not be empty", p.Name("defaultRoute"))
	} else if _, err := c.resolve(c.DefaultRoute, false); err != nil {
		p.Addf("%s: %v", p.Name("defaultRoute"), err)
	}
}

func fmtDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd (%s)", d/(24*time.Hour), d)
	}
	return d.String()
}

var routeNamePattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (c *Config) checkRoute(p *settings.Problems, name string, r Route) {
	if !routeNamePattern().MatchString(name) {
		p.Addf("routes: route name %q must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
		return
	}
	if isPlatform(name) {
		p.Addf("routes.%s: %q is a platform name and cannot name a route", name, name)
		return
	}
	key := "routes." + name
	if r.To == "" {
		p.Addf("%s.to is required", key)
	} else if platform, _, err := ParseTarget(r.To); err != nil {
		p.Addf("%s.to: %v", key, err)
	} else if platform == askbridge.PlatformMCP {
		p.Addf("%v", notForTheBridge(key+".to"))
	} else if !c.Enabled(platform) {
		p.Addf("%s.to: %v", key, offError(r.To, platform))
	}
	for i, a := range r.Answerers {
		if _, _, err := ParseAnswerer(a); err != nil {
			p.Addf("%s.answerers[%d]: %v", key, i, err)
		}
	}
	if r.Locale != "" && !askbridge.ValidLocale(r.Locale) {
		p.Addf("%s.locale: %q is not a language tag such as en or th", key, r.Locale)
	}
	if r.Links && !c.LinksOn() {
		p.Addf("%s.links needs answer links on: set %s and %s", key, p.Name("publicURL"), p.Name("linkSecret"))
	}
	if len(r.Escalate) > askbridge.MaxSteps {
		p.Addf("%s.escalate: at most %d steps (got %d)", key, askbridge.MaxSteps, len(r.Escalate))
	}
	prev := 0
	for i, st := range r.Escalate {
		sk := fmt.Sprintf("%s.escalate[%d]", key, i)
		switch {
		case st.AfterSeconds < 1:
			p.Addf("%s.afterSeconds must be at least 1", sk)
		case st.AfterSeconds <= prev:
			p.Addf("%s.afterSeconds (%d) must be greater than the step before (%d)", sk, st.AfterSeconds, prev)
		case st.AfterSeconds >= askbridge.MaxTimeout:
			p.Addf("%s.afterSeconds (%d) must be below the longest timeout (%d)", sk, st.AfterSeconds, askbridge.MaxTimeout)
		}
		prev = max(prev, st.AfterSeconds)
		if len(st.To) == 0 || len(st.To) > askbridge.MaxPlaces {
			p.Addf("%s.to must name 1 to %d places", sk, askbridge.MaxPlaces)
		}
		for j, to := range st.To {
			if to == "" {
				p.Addf("%s.to[%d] must not be empty", sk, j)
			} else if to == name {
				p.Addf("%s.to[%d] names the route itself", sk, j)
			} else if _, ok := c.Routes[to]; !ok {
				if platform, _, err := ParseTarget(to); err != nil {
					p.Addf("%s.to[%d]: %q is neither a route nor a target: %v", sk, j, to, err)
				} else if platform == askbridge.PlatformMCP {
					p.Addf("%v", notForTheBridge(fmt.Sprintf("%s.to[%d]", sk, j)))
				} else if !c.Enabled(platform) {
					p.Addf("%s.to[%d]: %v", sk, j, offError(to, platform))
				}
			}
		}
	}
}

func (r Redis) check(p *settings.Problems) {
	if r.URL != "" {
		checkRedisURL(p, p.Name("url"), r.URL)
	}
	key := p.Name("embeddedAddr")
	if host, ok := checkHostPort(p, key, r.EmbeddedAddr); ok && r.URL == "" && !isLoopback(host) {
		p.Addf("%s: %q must be a loopback address (the embedded Redis has no password); use ASKUSER_REDIS_URL for a Redis others reach", key, r.EmbeddedAddr)
	}
	key = p.Name("prefix")
	switch {
	case r.Prefix == "":
		p.Addf("%s must not be empty", key)
	default:
		if err := askbridge.CheckPrefix(r.Prefix); err != nil {
			p.Addf("%s: %v", key, err)
		}
	}
}

var redisSchemes = []string{"redis", "rediss", "redis-sentinel", "redis-cluster"}

// checkRedisURL never puts the URL, which may hold a password, in a message.
func checkRedisURL(p *settings.Problems, key, raw string) {
	if !strings.Contains(raw, "://") {
		// "host:port" parses as scheme "host", or not at all.
		p.Addf("%s: has no scheme: add redis:// in front (redis://host:port, rediss:// for TLS)", key)
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		p.Addf("%s: not a URL (%s)", key, settings.URLErrorReason(err))
		return
	}
	if !slices.Contains(redisSchemes, u.Scheme) {
		p.Addf("%s: scheme %q is not one of %s", key, u.Scheme, strings.Join(redisSchemes, ", "))
		return
	}
	if u.Hostname() == "" {
		p.Addf("%s: has no host (expected %s://[user:password@]host:port[/db])", key, u.Scheme)
	}
}

func (h HTTP) check(p *settings.Problems) {
	addrKey := p.Name("addr")
	host, ok := checkHostPort(p, addrKey, h.Addr)
	switch {
	case h.Token == "":
		if ok && !isLoopback(host) {
			p.Addf("%s is required when %s listens beyond loopback", p.Name("token"), addrKey)
		}
	case len(h.Token) < MinHTTPTokenChars:
		p.Addf("%s: must be at least %d characters", p.Name("token"), MinHTTPTokenChars)
	default:
		p.Plain("token", h.Token)
	}
	for _, o := range h.OriginList() {
		key := p.Name("origins")
		u, err := ParseOrigin(o)
		switch {
		case err != nil:
			p.Addf("%s: %v", key, err)
		case h.Token == "" && !isLoopback(u.Hostname()):
			p.Addf("%s: %q is beyond loopback, which needs %s: without a token the page answers only to loopback names", key, o, p.Name("token"))
		}
	}
	if h.MaxEventStreams < 0 || h.MaxEventStreams > MaxEventStreams {
		p.Addf("%s: %d is out of range: from 1 to %d", p.Name("maxEventStreams"), h.MaxEventStreams, MaxEventStreams)
	}
	if err := checkMCPMaxCalls(h.MCPMaxCalls); err != nil {
		p.Addf("%s: %v", p.Name("mcpMaxCalls"), err)
	}
	if err := checkMCPMaxWait(h.MCPMaxWait); err != nil {
		p.Addf("%s: %v", p.Name("mcpMaxWait"), err)
	}
	if err := checkMCPElicit(h.MCPElicit); err != nil {
		p.Addf("%s: %v", p.Name("mcpElicit"), err)
	}
	if h.MetricsAddr != "" {
		checkHostPort(p, p.Name("metricsAddr"), h.MetricsAddr)
	}
	if h.PprofAddr != "" {
		key := p.Name("pprofAddr")
		if host, ok := checkHostPort(p, key, h.PprofAddr); ok && !isLoopback(host) {
			p.Addf("%s: %q must be a loopback address (the profiler has no authentication)", key, h.PprofAddr)
		}
	}
}

// OriginList is Origins split at commas, blanks dropped.
func (h HTTP) OriginList() []string { return splitList(h.Origins) }

// splitList splits a comma-separated setting, each item trimmed, blanks
// dropped.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParseOrigin checks that s is an origin as browsers send it in the Origin
// header: http or https, a host, an optional port, nothing else (a
// trailing "/" is allowed).
func ParseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL (%s)", s, settings.URLErrorReason(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q is not an http:// or https:// origin", s)
	}
	if u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not an origin: want scheme://host[:port], with no user, path or query", s)
	}
	return u, nil
}

// DefaultDataDir is where the embedded Redis keeps its data when
// Redis.DataDir is empty: "askbridge" in the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS,
// %LocalAppData% on Windows), or "" when there is none.
func DefaultDataDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "askbridge")
}

// Loopback reports whether Addr listens on loopback only.
func (h HTTP) Loopback() bool {
	host, _, err := net.SplitHostPort(h.Addr)
	return err == nil && isLoopback(host)
}

// checkHostPort reports whether addr is host:port with a numeric port and
// returns the host.
func checkHostPort(p *settings.Problems, key, addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		p.Addf("%s: %q is not host:port", key, addr)
		return "", false
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || strconv.FormatUint(n, 10) != port {
		p.Addf("%s: %q has an invalid port (want 0 to 65535)", key, addr)
		return "", false
	}
	if settings.HasSpaceOrControl(host) {
		p.Addf("%s: %q is not host:port", key, addr)
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
