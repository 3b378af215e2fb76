package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/telegram"
)

// withEnv adds the given variables to a base that turns every platform on.
func allOn(extra map[string]string) map[string]string {
	vars := map[string]string{
		"ASKUSER_TELEGRAM_TOKEN":  tgToken,
		"ASKUSER_DISCORD_TOKEN":   discordToken,
		"ASKUSER_SLACK_BOT_TOKEN": slackBot,
		"ASKUSER_SLACK_APP_TOKEN": slackApp,
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

func TestLoadValidation(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		yaml string
		want []string // nil: valid
	}{
		// Redis
		{name: "redis url schemes", vars: map[string]string{"ASKUSER_REDIS_URL": "rediss://u:p@redis.example.com:6380/0"}},
		{name: "redis sentinel url", vars: map[string]string{"ASKUSER_REDIS_URL": "redis-sentinel://s1:26379,s2:26379/mymaster"}},
		{name: "redis cluster url", vars: map[string]string{"ASKUSER_REDIS_URL": "redis-cluster://n1:7000?addr=n2:7000"}},
		{name: "redis url wrong scheme", vars: map[string]string{"ASKUSER_REDIS_URL": "http://redis:6379"},
			want: []string{`ASKUSER_REDIS_URL: scheme "http" is not one of redis, rediss, redis-sentinel, redis-cluster`}},
		{name: "redis url without host", vars: map[string]string{"ASKUSER_REDIS_URL": "redis:///0"},
			want: []string{`ASKUSER_REDIS_URL: has no host (expected redis://[user:password@]host:port[/db])`}},
		{name: "redis url unparseable", vars: map[string]string{"ASKUSER_REDIS_URL": "redis://:" + redisPass + "@redis:port/0"},
			want: []string{`ASKUSER_REDIS_URL: not a URL (invalid port ":port" after host)`}},
		{name: "redis url without scheme", vars: map[string]string{"ASKUSER_REDIS_URL": "redis.internal:6379"},
			want: []string{`ASKUSER_REDIS_URL: has no scheme: add redis:// in front (redis://host:port, rediss:// for TLS)`}},
		{name: "redis url without scheme, an ip address", vars: map[string]string{"ASKUSER_REDIS_URL": "127.0.0.1:6390"},
			want: []string{`ASKUSER_REDIS_URL: has no scheme: add redis:// in front (redis://host:port, rediss:// for TLS)`}},
		{name: "embedded addr not host:port", vars: map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": "6380"},
			want: []string{`ASKUSER_EMBEDDED_REDIS_ADDR: "6380" is not host:port`}},
		{name: "embedded addr beyond loopback", vars: map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": "0.0.0.0:6380"},
			want: []string{`ASKUSER_EMBEDDED_REDIS_ADDR: "0.0.0.0:6380" must be a loopback address (the embedded Redis has no password); use ASKUSER_REDIS_URL for a Redis others reach`}},
		{name: "pprof beyond loopback", vars: map[string]string{"ASKUSER_PPROF_ADDR": ":6060"},
			want: []string{`ASKUSER_PPROF_ADDR: ":6060" must be a loopback address (the profiler has no authentication)`}},
		{name: "pprof not host:port", vars: map[string]string{"ASKUSER_PPROF_ADDR": "6060"},
			want: []string{`ASKUSER_PPROF_ADDR: "6060" is not host:port`}},
		{name: "pprof on loopback", vars: map[string]string{"ASKUSER_PPROF_ADDR": "127.0.0.1:6060"}},
		// Callbacks
		{name: "callbacks on", vars: map[string]string{"ASKUSER_CALLBACK_SECRET": "callback-secret-0123", "ASKUSER_CALLBACK_HOSTS": "agents.example.com, *.hooks.example.com"}},
		{name: "callback secret in whsec form", vars: map[string]string{"ASKUSER_CALLBACK_SECRET": "whsec_MDEyMzQ1Njc4OWFiY2RlZg==", "ASKUSER_CALLBACK_HOSTS": "agents.example.com"}},
		{name: "callback hosts without a secret", vars: map[string]string{"ASKUSER_CALLBACK_HOSTS": "agents.example.com"},
			want: []string{"callback hosts are set but ASKUSER_CALLBACK_SECRET is not, so no callback is ever made: set it (or its _FILE), or remove the hosts"}},
		{name: "callback secret without hosts", vars: map[string]string{"ASKUSER_CALLBACK_SECRET": "callback-secret-0123"},
			want: []string{"ASKUSER_CALLBACK_SECRET is set but no host may be called back: list the agents' hosts in ASKUSER_CALLBACK_HOSTS"}},
		{name: "callback secret too short", vars: map[string]string{"ASKUSER_CALLBACK_SECRET": "short", "ASKUSER_CALLBACK_HOSTS": "agents.example.com"},
			want: []string{"ASKUSER_CALLBACK_SECRET: must be at least 16 characters (make one with: openssl rand -hex 32)"}},
		{name: "callback host pattern", vars: map[string]string{"ASKUSER_CALLBACK_SECRET": "callback-secret-0123", "ASKUSER_CALLBACK_HOSTS": "https://agents.example.com/hook"},
			want: []string{`ASKUSER_CALLBACK_HOSTS: "https://agents.example.com/hook" is not a host name, "*." and a domain, or an IP address`}},
		{name: "embedded addr unused with a redis url", vars: map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": "0.0.0.0:6380", "ASKUSER_REDIS_URL": "redis://r:6379"}},
		{name: "embedded addr on port 0", vars: map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": "localhost:0"}},
		{name: "prefix with braces", vars: map[string]string{"ASKUSER_REDIS_PREFIX": "{app}:"},
			want: []string{`ASKUSER_REDIS_PREFIX: "{app}:" must not contain braces (they would break the {<id>} hash tags Redis Cluster needs)`}},
		{name: "prefix with a space", vars: map[string]string{"ASKUSER_REDIS_PREFIX": "my app:"},
			want: []string{`ASKUSER_REDIS_PREFIX: "my app:" must not contain spaces or control characters`}},
		{name: "prefix too long", vars: map[string]string{"ASKUSER_REDIS_PREFIX": strings.Repeat("a", 65)},
			want: []string{`ASKUSER_REDIS_PREFIX: must be at most 64 bytes (got 65)`}},

		// HTTP
		{name: "http addr not host:port", vars: map[string]string{"ASKUSER_HTTP_ADDR": "abc"},
			want: []string{`ASKUSER_HTTP_ADDR: "abc" is not host:port`}},
		{name: "http addr bad port", vars: map[string]string{"ASKUSER_HTTP_ADDR": "127.0.0.1:80800"},
			want: []string{`ASKUSER_HTTP_ADDR: "127.0.0.1:80800" has an invalid port (want 0 to 65535)`}},
		{name: "http addr named port", vars: map[string]string{"ASKUSER_HTTP_ADDR": "127.0.0.1:http"},
			want: []string{`ASKUSER_HTTP_ADDR: "127.0.0.1:http" has an invalid port (want 0 to 65535)`}},
		{name: "http beyond loopback without token", vars: map[string]string{"ASKUSER_HTTP_ADDR": "0.0.0.0:8080"},
			want: []string{`ASKUSER_HTTP_TOKEN is required when ASKUSER_HTTP_ADDR listens beyond loopback`}},
		{name: "http on every interface without token", vars: map[string]string{"ASKUSER_HTTP_ADDR": ":8080"},
			want: []string{`ASKUSER_HTTP_TOKEN is required when ASKUSER_HTTP_ADDR listens beyond loopback`}},
		{name: "http on a host name without token", vars: map[string]string{"ASKUSER_HTTP_ADDR": "bridge.lan:8080"},
			want: []string{`ASKUSER_HTTP_TOKEN is required when ASKUSER_HTTP_ADDR listens beyond loopback`}},
		{name: "http beyond loopback with token", vars: map[string]string{"ASKUSER_HTTP_ADDR": ":8080", "ASKUSER_HTTP_TOKEN": httpToken}},
		{name: "http on localhost", vars: map[string]string{"ASKUSER_HTTP_ADDR": "localhost:8080"}},
		{name: "http on ipv6 loopback", vars: map[string]string{"ASKUSER_HTTP_ADDR": "[::1]:8080"}},
		{name: "http token too short", vars: map[string]string{"ASKUSER_HTTP_TOKEN": "short"},
			want: []string{`ASKUSER_HTTP_TOKEN: must be at least 16 characters`}},
		{name: "http token with a space", vars: map[string]string{"ASKUSER_HTTP_TOKEN": "two words and more"},
			want: []string{`ASKUSER_HTTP_TOKEN: must not contain spaces or control characters`}},
		{name: "http addr from the file", yaml: "http:\n  addr: 0.0.0.0:8080\n",
			want: []string{`ASKUSER_HTTP_TOKEN is required when http.addr listens beyond loopback`}},
		{name: "origins on loopback without token", vars: map[string]string{"ASKUSER_HTTP_ORIGINS": "http://localhost:8081, http://127.0.0.1:8081/"}},
		{name: "origins beyond loopback with token", vars: map[string]string{"ASKUSER_HTTP_ORIGINS": "https://ask.example.com", "ASKUSER_HTTP_TOKEN": httpToken}},
		{name: "origin beyond loopback without token", vars: map[string]string{"ASKUSER_HTTP_ORIGINS": "https://ask.example.com"},
			want: []string{`ASKUSER_HTTP_ORIGINS: "https://ask.example.com" is beyond loopback, which needs ASKUSER_HTTP_TOKEN: without a token the page answers only to loopback names`}},
		{name: "origin with a path", vars: map[string]string{"ASKUSER_HTTP_ORIGINS": "https://ask.example.com/page", "ASKUSER_HTTP_TOKEN": httpToken},
			want: []string{`ASKUSER_HTTP_ORIGINS: "https://ask.example.com/page" is not an origin: want scheme://host[:port], with no user, path or query`}},
		{name: "origin of another scheme", vars: map[string]string{"ASKUSER_HTTP_ORIGINS": "ftp://localhost"},
			want: []string{`ASKUSER_HTTP_ORIGINS: "ftp://localhost" is not an http:// or https:// origin`}},
		{name: "event streams zero", vars: map[string]string{"ASKUSER_MAX_EVENT_STREAMS": "0"},
			want: []string{`ASKUSER_MAX_EVENT_STREAMS: "0" is not a whole number of at least 1`}},
		{name: "event streams not a number", vars: map[string]string{"ASKUSER_MAX_EVENT_STREAMS": "many"},
			want: []string{`ASKUSER_MAX_EVENT_STREAMS: "many" is not a whole number of at least 1`}},
		{name: "event streams too many", yaml: "http:\n  maxEventStreams: 10001\n",
			want: []string{`http.maxEventStreams: 10001 is out of range: from 1 to 10000`}},
		{name: "mcp calls zero", vars: map[string]string{"ASKUSER_MCP_MAX_CALLS": "0"},
			want: []string{`ASKUSER_MCP_MAX_CALLS: "0" is not a whole number of at least 1`}},
		{name: "mcp calls too many", yaml: "http:\n  mcpMaxCalls: 10001\n",
			want: []string{`http.mcpMaxCalls: 10001 is out of range: from 1 to 10000`}},
		{name: "metrics addr", vars: map[string]string{"ASKUSER_METRICS_ADDR": "0.0.0.0:9090"}},
		{name: "metrics addr not host:port", vars: map[string]string{"ASKUSER_METRICS_ADDR": "9090"},
			want: []string{`ASKUSER_METRICS_ADDR: "9090" is not host:port`}},

		// Process
		{name: "replica with a slash", vars: map[string]string{"ASKUSER_REPLICA": "pod/1"},
			want: []string{`ASKUSER_REPLICA: "pod/1" must be 1 to 128 letters, digits, '_', '.' or '-', starting with a letter or digit`}},
		{name: "retention too short", vars: map[string]string{"ASKUSER_RESULT_RETENTION": "30s"},
			want: []string{`ASKUSER_RESULT_RETENTION: 30s is out of range: from 1m0s to 30d (720h0m0s)`}},
		{name: "retention too long", vars: map[string]string{"ASKUSER_RESULT_RETENTION": "721h"},
			want: []string{`ASKUSER_RESULT_RETENTION: 721h0m0s is out of range: from 1m0s to 30d (720h0m0s)`}},
		{name: "retention at the bounds", vars: map[string]string{"ASKUSER_RESULT_RETENTION": "720h"}},
		{name: "retention not a duration", vars: map[string]string{"ASKUSER_RESULT_RETENTION": "3d"},
			want: []string{`ASKUSER_RESULT_RETENTION: "3d" is not a duration such as "24h", "90m" or "30s"`}},
		{name: "claim idle too short", vars: map[string]string{"ASKUSER_CLAIM_IDLE": "500ms"},
			want: []string{`ASKUSER_CLAIM_IDLE: 500ms is out of range: from 1s to 1h0m0s`}},
		{name: "claim idle not a duration", vars: map[string]string{"ASKUSER_CLAIM_IDLE": "30"},
			want: []string{`ASKUSER_CLAIM_IDLE: "30" is not a duration such as "24h", "90m" or "30s"`}},
		{name: "log level", vars: map[string]string{"ASKUSER_LOG_LEVEL": "verbose"},
			want: []string{`ASKUSER_LOG_LEVEL: "verbose" is not one of debug, info, warn, error`}},
		{name: "log format json", vars: map[string]string{"ASKUSER_LOG_FORMAT": "json"}},
		{name: "log format text", vars: map[string]string{"ASKUSER_LOG_FORMAT": "text"}},
		{name: "log format unknown", vars: map[string]string{"ASKUSER_LOG_FORMAT": "logfmt"},
			want: []string{`ASKUSER_LOG_FORMAT: "logfmt" is not one of json, text`}},
		{name: "log format unknown in the file", yaml: "log:\n  format: xml\n",
			want: []string{`log.format: "xml" is not one of json, text`}},

		// Default route
		{name: "default route unknown", vars: map[string]string{"ASKUSER_DEFAULT_TO": "ops"},
			want: []string{`ASKUSER_DEFAULT_TO: unknown route "ops"`}},
		{name: "default route on a platform that is off", vars: map[string]string{"ASKUSER_DEFAULT_TO": "telegram:123"},
			want: []string{`ASKUSER_DEFAULT_TO: Telegram is off (no ASKUSER_TELEGRAM_TOKEN), so "telegram:123" cannot be used`}},
		{name: "default route bad target", vars: map[string]string{"ASKUSER_DEFAULT_TO": "slack:#general"},
			want: []string{`ASKUSER_DEFAULT_TO: "slack:#general": a Slack target is a channel id (C…, G…, D…) or a user id (U…, W…), not a name`}},
		{name: "default route names a route", vars: map[string]string{"ASKUSER_DEFAULT_TO": "desk"}, yaml: "routes:\n  desk:\n    to: web\n"},
		{name: "default route from the file", yaml: "defaultRoute: nowhere\n",
			want: []string{`defaultRoute: unknown route "nowhere"`}},

		// Routes
		{name: "route to an unknown platform", yaml: "routes:\n  ops:\n    to: irc:#ops\n",
			want: []string{`routes.ops.to: unknown platform "irc"`}},
		{name: "route to a platform that is off", yaml: "routes:\n  ops:\n    to: discord:123456789012345678\n",
			want: []string{`routes.ops.to: Discord is off (no ASKUSER_DISCORD_TOKEN), so "discord:123456789012345678" cannot be used`}},
		{name: "route to a platform that is on", vars: allOn(nil), yaml: "routes:\n  ops:\n    to: discord:@123456789012345678\n    answerers: [discord:123456789012345678]\n"},
		{name: "route without a target", yaml: "routes:\n  ops:\n    answerers: [web:alice]\n",
			want: []string{`routes.ops.to is required`}},
		{name: "route to another route", yaml: "routes:\n  a:\n    to: web\n  b:\n    to: a\n",
			want: []string{`routes.b.to: "a" is not a target (want telegram:<chat id>, discord:<channel id>, discord:@<user id>, slack:<channel or user id>, matrix:<room id>, email:<address>, web or mcp)`}},
		{name: "route with bad answerers", vars: allOn(nil),
			yaml: "routes:\n  ops:\n    to: telegram:-100123\n    answerers: [telegram:abc, irc:bob, alice, slack:C0123, discord:@1, telegram:-5, web:a b]\n",
			want: []string{
				`routes.ops.answerers[0]: "telegram:abc": "abc" is not a Telegram user id`,
				`routes.ops.answerers[1]: "irc:bob" must be <platform>:<user id> with platform telegram, discord, slack, matrix, email, web or mcp`,
				`routes.ops.answerers[2]: "alice" must be <platform>:<user id> with platform telegram, discord, slack, matrix, email, web or mcp`,
				`routes.ops.answerers[3]: "slack:C0123": "C0123" is not a Slack user id`,
				`routes.ops.answerers[4]: "discord:@1": "@1" is not a Discord user id`,
				`routes.ops.answerers[5]: "telegram:-5": "-5" is not a Telegram user id`,
				`routes.ops.answerers[6]: "web:a b": "a b" is not a web user id`,
			}},
		{name: "route named after a platform", yaml: "routes:\n  web:\n    to: web\n",
			want: []string{`routes.web: "web" is a platform name and cannot name a route`}},
		{name: "route named mcp", yaml: "routes:\n  mcp:\n    to: web\n",
			want: []string{`routes.mcp: "mcp" is a platform name and cannot name a route`}},
		{name: "route to mcp", yaml: "routes:\n  own:\n    to: mcp\n",
			want: []string{`routes.own.to: "mcp" is the agent's own client, which only the agent shows a question in: a request's to may name it, a route, the default route or an escalation step may not`}},
		{name: "route answered from the agent's client", yaml: "routes:\n  ops:\n    to: web\n    answerers: [mcp:alice, web:bob]\n"},
		{name: "route ladder to mcp", yaml: "routes:\n  ops:\n    to: web\n    escalate:\n      - afterSeconds: 600\n        to: [web, mcp]\n",
			want: []string{`routes.ops.escalate[0].to[1]: "mcp" is the agent's own client, which only the agent shows a question in: a request's to may name it, a route, the default route or an escalation step may not`}},
		{name: "default route mcp", vars: map[string]string{"ASKUSER_DEFAULT_TO": "mcp"},
			want: []string{`ASKUSER_DEFAULT_TO: "mcp" is the agent's own client, which only the agent shows a question in: a request's to may name it, a route, the default route or an escalation step may not`}},
		{name: "route with a bad name", yaml: "routes:\n  \"a:b\":\n    to: web\n",
			want: []string{`routes: route name "a:b" must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit`}},

		// API URLs
		{name: "api url with a wrong scheme", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_API_URL": "ftp://api.example.com"}),
			want: []string{`ASKUSER_TELEGRAM_API_URL: "ftp://api.example.com" must be an http:// or https:// URL`}},
		{name: "api url without host", vars: allOn(map[string]string{"ASKUSER_DISCORD_API_URL": "http:///api"}),
			want: []string{`ASKUSER_DISCORD_API_URL: "http:///api" has no host`}},
		{name: "api url with credentials", vars: allOn(map[string]string{"ASKUSER_SLACK_API_URL": "https://u:p@slack.example.com/api/"}),
			want: []string{`ASKUSER_SLACK_API_URL: must not carry credentials, a query or a fragment`}},
		{name: "api url not a url", vars: allOn(map[string]string{"ASKUSER_SLACK_API_URL": "http://[::1"}),
			want: []string{`ASKUSER_SLACK_API_URL: not a URL (missing ']' in host)`}},

		// Telegram
		{name: "telegram token malformed", vars: map[string]string{"ASKUSER_TELEGRAM_TOKEN": "not-a-token"},
			want: []string{`ASKUSER_TELEGRAM_TOKEN: is not a Telegram bot token (expected <bot id>:<secret>, as @BotFather gives it)`}},
		{name: "telegram webhook", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "https://bridge.example.com:8443/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret})},
		{name: "telegram webhook not https", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "http://bridge.example.com/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret}),
			want: []string{`ASKUSER_TELEGRAM_WEBHOOK_URL: "http://bridge.example.com/tg" must be an https:// URL`}},
		{name: "telegram webhook without secret", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "https://bridge.example.com/tg"}),
			want: []string{`ASKUSER_TELEGRAM_WEBHOOK_SECRET is required with ASKUSER_TELEGRAM_WEBHOOK_URL`}},
		{name: "telegram webhook secret with bad characters", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "https://bridge.example.com/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": "s3cret!"}),
			want: []string{`ASKUSER_TELEGRAM_WEBHOOK_SECRET: must be 1 to 256 characters of A-Z, a-z, 0-9, '_' or '-' (Telegram's rule for secret_token)`}},
		{name: "telegram webhook secret too long", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "https://bridge.example.com/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": strings.Repeat("a", 257)}),
			want: []string{`ASKUSER_TELEGRAM_WEBHOOK_SECRET: must be 1 to 256 characters of A-Z, a-z, 0-9, '_' or '-' (Telegram's rule for secret_token)`}},
		{name: "telegram webhook secret without webhook", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret}),
			want: []string{`ASKUSER_TELEGRAM_WEBHOOK_SECRET is set but ASKUSER_TELEGRAM_WEBHOOK_URL is not: the secret is only used in webhook mode`}},
		{name: "telegram webhook on a port Telegram does not call", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "https://bridge.example.com:8080/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret}),
			want: []string{`ASKUSER_TELEGRAM_WEBHOOK_URL: port 8080 is not one Telegram calls (443, 80, 88 or 8443)`}},
		{name: "telegram webhook on any port with a local Bot API server", vars: allOn(map[string]string{"ASKUSER_TELEGRAM_API_URL": "http://127.0.0.1:8081", "ASKUSER_TELEGRAM_WEBHOOK_URL": "https://127.0.0.1:9443/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret})},

		// Discord
		{name: "discord token with a space", vars: map[string]string{"ASKUSER_DISCORD_TOKEN": "abc def"},
			want: []string{`ASKUSER_DISCORD_TOKEN: must not contain spaces or control characters`}},

		// Slack
		{name: "slack http mode", vars: map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackBot, "ASKUSER_SLACK_SIGNING_SECRET": slackSigning}},
		{name: "slack without app token or signing secret", vars: map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackBot},
			want: []string{`ASKUSER_SLACK_APP_TOKEN or ASKUSER_SLACK_SIGNING_SECRET is required: the app token for socket mode, or the signing secret for HTTP mode`}},
		{name: "slack app token in the bot token", vars: map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackApp, "ASKUSER_SLACK_APP_TOKEN": slackApp},
			want: []string{`ASKUSER_SLACK_BOT_TOKEN: is an app-level token (xapp-…); the bot token starts with xoxb-, the app token goes in ASKUSER_SLACK_APP_TOKEN`}},
		{name: "slack bot token in the app token", vars: map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackBot, "ASKUSER_SLACK_APP_TOKEN": slackBot},
			want: []string{`ASKUSER_SLACK_APP_TOKEN: must be an app-level token starting with xapp- (with the connections:write scope)`}},
		{name: "slack signing secret with a space", vars: map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackBot, "ASKUSER_SLACK_SIGNING_SECRET": "a b"},
			want: []string{`ASKUSER_SLACK_SIGNING_SECRET: must not contain spaces or control characters`}},

		// Several at once
		{name: "every problem is reported",
			vars: map[string]string{"ASKUSER_HTTP_ADDR": "abc", "ASKUSER_LOG_LEVEL": "loud", "ASKUSER_DEFAULT_TO": "nowhere", "ASKUSER_REDIS_PREFIX": "{x}"},
			want: []string{
				`ASKUSER_REDIS_PREFIX: "{x}" must not contain braces (they would break the {<id>} hash tags Redis Cluster needs)`,
				`ASKUSER_HTTP_ADDR: "abc" is not host:port`,
				`ASKUSER_LOG_LEVEL: "loud" is not one of debug, info, warn, error`,
				`ASKUSER_DEFAULT_TO: unknown route "nowhere"`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range tc.vars {
				vars[k] = v
			}
			fsys := map[string]string{}
			if tc.yaml != "" {
				vars["ASKUSER_CONFIG"] = "/c.yaml"
				fsys["/c.yaml"] = tc.yaml
			}
			c, err := Load(env(vars), files(fsys))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if c == nil {
					t.Fatal("nil config without an error")
				}
				return
			}
			if c != nil {
				t.Errorf("config returned with an error")
			}
			got := problemsOf(t, err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(tc.want))
			}
		})
	}
}

// A Config built by hand is checked the same way, each problem named by its
// environment variable.
func TestValidateByHand(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"platforms on", func(c *Config) {
			c.Telegram = &telegram.Config{Token: tgToken, APIURL: telegram.DefaultAPIURL}
			c.Discord = &discord.Config{Token: discordToken, APIURL: discord.DefaultAPIURL}
			c.Slack = &slack.Config{BotToken: slackBot, SigningSecret: slackSigning, APIURL: slack.DefaultAPIURL}
			c.Routes["ops"] = Route{To: "slack:C0123456789"}
			c.DefaultRoute = "ops"
		}, nil},
		// An empty API URL is the platform's default, as in the platform's
		// own Validate.
		{"empty platform sections", func(c *Config) {
			c.Telegram = &telegram.Config{}
			c.Discord = &discord.Config{}
			c.Slack = &slack.Config{}
		}, []string{
			`ASKUSER_TELEGRAM_TOKEN is required`,
			`ASKUSER_DISCORD_TOKEN is required`,
			`ASKUSER_SLACK_BOT_TOKEN is required`,
			`ASKUSER_SLACK_APP_TOKEN or ASKUSER_SLACK_SIGNING_SECRET is required: the app token for socket mode, or the signing secret for HTTP mode`,
		}},
		{"telegram token malformed", func(c *Config) { c.Telegram = &telegram.Config{Token: "abc"} },
			[]string{`ASKUSER_TELEGRAM_TOKEN: is not a Telegram bot token (expected <bot id>:<secret>, as @BotFather gives it)`}},
		{"platform wiring", func(c *Config) {
			c.Telegram = &telegram.Config{Token: tgToken, PollTimeout: time.Second}
			c.Discord = &discord.Config{Token: discordToken, AckAfter: 3 * time.Second}
		}, []string{
			`poll timeout must be at least 2s`,
			`AckAfter 3s must be under Discord's 3s interaction deadline`,
		}},
		{"slack api url without the trailing slash", func(c *Config) {
			c.Slack = &slack.Config{BotToken: slackBot, AppToken: slackApp, APIURL: "http://127.0.0.1:1/api"}
		}, []string{`ASKUSER_SLACK_API_URL: "http://127.0.0.1:1/api" must end with '/' (slack-go appends the method name)`}},
		{"zero durations and empty strings", func(c *Config) {
			c.Retention, c.ClaimIdle = 0, 0
			c.Replica, c.DefaultRoute, c.LogLevel, c.Redis.Prefix = "", "", "", ""
		}, []string{
			`ASKUSER_REDIS_PREFIX must not be empty`,
			`ASKUSER_REPLICA: "" must be 1 to 128 letters, digits, '_', '.' or '-', starting with a letter or digit`,
			`ASKUSER_RESULT_RETENTION: 0s is out of range: from 1m0s to 30d (720h0m0s)`,
			`ASKUSER_CLAIM_IDLE: 0s is out of range: from 1s to 1h0m0s`,
			`ASKUSER_LOG_LEVEL: "" is not one of debug, info, warn, error`,
			`ASKUSER_DEFAULT_TO must not be empty`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.modify(c)
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			got := problemsOf(t, err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(tc.want))
			}
		})
	}
}

// Each section is checked by the rules its type holds: by hand, a Config
// names each setting by its variable; a platform's Config on its own names
// them in words.
func TestSectionValidate(t *testing.T) {
	only := func(modify func(*Config)) error {
		c := Default()
		modify(c)
		return c.Validate()
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"redis", only(func(c *Config) { c.Redis = Redis{EmbeddedAddr: "x", Prefix: "p:"} }), `invalid configuration: ASKUSER_EMBEDDED_REDIS_ADDR: "x" is not host:port`},
		{"http", only(func(c *Config) { c.HTTP = HTTP{Addr: "0.0.0.0:1"} }), `invalid configuration: ASKUSER_HTTP_TOKEN is required when ASKUSER_HTTP_ADDR listens beyond loopback`},
		{"telegram", only(func(c *Config) { c.Telegram = &telegram.Config{Token: tgToken, APIURL: "x"} }), `invalid configuration: ASKUSER_TELEGRAM_API_URL: "x" must be an http:// or https:// URL`},
		{"discord", only(func(c *Config) { c.Discord = &discord.Config{Token: "a\tb", APIURL: discord.DefaultAPIURL} }), `invalid configuration: ASKUSER_DISCORD_TOKEN: must not contain spaces or control characters`},
		{"slack", only(func(c *Config) {
			c.Slack = &slack.Config{BotToken: slackBot, AppToken: slackApp, APIURL: slack.DefaultAPIURL}
		}), ``},
		{"two problems", only(func(c *Config) { c.HTTP = HTTP{Addr: "x", Token: "y"} }), `invalid configuration: ASKUSER_HTTP_ADDR: "x" is not host:port; ASKUSER_HTTP_TOKEN: must be at least 16 characters`},
		{"telegram on its own", telegram.Config{Token: tgToken, APIURL: "x"}.Validate(), `telegram: api url: "x" must be an http:// or https:// URL`},
		{"telegram webhook on its own", telegram.Config{Token: tgToken, WebhookURL: "https://x.example.com/"}.Validate(), `telegram: webhook secret is required with webhook url`},
		{"discord on its own", discord.Config{Token: "a\tb"}.Validate(), `discord: token: must not contain spaces or control characters`},
		{"slack on its own", slack.Config{BotToken: slackBot, APIURL: "http://x/api"}.Validate(),
			`slack: app token or signing secret is required: the app token for socket mode, or the signing secret for HTTP mode; slack: api url: "http://x/api" must end with '/' (slack-go appends the method name)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if tc.err != nil {
				got = tc.err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLevel(t *testing.T) {
	tests := []struct {
		level string
		want  string
	}{
		{"debug", "DEBUG"}, {"info", "INFO"}, {"warn", "WARN"}, {"error", "ERROR"}, {"", "INFO"},
	}
	for _, tc := range tests {
		t.Run(tc.level, func(t *testing.T) {
			c := &Config{LogLevel: tc.level}
			if got := c.Level().String(); got != tc.want {
				t.Errorf("Level() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Retention != 24*time.Hour || c.Routes == nil {
		t.Errorf("Default() = %v", c)
	}
}

// The log format is json, text, or unset (chosen by where the log goes),
// in any case, from the environment or the file; the environment wins.
func TestLogFormat(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		yaml string
		want string
	}{
		{name: "unset", want: ""},
		{name: "json", vars: map[string]string{"ASKUSER_LOG_FORMAT": "json"}, want: LogFormatJSON},
		{name: "upper case", vars: map[string]string{"ASKUSER_LOG_FORMAT": " TEXT "}, want: LogFormatText},
		{name: "file", yaml: "log:\n  format: text\n", want: LogFormatText},
		{name: "environment over file", vars: map[string]string{"ASKUSER_LOG_FORMAT": "json"}, yaml: "log:\n  format: text\n", want: LogFormatJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range tc.vars {
				vars[k] = v
			}
			fsys := map[string]string{}
			if tc.yaml != "" {
				vars["ASKUSER_CONFIG"] = "/c.yaml"
				fsys["/c.yaml"] = tc.yaml
			}
			c, err := Load(env(vars), files(fsys))
			if err != nil {
				t.Fatal(err)
			}
			if c.LogFormat != tc.want {
				t.Errorf("LogFormat = %q, want %q", c.LogFormat, tc.want)
			}
		})
	}
}

// TestMCPSettings: `askbridge mcp` reads ASKUSER_MCP_MAX_CALLS,
// ASKUSER_MCP_MAX_WAIT and ASKUSER_MCP_ELICIT alone, with the bridge's
// rules and messages naming the variable.
func TestMCPSettings(t *testing.T) {
	cases := []struct {
		env, value string
		want       HTTP
		err        string
	}{
		{"ASKUSER_MCP_MAX_CALLS", "", HTTP{MCPMaxCalls: DefaultMCPMaxCalls, MCPMaxWait: DefaultMCPMaxWait, MCPElicit: "on"}, ""},
		{"ASKUSER_MCP_MAX_CALLS", " 12 ", HTTP{MCPMaxCalls: 12, MCPMaxWait: DefaultMCPMaxWait, MCPElicit: "on"}, ""},
		{"ASKUSER_MCP_MAX_CALLS", "0", HTTP{}, `ASKUSER_MCP_MAX_CALLS: "0" is not a whole number of at least 1`},
		{"ASKUSER_MCP_MAX_CALLS", "many", HTTP{}, `ASKUSER_MCP_MAX_CALLS: "many" is not a whole number of at least 1`},
		{"ASKUSER_MCP_MAX_CALLS", "10001", HTTP{}, `ASKUSER_MCP_MAX_CALLS: 10001 is out of range: from 1 to 10000`},
		{"ASKUSER_MCP_MAX_WAIT", "25s", HTTP{MCPMaxCalls: DefaultMCPMaxCalls, MCPMaxWait: 25 * time.Second, MCPElicit: "on"}, ""},
		{"ASKUSER_MCP_MAX_WAIT", "50", HTTP{}, `ASKUSER_MCP_MAX_WAIT: "50" is not a duration such as "24h", "90m" or "30s"`},
		{"ASKUSER_MCP_MAX_WAIT", "500ms", HTTP{}, `ASKUSER_MCP_MAX_WAIT: 500ms is out of range: from 1s to 1h0m0s`},
		{"ASKUSER_MCP_ELICIT", "OFF", HTTP{MCPMaxCalls: DefaultMCPMaxCalls, MCPMaxWait: DefaultMCPMaxWait, MCPElicit: "off"}, ""},
		{"ASKUSER_MCP_ELICIT", "no", HTTP{}, `ASKUSER_MCP_ELICIT: "no" is not on or off`},
	}
	for _, tc := range cases {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			vars := map[string]string{tc.env: tc.value}
			h, err := MCP(func(k string) string { return vars[k] })
			got := ""
			if err != nil {
				got = err.Error()
			}
			h = HTTP{MCPMaxCalls: h.MCPMaxCalls, MCPMaxWait: h.MCPMaxWait, MCPElicit: h.MCPElicit}
			if h != tc.want || got != tc.err {
				t.Errorf("MCP(%s=%q) = %+v, %q; want %+v, %q", tc.env, tc.value, h, got, tc.want, tc.err)
			}
		})
	}
}
