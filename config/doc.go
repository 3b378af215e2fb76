// Package config loads, checks and resolves the bridge's configuration.
//
// [Load] starts from the defaults, applies the YAML file named by
// ASKUSER_CONFIG (when set), then the environment variables, which override
// the file, and validates the result before anything connects: every
// problem is reported at once in a [*ValidationError], each naming the key
// it is about — the environment variable, its _FILE variant, or the YAML
// path (`routes.ops.to: unknown platform "irc"`). cmd/bridge is its only
// caller; the engine then calls [Config.Resolve] for each request's `to`.
//
// A variable named ASKUSER_… (in any case) that is no setting, nor a
// secret's _FILE form, is an error naming the setting whose name is
// closest (an edit distance, github.com/agnivade/levenshtein), and so is
// an unknown key of the file: a misspelt setting is never silently left
// out.
//
// An empty variable counts as unset. A secret's variable X may be given as
// X_FILE instead, the path of a file holding the value (surrounding
// whitespace trimmed, for Docker and Kubernetes secrets); setting both is an
// error. A platform is on when its token is set and off otherwise (its
// section is nil); setting any other variable of a platform that is off is
// an error naming that variable. Secrets never appear in messages, and
// formatting a [Config] with fmt or logging it with slog shows them as
// [redacted].
//
// Each setting is one row of the table in table.go: its variable, its YAML
// key, whether it is a secret, and where it goes. A platform's section is
// that platform's own Config (telegram.Config and so on), which holds its
// rules (Check) and defaults; config only loads it. The one exception is
// the section's list of chats a request may name (telegram.chats and so
// on), which is config's policy and lives in [Config.Chats]. The list below and the
// table in README.md are made from the table (go test ./config -run TestDocs
// -update), and a test checks config.example.yaml against it.
//
// # Environment variables
//
//	ASKUSER_CONFIG                   Path of an optional YAML file (see config.example.yaml).
//	                                 Unknown keys (with the known key closest to each), keys
//	                                 given twice and values of the wrong kind are errors naming
//	                                 the key and line. Environment variables override the file.
//	                                 Default: unset. Environment only.
//	ASKUSER_REDIS_URL*               Shared Redis: redis://, rediss:// (TLS), redis-sentinel://
//	                                 or redis-cluster://, with a host. Unset: the bridge starts
//	                                 an embedded Redis. Default: unset. YAML redis.url.
//	ASKUSER_EMBEDDED_REDIS_ADDR      Where the embedded Redis listens, a loopback host:port (it
//	                                 has no password). An address another process already
//	                                 listens on is an error: a second bridge on the machine
//	                                 needs an address and an ASKUSER_DATA_DIR of its own, or
//	                                 ASKUSER_REDIS_URL naming the first one's Redis to share
//	                                 it. Used only when ASKUSER_REDIS_URL is unset. Default:
//	                                 127.0.0.1:6380. YAML redis.embeddedAddr.
//	ASKUSER_DATA_DIR                 Where the embedded Redis keeps its append-only file when a
//	                                 redis-server binary is on the PATH (~/.cache/askbridge on
//	                                 Linux); one bridge per directory. Without redis-server the
//	                                 embedded Redis keeps everything in memory and loses it on
//	                                 restart. Used only when ASKUSER_REDIS_URL is unset.
//	                                 Default: <user cache dir>/askbridge. YAML redis.dataDir.
//	ASKUSER_REDIS_PREFIX             Prefix of every Redis key. No braces, spaces or control
//	                                 characters; at most 64 bytes. Default: askuser:. YAML
//	                                 redis.prefix.
//	ASKUSER_HTTP_ADDR                host:port of the web page, its API and /healthz, and of
//	                                 /readyz and /metrics (behind the token when one is set)
//	                                 unless ASKUSER_METRICS_ADDR moves them. Default:
//	                                 127.0.0.1:8080. YAML http.addr.
//	ASKUSER_HTTP_TOKEN*              Token the web page and API require (at least 16
//	                                 characters). Required when ASKUSER_HTTP_ADDR listens
//	                                 beyond loopback. Open the page as
//	                                 http://host:port/#token=<token>. Without it the page
//	                                 answers only to loopback host names (localhost, 127.0.0.1,
//	                                 [::1]), and refuses (403) a request a reverse proxy
//	                                 forwarded (Forwarded, X-Forwarded-For, X-Real-IP or Via
//	                                 header): a proxy needs the token. Default: unset. YAML
//	                                 http.token.
//	ASKUSER_HTTP_ORIGINS             Other origins the page is opened at, comma-separated
//	                                 scheme://host[:port] (a reverse proxy's
//	                                 https://ask.example.com, a published port). Answers from a
//	                                 browser at any other origin than these and
//	                                 ASKUSER_HTTP_ADDR (and their loopback aliases) are
//	                                 refused. An origin beyond loopback needs the token.
//	                                 Default: unset. YAML http.origins.
//	ASKUSER_MAX_EVENT_STREAMS        How many live-update streams (one per open page) this
//	                                 replica serves at once; more get 503 with Retry-After and
//	                                 the page retries. 1 to 10000. Default: 100. YAML
//	                                 http.maxEventStreams.
//	ASKUSER_MCP_MAX_CALLS            How many ask_user calls may wait at once on this replica's
//	                                 /mcp (and on one askbridge mcp, which reads this variable
//	                                 too); one more is refused at once: 503 with Retry-After
//	                                 over HTTP, a tool error naming this setting over stdio.
//	                                 Waiting calls share one read of the events stream and a
//	                                 small Redis pool of their own, never the engine's. 1 to
//	                                 10000. Default: 64. YAML http.mcpMaxCalls.
//	ASKUSER_MCP_MAX_WAIT             How long one ask_user call (on /mcp, or on askbridge mcp,
//	                                 which reads this variable too) waits before it returns
//	                                 {"status":"pending","id":…}; the model then calls
//	                                 wait_for_answer, and the question stays open. Keep it
//	                                 under the shortest request timeout of your clients (60 s
//	                                 on the TypeScript SDK's defaults); 1s to 1h. Default: 50s.
//	                                 YAML http.mcpMaxWait.
//	ASKUSER_MCP_ELICIT               on: a client that declares it can show forms (MCP
//	                                 elicitation) also gets each ask_user question as a form,
//	                                 besides the chat; the first answer anywhere wins. off:
//	                                 never (for clients that declare forms but never show
//	                                 them); to: "mcp" is then refused. Read by askbridge mcp
//	                                 too. Default: on. YAML http.mcpElicit.
//	ASKUSER_METRICS_ADDR             host:port of a listener of its own for /metrics, /readyz
//	                                 and /healthz, without authentication: bind it where only
//	                                 monitoring reaches. Set, /metrics and /readyz leave
//	                                 ASKUSER_HTTP_ADDR. Default: unset (on ASKUSER_HTTP_ADDR).
//	                                 YAML http.metricsAddr.
//	ASKUSER_PPROF_ADDR               Loopback host:port on which to serve Go's profiler
//	                                 (/debug/pprof/) for operators; it has no authentication.
//	                                 Default: unset (off). YAML http.pprofAddr.
//	ASKUSER_REPLICA                  This replica's name among those sharing one Redis:
//	                                 letters, digits, _, . and -. Default: <hostname>-<pid>.
//	                                 Environment only.
//	ASKUSER_DEFAULT_TO               Where a request without a to field goes: a route name or a
//	                                 target (not mcp, which only the agent shows a question
//	                                 in). Default: web. YAML defaultRoute.
//	ASKUSER_TARGETS                  What a request's to, and its own escalate steps, may name:
//	                                 any, a route or a direct target (telegram:<chat id>,
//	                                 web…), or routes-only, a route only (and mcp, the
//	                                 agent's own client, which reaches no chat: that one is
//	                                 never refused); a request without to goes to
//	                                 ASKUSER_DEFAULT_TO either way. A route's own escalation
//	                                 ladder is the operator's and may name any target. A
//	                                 refused request gets an error result naming this setting.
//	                                 any keeps the first run working: set routes-only when an
//	                                 agent may read untrusted text. Default: any. YAML targets.
//	ASKUSER_MAX_PENDING_PER_AGENT    The most questions one agent may have pending at once (its
//	                                 requests' agent field; requests without one count
//	                                 together); one more is refused with an error result naming
//	                                 this setting. Keeps a runaway agent from flooding people
//	                                 and Redis. 0 to 1000000. Default: 0 (no cap). YAML
//	                                 maxPendingPerAgent.
//	ASKUSER_STANDING_MAX             The longest a person may keep an answer standing
//	                                 (ask-user.md §9, a request's remember.offer); a request
//	                                 offering longer is refused naming remember.offer and this
//	                                 setting. 1m to 720h. Default: 168h. YAML standingMax.
//	ASKUSER_RESULT_RETENTION         How long a result is kept after its question ended; 1m to
//	                                 720h. Default: 24h. YAML resultRetention.
//	ASKUSER_CLAIM_IDLE               How long a request another replica took may stay
//	                                 unacknowledged before this one takes it over, and likewise
//	                                 a reminder or escalation step another replica began to
//	                                 fire; 1s to 1h. Default: 30s. YAML claimIdle.
//	ASKUSER_STOP_GRACE               How long a graceful stop (SIGTERM) may take: no new prompt
//	                                 part starts, and what is still in hand after this is left
//	                                 to another replica; 1s to 10m. Keep it below the
//	                                 orchestrator's kill timeout (compose: stop_grace_period).
//	                                 Default: 20s. YAML stopGrace.
//	ASKUSER_LOCALE                   Language of the bridge's own words (instructions, buttons,
//	                                 status lines, notices) when neither the request nor its
//	                                 route names one: a BCP 47 tag. Shipped: en, th; another
//	                                 tag falls back to its language's catalog, then to en.
//	                                 Replies are understood in every shipped language whatever
//	                                 this is. Default: en. YAML locale.
//	ASKUSER_LOG_LEVEL                debug, info, warn or error. Default: info. YAML log.level.
//	ASKUSER_LOG_FORMAT               How log lines are written: json, one JSON object a line,
//	                                 or text, key=value pairs. Default: text when stderr is a
//	                                 terminal, json otherwise. YAML log.format.
//	ASKUSER_PUBLIC_URL               The address people reach this bridge's web server at,
//	                                 https://ask.example.com (http:// only on a loopback host):
//	                                 the root of answer links (<url>/a/<token>, ask-user.md
//	                                 §10), which email carries and a route with links: true
//	                                 adds to DMs. Its origin is also one of the page's origins.
//	                                 Needs ASKUSER_LINK_SECRET. Default: unset (no answer
//	                                 links). YAML publicURL.
//	ASKUSER_LINK_SECRET*             Secret that signs answer links, at least 32 bytes (openssl
//	                                 rand -hex 32), the same on every replica. Changing it
//	                                 invalidates every link sent. Required with
//	                                 ASKUSER_PUBLIC_URL. Default: unset (no answer links). YAML
//	                                 linkSecret.
//	ASKUSER_CALLBACK_SECRET*         Secret that signs result callbacks (Standard Webhooks;
//	                                 [docs/callbacks.md](docs/callbacks.md)): at least 16
//	                                 characters, or whsec_ and the base64 of at least 16 bytes,
//	                                 which are then the key (the form the standardwebhooks
//	                                 libraries use). Unset: a request with a callback is
//	                                 refused with an error naming this setting. Default: unset
//	                                 (off). YAML callback.secret.
//	ASKUSER_CALLBACK_HOSTS           Comma-separated hosts a request's callback may name, over
//	                                 https: agents.example.com, *.example.com (any name under
//	                                 it, not itself) or an IP address. Any other is refused
//	                                 with an error naming callback. Default: unset (none). YAML
//	                                 callback.hosts.
//	ASKUSER_CALLBACK_HTTP_HOSTS      Hosts, as above, that may also be called back over plain
//	                                 http; they are allowed like those of
//	                                 ASKUSER_CALLBACK_HOSTS. Default: unset (none). YAML
//	                                 callback.httpHosts.
//	ASKUSER_CALLBACK_PRIVATE_HOSTS   Hosts, as above, that may resolve to loopback, private
//	                                 (RFC 1918, fc00::/7), link-local or other non-public
//	                                 addresses; they are allowed like those of
//	                                 ASKUSER_CALLBACK_HOSTS. Any other host's address is
//	                                 checked as it is dialled and refused if it is one of
//	                                 those. Default: unset (none). YAML callback.privateHosts.
//	ASKUSER_TELEGRAM_TOKEN*          Bot token from @BotFather (<bot id>:<secret>); turns
//	                                 Telegram on. Default: unset (off). YAML telegram.token.
//	ASKUSER_TELEGRAM_API_URL         Bot API server (a local Bot API server, or a test fake); a
//	                                 trailing / is dropped. Default: https://api.telegram.org.
//	                                 YAML telegram.apiURL.
//	ASKUSER_TELEGRAM_WEBHOOK_URL     https:// URL Telegram posts updates to (webhook mode;
//	                                 ports 443, 80, 88 or 8443 with the official Bot API).
//	                                 Needs the secret below. Default: unset (long polling).
//	                                 YAML telegram.webhookURL.
//	ASKUSER_TELEGRAM_WEBHOOK_SECRET* Secret Telegram sends with each webhook call: 16–256
//	                                 characters of A-Z a-z 0-9 _ - (make one with openssl rand
//	                                 -hex 32). Default: unset. YAML telegram.webhookSecret.
//	ASKUSER_TELEGRAM_CHATS           Comma-separated chat ids a request may name as a direct
//	                                 target (telegram:<chat id>); others are refused. Routes,
//	                                 with their escalation ladders, are not bound by it.
//	                                 Default: unset (any chat). YAML telegram.chats.
//	ASKUSER_DISCORD_TOKEN*           Discord bot token (a leading "Bot " is dropped); turns
//	                                 Discord on. Default: unset (off). YAML discord.token.
//	ASKUSER_DISCORD_API_URL          Discord base URL; the adapter appends the REST paths.
//	                                 Default: https://discord.com/. YAML discord.apiURL.
//	ASKUSER_DISCORD_CHANNELS         Comma-separated channel ids (@<user id> for a DM) a
//	                                 request may name as a direct target (discord:<channel
//	                                 id>); others are refused. Routes, with their escalation
//	                                 ladders, are not bound by it. Default: unset (any
//	                                 channel). YAML discord.channels.
//	ASKUSER_SLACK_BOT_TOKEN*         Slack bot token (xoxb-…); turns Slack on. Default: unset
//	                                 (off). YAML slack.botToken.
//	ASKUSER_SLACK_APP_TOKEN*         App-level token (xapp-…, scope connections:write):
//	                                 socket mode. Default: unset. YAML slack.appToken.
//	ASKUSER_SLACK_SIGNING_SECRET*    Signing secret for HTTP mode (Events API and interactivity
//	                                 endpoints), at least 16 characters. Required without an
//	                                 app token. Default: unset. YAML slack.signingSecret.
//	ASKUSER_SLACK_API_URL            Slack Web API base; a missing trailing / is added.
//	                                 Default: https://slack.com/api/. YAML slack.apiURL.
//	ASKUSER_SLACK_CHANNELS           Comma-separated channel ids (C…, G…, D…; U… or
//	                                 W… for a DM) a request may name as a direct target
//	                                 (slack:<channel id>); others are refused. Routes, with
//	                                 their escalation ladders, are not bound by it. Default:
//	                                 unset (any channel). YAML slack.channels.
//	ASKUSER_MATRIX_TOKEN*            The Matrix bot's access token; turns Matrix on (target
//	                                 matrix:!room:server). Needs ASKUSER_MATRIX_HOMESERVER and
//	                                 ASKUSER_MATRIX_USER. Default: unset (off). YAML
//	                                 matrix.token.
//	ASKUSER_MATRIX_HOMESERVER        The homeserver's client API URL,
//	                                 https://matrix.example.org. Default: unset. YAML
//	                                 matrix.homeserver.
//	ASKUSER_MATRIX_USER              The bot's user id, @askbridge:example.org: the account the
//	                                 token belongs to. Default: unset. YAML matrix.user.
//	ASKUSER_MATRIX_AUTOJOIN          Which invitations the bot accepts: none, or
//	                                 comma-separated server names (example.org) whose rooms it
//	                                 joins when invited. Otherwise an operator joins it to each
//	                                 room. Default: unset (none). YAML matrix.autoJoin.
//	ASKUSER_MATRIX_ROOMS             Comma-separated room ids (!abc:example.org) a request may
//	                                 name as a direct target (matrix:<room id>); others are
//	                                 refused. Routes, with their escalation ladders, are not
//	                                 bound by it. Default: unset (any room). YAML matrix.rooms.
//	ASKUSER_SMTP_URL*                The SMTP server email is sent through: smtp://host[:port]
//	                                 (port 587; STARTTLS required) or smtps://host[:port] (TLS,
//	                                 port 465), optionally with user:password@. Turns email on
//	                                 (target email:<address>); needs ASKUSER_PUBLIC_URL and
//	                                 ASKUSER_LINK_SECRET. Default: unset (off). YAML
//	                                 email.smtpURL.
//	ASKUSER_SMTP_USER                User name for SMTP authentication (PLAIN, over TLS only);
//	                                 overrides the URL's. Default: unset (no authentication, or
//	                                 the URL's). YAML email.user.
//	ASKUSER_SMTP_PASSWORD*           Password for ASKUSER_SMTP_USER. Default: unset. YAML
//	                                 email.password.
//	ASKUSER_SMTP_FROM                The sender of every email: ask@example.com or Ask Bridge
//	                                 <ask@example.com>. Its domain's SPF and DKIM are the SMTP
//	                                 relay's to get right. Default: unset. YAML email.from.
//	ASKUSER_SMTP_CA_FILE             PEM file of certificates to trust for the SMTP server
//	                                 besides the system's (a relay with a private CA). Default:
//	                                 unset (the system's roots). YAML email.caFile.
//	ASKUSER_EMAIL_ADDRESSES          Comma-separated addresses, or @<domain> for every address
//	                                 of a domain, a request may name as a direct target
//	                                 (email:<address>); others are refused. Routes, with their
//	                                 escalation ladders, are not bound by it. Set it (or
//	                                 ASKUSER_TARGETS=routes-only) when an agent may read
//	                                 untrusted text: otherwise it may mail anyone. Default:
//	                                 unset (any address). YAML email.addresses.
//
// A * marks a secret: it also has a _FILE variant (ASKUSER_TELEGRAM_TOKEN_FILE
// and so on).
//
// Routes exist only in the YAML file: `routes` maps a name to a target
// (`to`) and an optional list of who may answer there (`answerers`).
//
// # Targets and answerers
//
// A target ([ParseTarget]) is telegram:<chat id>, discord:<channel id>,
// discord:@<user id> (a DM), slack:<channel id> (C…, G…, D…),
// slack:<user id> (U…, W…: a DM), web, or mcp (the agent's own client,
// where the MCP server shows the question and the bridge posts nothing).
// An answerer ([ParseAnswerer]) is <platform>:<user id> with platform
// telegram, discord, slack, web or mcp. A target whose platform is off is
// refused, in a route at startup and in a request by [Config.Resolve].
// Only a request's to may name mcp: a route's to, the default route and
// an escalation step (a route's ladder, or a request's own step, which
// the engine refuses) are shown by the bridge, which cannot show a
// question in the agent's client.
//
// # What a request may name
//
// Routes and the default route are the operator's, and so are the steps
// of their escalation ladders ([Config.ResolveLadder]). A request that
// names a target itself (a direct target), in its to or in an escalate
// step of its own, is held to a policy that Resolve applies,
// so the engine holds none: ASKUSER_TARGETS=routes-only refuses every
// direct target but mcp (which reaches no chat), and a platform's list (ASKUSER_TELEGRAM_CHATS,
// ASKUSER_DISCORD_CHANNELS, ASKUSER_SLACK_CHANNELS; [Config.Chats]) refuses
// a chat it does not hold. The refusal ([ErrNotAllowed]) names the setting
// and becomes the request's error result.
package config
