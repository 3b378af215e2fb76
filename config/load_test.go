package config

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadDefaults(t *testing.T) {
	c, err := Load(env(nil), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"redis url", c.Redis.URL, ""},
		{"embedded addr", c.Redis.EmbeddedAddr, "127.0.0.1:6380"},
		{"prefix", c.Redis.Prefix, "askuser:"},
		{"http addr", c.HTTP.Addr, "127.0.0.1:8080"},
		{"http token", c.HTTP.Token, ""},
		{"default route", c.DefaultRoute, "web"},
		{"routes", len(c.Routes), 0},
		{"retention", c.Retention, 24 * time.Hour},
		{"claim idle", c.ClaimIdle, 30 * time.Second},
		{"telegram off", c.Telegram == nil, true},
		{"discord off", c.Discord == nil, true},
		{"slack off", c.Slack == nil, true},
		{"log level", c.LogLevel, "info"},
		{"loopback", c.HTTP.Loopback(), true},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	t.Run("replica is hostname-pid", func(t *testing.T) {
		suffix := "-" + strconv.Itoa(os.Getpid())
		if !regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*` + regexp.QuoteMeta(suffix) + `$`).MatchString(c.Replica) {
			t.Errorf("replica %q is not <hostname>%s", c.Replica, suffix)
		}
	})
	t.Run("resolve empty goes to web", func(t *testing.T) {
		r, err := c.Resolve("")
		if err != nil || r.To != "web" {
			t.Errorf("Resolve(\"\") = %+v, %v", r, err)
		}
	})
}

func TestLoadEveryVariable(t *testing.T) {
	vars := map[string]string{
		"ASKUSER_REDIS_URL":               "redis://redis.internal:6379/2",
		"ASKUSER_EMBEDDED_REDIS_ADDR":     "127.0.0.1:7000",
		"ASKUSER_REDIS_PREFIX":            "team-a:",
		"ASKUSER_HTTP_ADDR":               "0.0.0.0:9090",
		"ASKUSER_HTTP_TOKEN":              httpToken,
		"ASKUSER_DATA_DIR":                "/var/lib/askbridge",
		"ASKUSER_HTTP_ORIGINS":            "https://ask.example.com, http://localhost:8081",
		"ASKUSER_MAX_EVENT_STREAMS":       "250",
		"ASKUSER_MCP_MAX_CALLS":           "12",
		"ASKUSER_METRICS_ADDR":            "10.0.0.5:9090",
		"ASKUSER_REPLICA":                 "bridge-1",
		"ASKUSER_DEFAULT_TO":              "telegram:-1001234567890",
		"ASKUSER_RESULT_RETENTION":        "72h",
		"ASKUSER_CLAIM_IDLE":              "45s",
		"ASKUSER_LOG_LEVEL":               "DEBUG",
		"ASKUSER_TELEGRAM_TOKEN":          tgToken,
		"ASKUSER_TELEGRAM_API_URL":        "http://127.0.0.1:8081/",
		"ASKUSER_TELEGRAM_WEBHOOK_URL":    "https://bridge.example.com/telegram",
		"ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret,
		"ASKUSER_DISCORD_TOKEN":           "Bot " + discordToken,
		"ASKUSER_DISCORD_API_URL":         "http://127.0.0.1:8082/",
		"ASKUSER_SLACK_BOT_TOKEN":         slackBot,
		"ASKUSER_SLACK_APP_TOKEN":         slackApp,
		"ASKUSER_SLACK_SIGNING_SECRET":    slackSigning,
		"ASKUSER_SLACK_API_URL":           "http://127.0.0.1:8083/api",
	}
	c, err := Load(env(vars), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Telegram == nil || c.Discord == nil || c.Slack == nil {
		t.Fatalf("platforms: telegram %v, discord %v, slack %v", c.Telegram, c.Discord, c.Slack)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"ASKUSER_REDIS_URL", c.Redis.URL, "redis://redis.internal:6379/2"},
		{"ASKUSER_EMBEDDED_REDIS_ADDR", c.Redis.EmbeddedAddr, "127.0.0.1:7000"},
		{"ASKUSER_REDIS_PREFIX", c.Redis.Prefix, "team-a:"},
		{"ASKUSER_HTTP_ADDR", c.HTTP.Addr, "0.0.0.0:9090"},
		{"ASKUSER_HTTP_TOKEN", c.HTTP.Token, httpToken},
		{"ASKUSER_DATA_DIR", c.Redis.DataDir, "/var/lib/askbridge"},
		{"ASKUSER_HTTP_ORIGINS", c.HTTP.OriginList(), []string{"https://ask.example.com", "http://localhost:8081"}},
		{"ASKUSER_MAX_EVENT_STREAMS", c.HTTP.MaxEventStreams, 250},
		{"ASKUSER_MCP_MAX_CALLS", c.HTTP.MCPMaxCalls, 12},
		{"ASKUSER_METRICS_ADDR", c.HTTP.MetricsAddr, "10.0.0.5:9090"},
		{"ASKUSER_REPLICA", c.Replica, "bridge-1"},
		{"ASKUSER_DEFAULT_TO", c.DefaultRoute, "telegram:-1001234567890"},
		{"ASKUSER_RESULT_RETENTION", c.Retention, 72 * time.Hour},
		{"ASKUSER_CLAIM_IDLE", c.ClaimIdle, 45 * time.Second},
		{"ASKUSER_LOG_LEVEL is lower-cased", c.LogLevel, "debug"},
		{"ASKUSER_TELEGRAM_TOKEN", c.Telegram.Token, tgToken},
		{"ASKUSER_TELEGRAM_API_URL loses its trailing slash", c.Telegram.APIURL, "http://127.0.0.1:8081"},
		{"ASKUSER_TELEGRAM_WEBHOOK_URL", c.Telegram.WebhookURL, "https://bridge.example.com/telegram"},
		{"ASKUSER_TELEGRAM_WEBHOOK_SECRET", c.Telegram.WebhookSecret, hookSecret},
		{"ASKUSER_DISCORD_TOKEN loses its Bot prefix", c.Discord.Token, discordToken},
		{"ASKUSER_DISCORD_API_URL", c.Discord.APIURL, "http://127.0.0.1:8082/"},
		{"ASKUSER_SLACK_BOT_TOKEN", c.Slack.BotToken, slackBot},
		{"ASKUSER_SLACK_APP_TOKEN", c.Slack.AppToken, slackApp},
		{"ASKUSER_SLACK_SIGNING_SECRET", c.Slack.SigningSecret, slackSigning},
		{"ASKUSER_SLACK_API_URL gains a trailing slash", c.Slack.APIURL, "http://127.0.0.1:8083/api/"},
		{"socket mode", c.Slack.AppToken != "", true},
		{"not loopback", c.HTTP.Loopback(), false},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestLoadPlatformDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{
		"ASKUSER_TELEGRAM_TOKEN":       tgToken,
		"ASKUSER_DISCORD_TOKEN":        discordToken,
		"ASKUSER_SLACK_BOT_TOKEN":      slackBot,
		"ASKUSER_SLACK_SIGNING_SECRET": slackSigning,
	}), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"telegram api", c.Telegram.APIURL, "https://api.telegram.org"},
		{"telegram polling", c.Telegram.WebhookURL, ""},
		{"discord api", c.Discord.APIURL, "https://discord.com/"},
		{"slack api", c.Slack.APIURL, "https://slack.com/api/"},
		{"slack http mode", c.Slack.AppToken != "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestLoadSecretFiles(t *testing.T) {
	fsys := files(map[string]string{
		"/run/secrets/redis":    "redis://:" + redisPass + "@redis:6379/0\n",
		"/run/secrets/http":     "  " + httpToken + "\n",
		"/run/secrets/tg":       tgToken + "\n",
		"/run/secrets/hook":     hookSecret,
		"/run/secrets/discord":  discordToken + "\r\n",
		"/run/secrets/slackbot": slackBot,
		"/run/secrets/slackapp": slackApp,
		"/run/secrets/signing":  slackSigning,
	})
	vars := map[string]string{
		"ASKUSER_REDIS_URL_FILE":               "/run/secrets/redis",
		"ASKUSER_HTTP_TOKEN_FILE":              "/run/secrets/http",
		"ASKUSER_TELEGRAM_TOKEN_FILE":          "/run/secrets/tg",
		"ASKUSER_TELEGRAM_WEBHOOK_URL":         "https://bridge.example.com/tg",
		"ASKUSER_TELEGRAM_WEBHOOK_SECRET_FILE": "/run/secrets/hook",
		"ASKUSER_DISCORD_TOKEN_FILE":           "/run/secrets/discord",
		"ASKUSER_SLACK_BOT_TOKEN_FILE":         "/run/secrets/slackbot",
		"ASKUSER_SLACK_APP_TOKEN_FILE":         "/run/secrets/slackapp",
		"ASKUSER_SLACK_SIGNING_SECRET_FILE":    "/run/secrets/signing",
	}
	c, err := Load(env(vars), fsys)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, got, want string
	}{
		{"ASKUSER_REDIS_URL_FILE", c.Redis.URL, "redis://:" + redisPass + "@redis:6379/0"},
		{"ASKUSER_HTTP_TOKEN_FILE", c.HTTP.Token, httpToken},
		{"ASKUSER_TELEGRAM_TOKEN_FILE", c.Telegram.Token, tgToken},
		{"ASKUSER_TELEGRAM_WEBHOOK_SECRET_FILE", c.Telegram.WebhookSecret, hookSecret},
		{"ASKUSER_DISCORD_TOKEN_FILE", c.Discord.Token, discordToken},
		{"ASKUSER_SLACK_BOT_TOKEN_FILE", c.Slack.BotToken, slackBot},
		{"ASKUSER_SLACK_APP_TOKEN_FILE", c.Slack.AppToken, slackApp},
		{"ASKUSER_SLACK_SIGNING_SECRET_FILE", c.Slack.SigningSecret, slackSigning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestLoadSecretFileProblems(t *testing.T) {
	fsys := files(map[string]string{
		"/s/tg":    tgToken,
		"/s/empty": " \n",
		"/s/two":   "xoxb-first\nxoxb-second\n",
	})
	tests := []struct {
		name string
		vars map[string]string
		want []string
	}{
		{
			name: "variable and _FILE both set",
			vars: map[string]string{"ASKUSER_TELEGRAM_TOKEN": tgToken, "ASKUSER_TELEGRAM_TOKEN_FILE": "/s/tg"},
			want: []string{"ASKUSER_TELEGRAM_TOKEN and ASKUSER_TELEGRAM_TOKEN_FILE are both set; set only one"},
		},
		{
			name: "every secret checks both",
			vars: map[string]string{
				"ASKUSER_REDIS_URL": "redis://r:6379", "ASKUSER_REDIS_URL_FILE": "/s/tg",
				"ASKUSER_HTTP_TOKEN": httpToken, "ASKUSER_HTTP_TOKEN_FILE": "/s/tg",
				"ASKUSER_SLACK_SIGNING_SECRET": slackSigning, "ASKUSER_SLACK_SIGNING_SECRET_FILE": "/s/tg",
			},
			want: []string{
				"ASKUSER_REDIS_URL and ASKUSER_REDIS_URL_FILE are both set; set only one",
				"ASKUSER_HTTP_TOKEN and ASKUSER_HTTP_TOKEN_FILE are both set; set only one",
				"ASKUSER_SLACK_SIGNING_SECRET and ASKUSER_SLACK_SIGNING_SECRET_FILE are both set; set only one",
			},
		},
		{
			name: "missing file",
			vars: map[string]string{"ASKUSER_DISCORD_TOKEN_FILE": "/s/nope"},
			want: []string{"ASKUSER_DISCORD_TOKEN_FILE: open /s/nope: file does not exist"},
		},
		{
			name: "empty file",
			vars: map[string]string{"ASKUSER_DISCORD_TOKEN_FILE": "/s/empty"},
			want: []string{"ASKUSER_DISCORD_TOKEN_FILE: /s/empty is empty"},
		},
		{
			name: "two lines in a secret file",
			vars: map[string]string{"ASKUSER_SLACK_BOT_TOKEN_FILE": "/s/two", "ASKUSER_SLACK_APP_TOKEN": slackApp},
			want: []string{"ASKUSER_SLACK_BOT_TOKEN_FILE: must not contain spaces or control characters"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.vars), fsys)
			got := problemsOf(t, err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(tc.want))
			}
		})
	}
}

func TestLoadPlatformOffWithSettings(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		files map[string]string
		want  []string
	}{
		{
			name: "telegram api url without token",
			vars: map[string]string{"ASKUSER_TELEGRAM_API_URL": "http://127.0.0.1:8081"},
			want: []string{"ASKUSER_TELEGRAM_API_URL is set but Telegram is off: set ASKUSER_TELEGRAM_TOKEN (or ASKUSER_TELEGRAM_TOKEN_FILE) to turn it on, or remove this setting"},
		},
		{
			name: "telegram webhook without token",
			vars: map[string]string{"ASKUSER_TELEGRAM_WEBHOOK_URL": "https://x.example.com/tg", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret},
			want: []string{
				"ASKUSER_TELEGRAM_WEBHOOK_URL is set but Telegram is off: set ASKUSER_TELEGRAM_TOKEN (or ASKUSER_TELEGRAM_TOKEN_FILE) to turn it on, or remove this setting",
				"ASKUSER_TELEGRAM_WEBHOOK_SECRET is set but Telegram is off: set ASKUSER_TELEGRAM_TOKEN (or ASKUSER_TELEGRAM_TOKEN_FILE) to turn it on, or remove this setting",
			},
		},
		{
			name: "discord api url without token",
			vars: map[string]string{"ASKUSER_DISCORD_API_URL": "http://127.0.0.1:8082/"},
			want: []string{"ASKUSER_DISCORD_API_URL is set but Discord is off: set ASKUSER_DISCORD_TOKEN (or ASKUSER_DISCORD_TOKEN_FILE) to turn it on, or remove this setting"},
		},
		{
			name: "slack app token without bot token",
			vars: map[string]string{"ASKUSER_SLACK_APP_TOKEN": slackApp},
			want: []string{"ASKUSER_SLACK_APP_TOKEN is set but Slack is off: set ASKUSER_SLACK_BOT_TOKEN (or ASKUSER_SLACK_BOT_TOKEN_FILE) to turn it on, or remove this setting"},
		},
		{
			name: "slack signing secret and api url without bot token",
			vars: map[string]string{"ASKUSER_SLACK_SIGNING_SECRET": slackSigning, "ASKUSER_SLACK_API_URL": "http://127.0.0.1/api/"},
			want: []string{
				"ASKUSER_SLACK_SIGNING_SECRET is set but Slack is off: set ASKUSER_SLACK_BOT_TOKEN (or ASKUSER_SLACK_BOT_TOKEN_FILE) to turn it on, or remove this setting",
				"ASKUSER_SLACK_API_URL is set but Slack is off: set ASKUSER_SLACK_BOT_TOKEN (or ASKUSER_SLACK_BOT_TOKEN_FILE) to turn it on, or remove this setting",
			},
		},
		{
			name:  "from the file, the YAML key is named",
			vars:  map[string]string{"ASKUSER_CONFIG": "/c.yaml"},
			files: map[string]string{"/c.yaml": "discord:\n  apiURL: http://127.0.0.1:8082/\n"},
			want:  []string{"discord.apiURL is set but Discord is off: set ASKUSER_DISCORD_TOKEN (or ASKUSER_DISCORD_TOKEN_FILE) to turn it on, or remove this setting"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.vars), files(tc.files))
			got := problemsOf(t, err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(tc.want))
			}
		})
	}
}

// A variable named ASKUSER_… that Load does not read is a mistake (a
// misspelt setting would otherwise be left out without a word): it is
// refused, with the setting it is closest to, alongside every other
// problem.
func TestLoadUnknownVariables(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		files map[string]string
		want  []string // nil: valid
	}{
		{
			name: "misspelt",
			vars: map[string]string{"ASKUSER_HTTP_ADRR": "127.0.0.1:9999"},
			want: []string{"ASKUSER_HTTP_ADRR is not a setting; did you mean ASKUSER_HTTP_ADDR?"},
		},
		{
			name: "lower case",
			vars: map[string]string{"askuser_log_level": "debug"},
			want: []string{"askuser_log_level is not a setting; did you mean ASKUSER_LOG_LEVEL?"},
		},
		{
			name: "a secret's _FILE form, misspelt",
			vars: map[string]string{"ASKUSER_TELEGRAM_TOKEN_FIEL": "/s/tg"},
			want: []string{"ASKUSER_TELEGRAM_TOKEN_FIEL is not a setting; did you mean ASKUSER_TELEGRAM_TOKEN_FILE?"},
		},
		{
			name: "a _FILE form of a setting that is no secret",
			vars: map[string]string{"ASKUSER_HTTP_ADDR_FILE": "/s/addr"},
			want: []string{"ASKUSER_HTTP_ADDR_FILE: only a secret may be read from a file, and ASKUSER_HTTP_ADDR is none; set ASKUSER_HTTP_ADDR itself"},
		},
		{
			name: "nothing close",
			vars: map[string]string{"ASKUSER_COLOUR": "blue"},
			want: []string{"ASKUSER_COLOUR is not a setting (the README's configuration table lists them all); remove it or correct its name"},
		},
		{
			name: "with the other problems",
			vars: map[string]string{"ASKUSER_LOG_LEVL": "debug", "ASKUSER_LOG_LEVEL": "loud"},
			want: []string{
				"ASKUSER_LOG_LEVL is not a setting; did you mean ASKUSER_LOG_LEVEL?",
				`ASKUSER_LOG_LEVEL: "loud" is not one of debug, info, warn, error`,
			},
		},
		{
			name:  "with the file's problems",
			vars:  map[string]string{"ASKUSER_CONFIG": "/c.yaml", "ASKUSER_REDIS_PREFX": "a:"},
			files: map[string]string{"/c.yaml": "http:\n  adr: 127.0.0.1:1\n"},
			want: []string{
				"ASKUSER_REDIS_PREFX is not a setting; did you mean ASKUSER_REDIS_PREFIX?",
				`/c.yaml:2: unknown key "http.adr"; did you mean "http.addr"?`,
			},
		},
		{
			name:  "known names, empty ones and other prefixes are fine",
			vars:  map[string]string{"ASKUSER_HTTP_TOKEN_FILE": "/s/token", "ASKUSER_REPLICA": "r1", "ASKUSER_CONFIG": "", "ASKUSER_NOTHING": " ", "ASKBRIDGE_REQUIRE_REDIS": "1", "PATH": "/bin"},
			files: map[string]string{"/s/token": httpToken},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.vars), files(tc.files))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
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

const fullYAML = `
redis:
  url: redis://file-redis:6379/1
  embeddedAddr: 127.0.0.1:6390
  prefix: "file:"
http:
  addr: 127.0.0.1:8181
  token: file-token-0123456789
defaultRoute: ops
resultRetention: 2h
claimIdle: 10s
routes:
  ops:
    to: telegram:-100200300
    answerers: [telegram:42, " telegram:43 "]
    locale: th
    escalate:
      - afterSeconds: 600
        to: desk
      - afterSeconds: 1200
        to: [" telegram:44 ", desk2]
  desk:
    to: web
  desk2:
    to: telegram:45
telegram:
  token: "111:fileTOKEN"
  apiURL: http://127.0.0.1:9001
  webhookURL: https://hooks.example.com/tg
  webhookSecret: file_secret_0123456789
discord:
  token: file-discord-token
  apiURL: http://127.0.0.1:9002/
slack:
  botToken: xoxb-file
  appToken: xapp-file
  signingSecret: file-signing-0123456789
  apiURL: http://127.0.0.1:9003/api/
log:
  level: warn
`

func TestLoadYAML(t *testing.T) {
	fsys := files(map[string]string{"/etc/askbridge.yaml": fullYAML})
	c, err := Load(env(map[string]string{"ASKUSER_CONFIG": "/etc/askbridge.yaml"}), fsys)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"redis.url", c.Redis.URL, "redis://file-redis:6379/1"},
		{"redis.embeddedAddr", c.Redis.EmbeddedAddr, "127.0.0.1:6390"},
		{"redis.prefix", c.Redis.Prefix, "file:"},
		{"http.addr", c.HTTP.Addr, "127.0.0.1:8181"},
		{"http.token", c.HTTP.Token, "file-token-0123456789"},
		{"defaultRoute", c.DefaultRoute, "ops"},
		{"resultRetention", c.Retention, 2 * time.Hour},
		{"claimIdle", c.ClaimIdle, 10 * time.Second},
		{"routes", c.Routes, map[string]Route{
			"ops": {To: "telegram:-100200300", Answerers: []string{"telegram:42", "telegram:43"}, Locale: "th",
				Escalate: []Step{{AfterSeconds: 600, To: StepTo{"desk"}}, {AfterSeconds: 1200, To: StepTo{"telegram:44", "desk2"}}}},
			"desk":  {To: "web"},
			"desk2": {To: "telegram:45"},
		}},
		{"telegram.token", c.Telegram.Token, "111:fileTOKEN"},
		{"telegram.apiURL", c.Telegram.APIURL, "http://127.0.0.1:9001"},
		{"telegram.webhookURL", c.Telegram.WebhookURL, "https://hooks.example.com/tg"},
		{"telegram.webhookSecret", c.Telegram.WebhookSecret, "file_secret_0123456789"},
		{"discord.token", c.Discord.Token, "file-discord-token"},
		{"discord.apiURL", c.Discord.APIURL, "http://127.0.0.1:9002/"},
		{"slack.botToken", c.Slack.BotToken, "xoxb-file"},
		{"slack.appToken", c.Slack.AppToken, "xapp-file"},
		{"slack.signingSecret", c.Slack.SigningSecret, "file-signing-0123456789"},
		{"slack.apiURL", c.Slack.APIURL, "http://127.0.0.1:9003/api/"},
		{"log.level", c.LogLevel, "warn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestLoadEnvOverridesYAML(t *testing.T) {
	fsys := files(map[string]string{"/c.yaml": fullYAML, "/s/tg": tgToken})
	vars := map[string]string{
		"ASKUSER_CONFIG":              "/c.yaml",
		"ASKUSER_REDIS_URL":           "rediss://env-redis:6380",
		"ASKUSER_REDIS_PREFIX":        "env:",
		"ASKUSER_HTTP_ADDR":           "127.0.0.1:9999",
		"ASKUSER_DEFAULT_TO":          "desk",
		"ASKUSER_RESULT_RETENTION":    "1h",
		"ASKUSER_CLAIM_IDLE":          "5s",
		"ASKUSER_LOG_LEVEL":           "error",
		"ASKUSER_TELEGRAM_TOKEN_FILE": "/s/tg",
		"ASKUSER_SLACK_APP_TOKEN":     slackApp,
		"ASKUSER_DISCORD_API_URL":     "https://discord.example.com/",
	}
	c, err := Load(env(vars), fsys)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"redis url from env", c.Redis.URL, "rediss://env-redis:6380"},
		{"embedded addr from file", c.Redis.EmbeddedAddr, "127.0.0.1:6390"},
		{"prefix from env", c.Redis.Prefix, "env:"},
		{"http addr from env", c.HTTP.Addr, "127.0.0.1:9999"},
		{"http token from file", c.HTTP.Token, "file-token-0123456789"},
		{"default route from env", c.DefaultRoute, "desk"},
		{"retention from env", c.Retention, time.Hour},
		{"claim idle from env", c.ClaimIdle, 5 * time.Second},
		{"log level from env", c.LogLevel, "error"},
		{"telegram token from env _FILE", c.Telegram.Token, tgToken},
		{"telegram secret from file", c.Telegram.WebhookSecret, "file_secret_0123456789"},
		{"slack app token from env", c.Slack.AppToken, slackApp},
		{"slack bot token from file", c.Slack.BotToken, "xoxb-file"},
		{"discord api from env", c.Discord.APIURL, "https://discord.example.com/"},
		{"routes from file", len(c.Routes), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestLoadYAMLProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		vars map[string]string
		want []string
	}{
		{
			name: "unknown top-level key",
			yaml: "redis:\n  prefix: a\nretention: 2h\n",
			want: []string{`/c.yaml:3: unknown key "retention"`},
		},
		{
			name: "unknown keys in sections and routes, all reported",
			yaml: "http:\n  adr: 127.0.0.1:1\ntelegram:\n  tokn: x\nroutes:\n  ops:\n    to: web\n    answerer: [web:a]\n",
			want: []string{
				`/c.yaml:2: unknown key "http.adr"; did you mean "http.addr"?`,
				`/c.yaml:4: unknown key "telegram.tokn"; did you mean "telegram.token"?`,
				`/c.yaml:8: unknown key "routes.ops.answerer"; did you mean "routes.ops.answerers"?`,
			},
		},
		{
			name: "unknown key through a merge",
			yaml: "routes:\n  a: &a\n    to: web\n    extra: 1\n  b:\n    <<: *a\n",
			want: []string{`/c.yaml:4: unknown key "routes.a.extra"`, `/c.yaml:4: unknown key "routes.b.extra"`},
		},
		{
			name: "wrong kinds of values",
			yaml: "redis: redis://x\nhttp:\n  token: [x]\nroutes:\n  ops:\n    to: web\n    answerers: web:a\n  desk:\n    to: {a: b}\n    answerers: [web:a, [web:b]]\nlog: [a]\n",
			want: []string{
				"/c.yaml:1: redis must be a mapping, not a single value",
				"/c.yaml:3: http.token must be a single value, not a list",
				"/c.yaml:7: routes.ops.answerers must be a list, not a single value",
				"/c.yaml:9: routes.desk.to must be a single value, not a mapping",
				"/c.yaml:10: routes.desk.answerers[1] must be a single value, not a list",
				"/c.yaml:11: log must be a mapping, not a list",
			},
		},
		{
			name: "a file that is a list",
			yaml: "- redis\n",
			want: []string{"/c.yaml:1: the file must be a mapping, not a list"},
		},
		{
			name: "syntax error",
			yaml: "redis:\n  prefix: [\n",
			want: []string{"/c.yaml:2: did not find expected node content"},
		},
		{
			name: "two documents",
			yaml: "log:\n  level: info\n---\nlog:\n  level: debug\n",
			want: []string{"/c.yaml:3: a second YAML document starts here; the file must hold only one"},
		},
		{
			name: "duplicate key",
			yaml: "log:\n  level: info\nlog:\n  level: debug\n",
			want: []string{`/c.yaml:3: duplicate key "log" (first at line 1)`},
		},
		{
			name: "duplicate keys in a section and a route",
			yaml: "http:\n  addr: 127.0.0.1:1\n  addr: 127.0.0.1:2\nroutes:\n  ops:\n    to: web\n    to: desk\n",
			want: []string{
				`/c.yaml:3: duplicate key "http.addr" (first at line 2)`,
				`/c.yaml:7: duplicate key "routes.ops.to" (first at line 6)`,
			},
		},
		{
			name: "a second document after errors in the first",
			yaml: "retention: 2h\n---\nlog: {}\n",
			want: []string{
				`/c.yaml:1: unknown key "retention"`,
				"/c.yaml:2: a second YAML document starts here; the file must hold only one",
			},
		},
		{
			name: "wrong kinds in the escalation ladder",
			yaml: "routes:\n  ops:\n    to: web\n    escalate:\n      - afterSeconds: soon\n        to: web\n      - afterSeconds: [1]\n        to: {a: b}\n      - afterSeconds: \"900\"\n        to: [[x]]\n      - nothing\n",
			want: []string{
				"/c.yaml:5: routes.ops.escalate[0].afterSeconds must be a whole number",
				"/c.yaml:7: routes.ops.escalate[1].afterSeconds must be a whole number, not a list",
				"/c.yaml:8: routes.ops.escalate[1].to must be a list, not a mapping",
				"/c.yaml:9: routes.ops.escalate[2].afterSeconds must be a whole number",
				"/c.yaml:10: routes.ops.escalate[2].to[0] must be a single value, not a list",
				"/c.yaml:11: routes.ops.escalate[3] must be a mapping, not a single value",
			},
		},
		{
			name: "wrong kinds of sections and routes",
			yaml: "routes:\n  ops: web\n  desk:\n    escalate: {a: b}\nhttp: [a]\nmaxPendingPerAgent: [1]\nclaimIdle: {a: 1}\n",
			want: []string{
				"/c.yaml:2: routes.ops must be a mapping, not a single value",
				"/c.yaml:4: routes.desk.escalate must be a list, not a mapping",
				"/c.yaml:5: http must be a mapping, not a list",
				"/c.yaml:6: maxPendingPerAgent must be a single value, not a list",
				"/c.yaml:7: claimIdle must be a single value, not a mapping",
			},
		},
		{
			name: "routes that are a list",
			yaml: "routes: [ops]\n",
			want: []string{"/c.yaml:1: routes must be a mapping, not a list"},
		},
		{
			name: "a file that is a single value",
			yaml: "hello\n",
			want: []string{"/c.yaml:1: the file must be a mapping, not a single value"},
		},
		{
			name: "flow style: each error names its own key on a shared line",
			yaml: "{http: {adr: 1}, redis: {adr: 2}, routes: {a: {answerers: [web:a, [web:b]], to: [web]}}}\n",
			want: []string{
				`/c.yaml:1: unknown key "http.adr"; did you mean "http.addr"?`,
				`/c.yaml:1: unknown key "redis.adr"`,
				"/c.yaml:1: routes.a.answerers[1] must be a single value, not a list",
				"/c.yaml:1: routes.a.to must be a single value, not a list",
			},
		},
		{
			name: "keys that are null, numbers, lists",
			yaml: "1: x\n~: y\nlog:\n  null: z\nroutes:\n  ~: {to: web}\n? [a]\n: b\n",
			want: []string{
				`/c.yaml:1: unknown key "1"`,
				`/c.yaml:2: unknown key "~"`,
				`/c.yaml:4: unknown key "log.null"`,
				`/c.yaml:6: key "routes.~" is null; quote it to use it as a name`,
				"/c.yaml:7: a key must be a single value, not a list",
			},
		},
		{
			name: "an alias of a section with a key it does not know",
			yaml: "redis: &r\n  prefix: a\n  url: redis://r:6379\nhttp: *r\n",
			want: []string{
				`/c.yaml:2: unknown key "http.prefix"`,
				`/c.yaml:3: unknown key "http.url"`,
			},
		},
		{
			name: "an alias of a list where a single value belongs",
			yaml: "log: &l\n  level: *l\n",
			want: []string{"/c.yaml:1: log.level must be a single value, not a mapping"},
		},
		{
			name: "an alias of an unknown anchor",
			yaml: "log:\n  level: info\nhttp:\n  addr: *addr\n",
			want: []string{"/c.yaml:4: unknown anchor 'addr' referenced"},
		},
		{
			name: "a merge key of a single value",
			yaml: "routes:\n  a: &a web\n  b:\n    <<: *a\n",
			want: []string{`/c.yaml:4: routes.b: the value of "<<" must be a mapping or a list of mappings`},
		},
		{
			name: "file values are named by their YAML path",
			yaml: "http:\n  addr: nowhere\nresultRetention: 2 days\nclaimIdle: 0s\nlog:\n  level: loud\nroutes:\n  ops:\n    to: irc:#ops\n",
			want: []string{
				`resultRetention: "2 days" is not a duration such as "24h", "90m" or "30s"`,
				`http.addr: "nowhere" is not host:port`,
				`claimIdle: 0s is out of range: from 1s to 1h0m0s`,
				`log.level: "loud" is not one of debug, info, warn, error`,
				`routes.ops.to: unknown platform "irc"`,
			},
		},
		{
			name: "a route's escalation ladder",
			yaml: "routes:\n  ops:\n    to: web\n    escalate:\n      - afterSeconds: 600\n        to: [ops, irc:#x, nowhere]\n      - afterSeconds: 300\n        to: web\n      - to: web\n      - afterSeconds: 900\n        to: web\n        when: later\n",
			want: []string{
				`/c.yaml:12: unknown key "routes.ops.escalate[3].when"`,
			},
		},
		{
			name: "a route's escalation ladder, checked",
			yaml: "routes:\n  ops:\n    to: web\n    escalate:\n      - afterSeconds: 600\n        to: [ops, irc:#x, \"\"]\n      - afterSeconds: 300\n        to: web\n      - to: web\n      - afterSeconds: 900\n        to: web\n",
			want: []string{
				`routes.ops.escalate: at most 3 steps (got 4)`,
				`routes.ops.escalate[0].to[0] names the route itself`,
				`routes.ops.escalate[0].to[1]: "irc:#x" is neither a route nor a target: unknown platform "irc"`,
				`routes.ops.escalate[0].to[2] must not be empty`,
				`routes.ops.escalate[1].afterSeconds (300) must be greater than the step before (600)`,
				`routes.ops.escalate[2].afterSeconds must be at least 1`,
			},
		},
		{
			name: "an unreadable file",
			vars: map[string]string{"ASKUSER_CONFIG": "/missing.yaml"},
			want: []string{"ASKUSER_CONFIG: open /missing.yaml: file does not exist"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := tc.vars
			if vars == nil {
				vars = map[string]string{"ASKUSER_CONFIG": "/c.yaml"}
			}
			_, err := Load(env(vars), files(map[string]string{"/c.yaml": tc.yaml}))
			got := problemsOf(t, err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(tc.want))
			}
		})
	}
}

func TestLoadYAMLEmptyAndMerge(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(*Config) bool
	}{
		{"empty file", "", func(c *Config) bool { return c.HTTP.Addr == DefaultHTTPAddr }},
		{"only comments", "# nothing\n", func(c *Config) bool { return c.DefaultRoute == "web" }},
		{"empty sections", "redis:\nhttp:\nroutes:\n", func(c *Config) bool { return c.Redis.Prefix == DefaultPrefix }},
		{"merge keys", "routes:\n  a: &a\n    to: web\n    answerers: [web:alice]\n  b:\n    <<: *a\n",
			func(c *Config) bool { return c.Routes["b"].To == "web" && c.Routes["b"].Answerers[0] == "web:alice" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(env(map[string]string{"ASKUSER_CONFIG": "/c.yaml"}), files(map[string]string{"/c.yaml": tc.yaml}))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("unexpected config %v", c)
			}
		})
	}
}

func TestSecret(t *testing.T) {
	fsys := files(map[string]string{"/s/url": "redis://:pw@r:6379\n", "/s/empty": "\n"})
	tests := []struct {
		name string
		vars map[string]string
		want string
		err  string
	}{
		{name: "unset", vars: nil, want: ""},
		{name: "variable", vars: map[string]string{"ASKUSER_REDIS_URL": " redis://r:6379 "}, want: "redis://r:6379"},
		{name: "file", vars: map[string]string{"ASKUSER_REDIS_URL_FILE": "/s/url"}, want: "redis://:pw@r:6379"},
		{name: "both", vars: map[string]string{"ASKUSER_REDIS_URL": "redis://r", "ASKUSER_REDIS_URL_FILE": "/s/url"},
			err: "ASKUSER_REDIS_URL and ASKUSER_REDIS_URL_FILE are both set; set only one"},
		{name: "missing file", vars: map[string]string{"ASKUSER_REDIS_URL_FILE": "/s/none"},
			err: "ASKUSER_REDIS_URL_FILE: open /s/none: file does not exist"},
		{name: "empty file", vars: map[string]string{"ASKUSER_REDIS_URL_FILE": "/s/empty"},
			err: "ASKUSER_REDIS_URL_FILE: /s/empty is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Secret(Lookup(env(tc.vars)), fsys, "ASKUSER_REDIS_URL")
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzLoadYAML: the file is written by hand. Whatever it holds, Load never
// panics, and every problem it reports says something; one about the file
// names its line when yaml knows one.
func FuzzLoadYAML(f *testing.F) {
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(example), "", "# only a comment\n", "~\n", "- a\n", "hello\n", "a: 1\n---\nb: 2\n",
		"log:\n  level: info\nlog:\n  level: debug\n", "http:\n  token: [x]\n",
		"routes:\n  a: &a\n    to: web\n    extra: 1\n  b:\n    <<: *a\n",
		"routes:\n  ops:\n    to: web\n    escalate:\n      - afterSeconds: soon\n        to: [[x]]\n",
		"{http: {adr: 1}, routes: {a: {answerers: [web:a, [web:b]]}}}\n",
		"1: x\n~: y\n? [a]\n: b\n", "log: &l\n  level: *l\n", "http:\n  addr: *nowhere\n",
		"routes:\n  a: &a web\n  b:\n    <<: *a\n", "http:\n  token: !!binary xx\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nroutes: {x: {answerers: *c}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Load(env(map[string]string{"ASKUSER_CONFIG": "/c.yaml"}), files(map[string]string{"/c.yaml": string(data)}))
		if err == nil {
			return
		}
		problems := problemsOf(t, err)
		if len(problems) == 0 {
			t.Fatalf("error %q without problems", err)
		}
		for _, p := range problems {
			if rest, ok := strings.CutPrefix(p, "/c.yaml"); ok && strings.TrimLeft(rest, ":0123456789 ") == "" || strings.TrimSpace(p) == "" {
				t.Errorf("problem %q says nothing", p)
			}
			if strings.HasPrefix(p, "/c.yaml:0:") {
				t.Errorf("problem %q names line 0", p)
			}
		}
	})
}
