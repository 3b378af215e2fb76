package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge/config/settings"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/email"
	"github.com/askbridge/askbridge/matrix"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/telegram"
)

// The variables read outside the table's loop. Every name is a public
// interface.
const (
	envConfig      = "ASKUSER_CONFIG"
	envReplica     = "ASKUSER_REPLICA"
	envMCPMaxCalls = "ASKUSER_MCP_MAX_CALLS"
	envMCPMaxWait  = "ASKUSER_MCP_MAX_WAIT"
	envMCPElicit   = "ASKUSER_MCP_ELICIT"
)

// setting is one row of the table: everything about one setting, in one
// place. README.md, doc.go and config.example.yaml are checked against it
// (docs_test.go; go test ./config -update rewrites the README table and
// the list in doc.go).
type setting struct {
	env    string // the environment variable
	yaml   string // the YAML key path; "" when it is read from the environment only
	secret bool   // never printed, never quoted; may be given as env_FILE
	// Where the value goes: a string, or a duration or a whole number
	// parsed from one. A row with none is ASKUSER_CONFIG itself.
	str  func(*Config) *string
	dur  func(*Config) *time.Duration
	num  func(*Config) *int
	norm func(string) string // tidies a value before it is set
	def  string              // the default as the docs show it, when the value does not say it
	doc  string              // what it does, for the docs
}

var table = []setting{
	{env: envConfig, def: "unset",
		doc: "Path of an optional YAML file (see `config.example.yaml`). Unknown keys (with the known key closest to each), keys given twice and values of the wrong kind are errors naming the key and line. Environment variables override the file."},
	{env: "ASKUSER_REDIS_URL", yaml: "redis.url", secret: true, str: func(c *Config) *string { return &c.Redis.URL },
		doc: "Shared Redis: `redis://`, `rediss://` (TLS), `redis-sentinel://` or `redis-cluster://`, with a host. Unset: the bridge starts an embedded Redis."},
	{env: "ASKUSER_EMBEDDED_REDIS_ADDR", yaml: "redis.embeddedAddr", str: func(c *Config) *string { return &c.Redis.EmbeddedAddr },
		doc: "Where the embedded Redis listens, a loopback `host:port` (it has no password). An address another process already listens on is an error: a second bridge on the machine needs an address and an `ASKUSER_DATA_DIR` of its own, or `ASKUSER_REDIS_URL` naming the first one's Redis to share it. Used only when `ASKUSER_REDIS_URL` is unset."},
	{env: "ASKUSER_DATA_DIR", yaml: "redis.dataDir", str: func(c *Config) *string { return &c.Redis.DataDir }, def: "`<user cache dir>/askbridge`",
		doc: "Where the embedded Redis keeps its append-only file when a `redis-server` binary is on the PATH (`~/.cache/askbridge` on Linux); one bridge per directory. Without `redis-server` the embedded Redis keeps everything in memory and loses it on restart. Used only when `ASKUSER_REDIS_URL` is unset."},
	{env: "ASKUSER_REDIS_PREFIX", yaml: "redis.prefix", str: func(c *Config) *string { return &c.Redis.Prefix },
		doc: "Prefix of every Redis key. No braces, spaces or control characters; at most 64 bytes."},
	{env: "ASKUSER_HTTP_ADDR", yaml: "http.addr", str: func(c *Config) *string { return &c.HTTP.Addr },
		doc: "`host:port` of the web page, its API and `/healthz`, and of `/readyz` and `/metrics` (behind the token when one is set) unless `ASKUSER_METRICS_ADDR` moves them."},
	{env: "ASKUSER_HTTP_TOKEN", yaml: "http.token", secret: true, str: func(c *Config) *string { return &c.HTTP.Token },
		doc: "Token the web page and API require (at least 16 characters). Required when `ASKUSER_HTTP_ADDR` listens beyond loopback. Open the page as `http://host:port/#token=<token>`. Without it the page answers only to loopback host names (`localhost`, `127.0.0.1`, `[::1]`), and refuses (403) a request a reverse proxy forwarded (`Forwarded`, `X-Forwarded-For`, `X-Real-IP` or `Via` header): a proxy needs the token."},
	{env: "ASKUSER_HTTP_ORIGINS", yaml: "http.origins", str: func(c *Config) *string { return &c.HTTP.Origins },
		doc: "Other origins the page is opened at, comma-separated `scheme://host[:port]` (a reverse proxy's `https://ask.example.com`, a published port). Answers from a browser at any other origin than these and `ASKUSER_HTTP_ADDR` (and their loopback aliases) are refused. An origin beyond loopback needs the token."},
	{env: "ASKUSER_MAX_EVENT_STREAMS", yaml: "http.maxEventStreams", num: func(c *Config) *int { return &c.HTTP.MaxEventStreams },
		doc: "How many live-update streams (one per open page) this replica serves at once; more get 503 with `Retry-After` and the page retries. 1 to 10000."},
	{env: envMCPMaxCalls, yaml: "http.mcpMaxCalls", num: func(c *Config) *int { return &c.HTTP.MCPMaxCalls },
		doc: "How many `ask_user` calls may wait at once on this replica's `/mcp` (and on one `askbridge mcp`, which reads this variable too); one more is refused at once: 503 with `Retry-After` over HTTP, a tool error naming this setting over stdio. Waiting calls share one read of the events stream and a small Redis pool of their own, never the engine's. 1 to 10000."},
	{env: envMCPMaxWait, yaml: "http.mcpMaxWait", dur: func(c *Config) *time.Duration { return &c.HTTP.MCPMaxWait },
		doc: "How long one `ask_user` call (on `/mcp`, or on `askbridge mcp`, which reads this variable too) waits before it returns `{\"status\":\"pending\",\"id\":…}`; the model then calls `wait_for_answer`, and the question stays open. Keep it under the shortest request timeout of your clients (60 s on the TypeScript SDK's defaults); `1s` to `1h`."},
	{env: envMCPElicit, yaml: "http.mcpElicit", str: func(c *Config) *string { return &c.HTTP.MCPElicit }, norm: strings.ToLower,
		doc: "`on`: a client that declares it can show forms (MCP elicitation) also gets each `ask_user` question as a form, besides the chat; the first answer anywhere wins. `off`: never (for clients that declare forms but never show them); `to: \"mcp\"` is then refused. Read by `askbridge mcp` too."},
	{env: "ASKUSER_METRICS_ADDR", yaml: "http.metricsAddr", str: func(c *Config) *string { return &c.HTTP.MetricsAddr }, def: "unset (on `ASKUSER_HTTP_ADDR`)",
		doc: "`host:port` of a listener of its own for `/metrics`, `/readyz` and `/healthz`, without authentication: bind it where only monitoring reaches. Set, `/metrics` and `/readyz` leave `ASKUSER_HTTP_ADDR`."},
	{env: "ASKUSER_PPROF_ADDR", yaml: "http.pprofAddr", str: func(c *Config) *string { return &c.HTTP.PprofAddr }, def: "unset (off)",
		doc: "Loopback `host:port` on which to serve Go's profiler (`/debug/pprof/`) for operators; it has no authentication."},
	{env: envReplica, str: func(c *Config) *string { return &c.Replica }, def: "`<hostname>-<pid>`",
		doc: "This replica's name among those sharing one Redis: letters, digits, `_`, `.` and `-`."},
	{env: "ASKUSER_DEFAULT_TO", yaml: "defaultRoute", str: func(c *Config) *string { return &c.DefaultRoute },
		doc: "Where a request without a `to` field goes: a route name or a target (not `mcp`, which only the agent shows a question in)."},
	{env: "ASKUSER_TARGETS", yaml: "targets", str: func(c *Config) *string { return &c.Targets }, norm: strings.ToLower,
		doc: "What a request's `to`, and its own `escalate` steps, may name: `any`, a route or a direct target (`telegram:<chat id>`, `web`…), or `routes-only`, a route only (and `mcp`, the agent's own client, which reaches no chat: that one is never refused); a request without `to` goes to `ASKUSER_DEFAULT_TO` either way. A route's own escalation ladder is the operator's and may name any target. A refused request gets an error result naming this setting. `any` keeps the first run working: set `routes-only` when an agent may read untrusted text."},
	{env: "ASKUSER_MAX_PENDING_PER_AGENT", yaml: "maxPendingPerAgent", num: func(c *Config) *int { return &c.MaxPendingPerAgent }, def: "0 (no cap)",
		doc: "The most questions one agent may have pending at once (its requests' `agent` field; requests without one count together); one more is refused with an error result naming this setting. Keeps a runaway agent from flooding people and Redis. 0 to 1000000."},
	{env: "ASKUSER_STANDING_MAX", yaml: "standingMax", dur: func(c *Config) *time.Duration { return &c.StandingMax },
		doc: "The longest a person may keep an answer standing (ask-user.md §9, a request's `remember.offer`); a request offering longer is refused naming `remember.offer` and this setting. `1m` to `720h`."},
	{env: "ASKUSER_RESULT_RETENTION", yaml: "resultRetention", dur: func(c *Config) *time.Duration { return &c.Retention },
		doc: "How long a result is kept after its question ended; `1m` to `720h`."},
	{env: "ASKUSER_CLAIM_IDLE", yaml: "claimIdle", dur: func(c *Config) *time.Duration { return &c.ClaimIdle },
		doc: "How long a request another replica took may stay unacknowledged before this one takes it over, and likewise a reminder or escalation step another replica began to fire; `1s` to `1h`."},
	{env: "ASKUSER_STOP_GRACE", yaml: "stopGrace", dur: func(c *Config) *time.Duration { return &c.StopGrace },
		doc: "How long a graceful stop (SIGTERM) may take: no new prompt part starts, and what is still in hand after this is left to another replica; `1s` to `10m`. Keep it below the orchestrator's kill timeout (compose: `stop_grace_period`)."},
	{env: "ASKUSER_LOCALE", yaml: "locale", str: func(c *Config) *string { return &c.Locale },
		doc: "Language of the bridge's own words (instructions, buttons, status lines, notices) when neither the request nor its route names one: a BCP 47 tag. Shipped: `en`, `th`; another tag falls back to its language's catalog, then to `en`. Replies are understood in every shipped language whatever this is."},
	{env: "ASKUSER_LOG_LEVEL", yaml: "log.level", str: func(c *Config) *string { return &c.LogLevel }, norm: strings.ToLower,
		doc: "`debug`, `info`, `warn` or `error`."},
	{env: "ASKUSER_LOG_FORMAT", yaml: "log.format", str: func(c *Config) *string { return &c.LogFormat }, norm: strings.ToLower,
		def: "`text` when stderr is a terminal, `json` otherwise",
		doc: "How log lines are written: `json`, one JSON object a line, or `text`, `key=value` pairs."},
	{env: "ASKUSER_PUBLIC_URL", yaml: "publicURL", str: func(c *Config) *string { return &c.PublicURL }, def: "unset (no answer links)",
		norm: func(s string) string { return strings.TrimRight(s, "/") },
		doc:  "The address people reach this bridge's web server at, `https://ask.example.com` (`http://` only on a loopback host): the root of answer links (`<url>/a/<token>`, ask-user.md §10), which email carries and a route with `links: true` adds to DMs. Its origin is also one of the page's origins. Needs `ASKUSER_LINK_SECRET`."},
	{env: "ASKUSER_LINK_SECRET", yaml: "linkSecret", secret: true, str: func(c *Config) *string { return &c.LinkSecret }, def: "unset (no answer links)",
		doc: "Secret that signs answer links, at least 32 bytes (`openssl rand -hex 32`), the same on every replica. Changing it invalidates every link sent. Required with `ASKUSER_PUBLIC_URL`."},
	{env: "ASKUSER_CALLBACK_SECRET", yaml: "callback.secret", secret: true, str: func(c *Config) *string { return &c.Callback.Secret }, def: "unset (off)",
		doc: "Secret that signs result callbacks (Standard Webhooks; [docs/callbacks.md](docs/callbacks.md)): at least 16 characters, or `whsec_` and the base64 of at least 16 bytes, which are then the key (the form the `standardwebhooks` libraries use). Unset: a request with a `callback` is refused with an error naming this setting."},
	{env: "ASKUSER_CALLBACK_HOSTS", yaml: "callback.hosts", str: func(c *Config) *string { return &c.Callback.Hosts }, def: "unset (none)",
		doc: "Comma-separated hosts a request's `callback` may name, over https: `agents.example.com`, `*.example.com` (any name under it, not itself) or an IP address. Any other is refused with an error naming `callback`."},
	{env: "ASKUSER_CALLBACK_HTTP_HOSTS", yaml: "callback.httpHosts", str: func(c *Config) *string { return &c.Callback.HTTPHosts }, def: "unset (none)",
		doc: "Hosts, as above, that may also be called back over plain `http`; they are allowed like those of `ASKUSER_CALLBACK_HOSTS`."},
	{env: "ASKUSER_CALLBACK_PRIVATE_HOSTS", yaml: "callback.privateHosts", str: func(c *Config) *string { return &c.Callback.PrivateHosts }, def: "unset (none)",
		doc: "Hosts, as above, that may resolve to loopback, private (RFC 1918, `fc00::/7`), link-local or other non-public addresses; they are allowed like those of `ASKUSER_CALLBACK_HOSTS`. Any other host's address is checked as it is dialled and refused if it is one of those."},

	// A platform's token comes first in its section: it turns the platform on.
	{env: "ASKUSER_TELEGRAM_TOKEN", yaml: "telegram.token", secret: true, str: func(c *Config) *string { return &c.Telegram.Token }, def: "unset (off)",
		doc: "Bot token from @BotFather (`<bot id>:<secret>`); turns Telegram on."},
	{env: "ASKUSER_TELEGRAM_API_URL", yaml: "telegram.apiURL", str: func(c *Config) *string { return &c.Telegram.APIURL },
		norm: func(s string) string { return strings.TrimRight(s, "/") },
		doc:  "Bot API server (a local Bot API server, or a test fake); a trailing `/` is dropped."},
	{env: "ASKUSER_TELEGRAM_WEBHOOK_URL", yaml: "telegram.webhookURL", str: func(c *Config) *string { return &c.Telegram.WebhookURL }, def: "unset (long polling)",
		doc: "`https://` URL Telegram posts updates to (webhook mode; ports 443, 80, 88 or 8443 with the official Bot API). Needs the secret below."},
	{env: "ASKUSER_TELEGRAM_WEBHOOK_SECRET", yaml: "telegram.webhookSecret", secret: true, str: func(c *Config) *string { return &c.Telegram.WebhookSecret },
		doc: "Secret Telegram sends with each webhook call: 16–256 characters of `A-Z a-z 0-9 _ -` (make one with `openssl rand -hex 32`)."},
	{env: "ASKUSER_TELEGRAM_CHATS", yaml: "telegram.chats", str: func(c *Config) *string { return &c.Chats.Telegram }, def: "unset (any chat)",
		doc: "Comma-separated chat ids a request may name as a direct target (`telegram:<chat id>`); others are refused. Routes, with their escalation ladders, are not bound by it."},
	{env: "ASKUSER_DISCORD_TOKEN", yaml: "discord.token", secret: true, str: func(c *Config) *string { return &c.Discord.Token }, def: "unset (off)",
		// discordgo wants "Bot <token>"; the adapter adds the prefix.
		norm: func(s string) string { return strings.TrimSpace(strings.TrimPrefix(s, "Bot ")) },
		doc:  `Discord bot token (a leading "Bot " is dropped); turns Discord on.`},
	{env: "ASKUSER_DISCORD_API_URL", yaml: "discord.apiURL", str: func(c *Config) *string { return &c.Discord.APIURL },
		doc: "Discord base URL; the adapter appends the REST paths."},
	{env: "ASKUSER_DISCORD_CHANNELS", yaml: "discord.channels", str: func(c *Config) *string { return &c.Chats.Discord }, def: "unset (any channel)",
		doc: "Comma-separated channel ids (`@<user id>` for a DM) a request may name as a direct target (`discord:<channel id>`); others are refused. Routes, with their escalation ladders, are not bound by it."},
	{env: "ASKUSER_SLACK_BOT_TOKEN", yaml: "slack.botToken", secret: true, str: func(c *Config) *string { return &c.Slack.BotToken }, def: "unset (off)",
		doc: "Slack bot token (`xoxb-…`); turns Slack on."},
	{env: "ASKUSER_SLACK_APP_TOKEN", yaml: "slack.appToken", secret: true, str: func(c *Config) *string { return &c.Slack.AppToken },
		doc: "App-level token (`xapp-…`, scope `connections:write`): socket mode."},
	{env: "ASKUSER_SLACK_SIGNING_SECRET", yaml: "slack.signingSecret", secret: true, str: func(c *Config) *string { return &c.Slack.SigningSecret },
		doc: "Signing secret for HTTP mode (Events API and interactivity endpoints), at least 16 characters. Required without an app token."},
	{env: "ASKUSER_SLACK_API_URL", yaml: "slack.apiURL", str: func(c *Config) *string { return &c.Slack.APIURL },
		norm: func(s string) string { return strings.TrimSuffix(s, "/") + "/" },
		doc:  "Slack Web API base; a missing trailing `/` is added."},
	{env: "ASKUSER_SLACK_CHANNELS", yaml: "slack.channels", str: func(c *Config) *string { return &c.Chats.Slack }, def: "unset (any channel)",
		doc: "Comma-separated channel ids (`C…`, `G…`, `D…`; `U…` or `W…` for a DM) a request may name as a direct target (`slack:<channel id>`); others are refused. Routes, with their escalation ladders, are not bound by it."},
	{env: "ASKUSER_MATRIX_TOKEN", yaml: "matrix.token", secret: true, str: func(c *Config) *string { return &c.Matrix.Token }, def: "unset (off)",
		doc: "The Matrix bot's access token; turns Matrix on (target `matrix:!room:server`). Needs `ASKUSER_MATRIX_HOMESERVER` and `ASKUSER_MATRIX_USER`."},
	{env: "ASKUSER_MATRIX_HOMESERVER", yaml: "matrix.homeserver", str: func(c *Config) *string { return &c.Matrix.Homeserver },
		norm: func(s string) string { return strings.TrimRight(s, "/") },
		doc:  "The homeserver's client API URL, `https://matrix.example.org`."},
	{env: "ASKUSER_MATRIX_USER", yaml: "matrix.user", str: func(c *Config) *string { return &c.Matrix.User },
		doc: "The bot's user id, `@askbridge:example.org`: the account the token belongs to."},
	{env: "ASKUSER_MATRIX_AUTOJOIN", yaml: "matrix.autoJoin", str: func(c *Config) *string { return &c.Matrix.AutoJoin }, def: "unset (none)",
		doc: "Which invitations the bot accepts: `none`, or comma-separated server names (`example.org`) whose rooms it joins when invited. Otherwise an operator joins it to each room."},
	{env: "ASKUSER_MATRIX_ROOMS", yaml: "matrix.rooms", str: func(c *Config) *string { return &c.Chats.Matrix }, def: "unset (any room)",
		doc: "Comma-separated room ids (`!abc:example.org`) a request may name as a direct target (`matrix:<room id>`); others are refused. Routes, with their escalation ladders, are not bound by it."},
	{env: "ASKUSER_SMTP_URL", yaml: "email.smtpURL", secret: true, str: func(c *Config) *string { return &c.Email.SMTPURL }, def: "unset (off)",
		doc: "The SMTP server email is sent through: `smtp://host[:port]` (port 587; STARTTLS required) or `smtps://host[:port]` (TLS, port 465), optionally with `user:password@`. Turns email on (target `email:<address>`); needs `ASKUSER_PUBLIC_URL` and `ASKUSER_LINK_SECRET`."},
	{env: "ASKUSER_SMTP_USER", yaml: "email.user", str: func(c *Config) *string { return &c.Email.User }, def: "unset (no authentication, or the URL's)",
		doc: "User name for SMTP authentication (PLAIN, over TLS only); overrides the URL's."},
	{env: "ASKUSER_SMTP_PASSWORD", yaml: "email.password", secret: true, str: func(c *Config) *string { return &c.Email.Password },
		doc: "Password for `ASKUSER_SMTP_USER`."},
	{env: "ASKUSER_SMTP_FROM", yaml: "email.from", str: func(c *Config) *string { return &c.Email.From },
		doc: "The sender of every email: `ask@example.com` or `Ask Bridge <ask@example.com>`. Its domain's SPF and DKIM are the SMTP relay's to get right."},
	{env: "ASKUSER_SMTP_CA_FILE", yaml: "email.caFile", str: func(c *Config) *string { return &c.Email.CAFile }, def: "unset (the system's roots)",
		doc: "PEM file of certificates to trust for the SMTP server besides the system's (a relay with a private CA)."},
	{env: "ASKUSER_EMAIL_ADDRESSES", yaml: "email.addresses", str: func(c *Config) *string { return &c.Chats.Email }, def: "unset (any address)",
		doc: "Comma-separated addresses, or `@<domain>` for every address of a domain, a request may name as a direct target (`email:<address>`); others are refused. Routes, with their escalation ladders, are not bound by it. Set it (or `ASKUSER_TARGETS=routes-only`) when an agent may read untrusted text: otherwise it may mail anyone."},
}

// set puts value v into c.
func (s setting) set(c *Config, v string) error {
	if s.norm != nil {
		v = s.norm(v)
	}
	if s.str != nil {
		*s.str(c) = v
		return nil
	}
	if s.num != nil {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a whole number of at least 1", v)
		}
		*s.num(c) = n
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"24h\", \"90m\" or \"30s\"", v)
	}
	*s.dur(c) = d
	return nil
}

// settingAt is the row with YAML key key, or nil.
func settingAt(key string) *setting {
	for i := range table {
		if table[i].yaml == key && key != "" {
			return &table[i]
		}
	}
	return nil
}

// platform is a platform's section of the configuration.
type platform struct {
	name, title string
	// chats is the YAML key, in the section, of the chats a request may
	// name as a direct target (Config.Chats), and chat what one is called.
	chats, chat string
	on          func(*Config) bool
	add         func(*Config) // turns the platform on with its defaults
	check       func(*Config, *settings.Problems)
}

var platforms = []platform{
	{"telegram", "Telegram", "chats", "chat", func(c *Config) bool { return c.Telegram != nil },
		func(c *Config) { c.Telegram = &telegram.Config{APIURL: telegram.DefaultAPIURL} },
		func(c *Config, p *settings.Problems) { c.Telegram.Check(p) }},
	{"discord", "Discord", "channels", "channel", func(c *Config) bool { return c.Discord != nil },
		func(c *Config) { c.Discord = &discord.Config{APIURL: discord.DefaultAPIURL} },
		func(c *Config, p *settings.Problems) { c.Discord.Check(p) }},
	{"slack", "Slack", "channels", "channel", func(c *Config) bool { return c.Slack != nil },
		func(c *Config) { c.Slack = &slack.Config{APIURL: slack.DefaultAPIURL} },
		func(c *Config, p *settings.Problems) { c.Slack.Check(p) }},
	{"matrix", "Matrix", "rooms", "room", func(c *Config) bool { return c.Matrix != nil },
		func(c *Config) { c.Matrix = &matrix.Config{} },
		func(c *Config, p *settings.Problems) { c.Matrix.Check(p) }},
	{"email", "Email", "addresses", "address", func(c *Config) bool { return c.Email != nil },
		func(c *Config) { c.Email = &email.Config{} },
		func(c *Config, p *settings.Problems) { c.Email.Check(p) }},
}

// platformNamed is the platform called name, or nil.
func platformNamed(name string) *platform {
	for i := range platforms {
		if platforms[i].name == name {
			return &platforms[i]
		}
	}
	return nil
}

// platformOf is the platform whose section holds s, or nil.
func (s setting) platformOf() *platform {
	section, _, _ := strings.Cut(s.yaml, ".")
	return platformNamed(section)
}

// token is the variable that turns the platform on: its section's first.
func (ps platform) token() string {
	for _, s := range table {
		if p := s.platformOf(); p != nil && p.name == ps.name {
			return s.env
		}
	}
	return ""
}
