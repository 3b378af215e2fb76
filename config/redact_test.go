package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/discord"
)

// callbackSecret signs the result callbacks in these tests.
const callbackSecret = "cb-Secret-7f3a9d2e41"

// secretsConfig loads a configuration with every secret set.
const (
	smtpURLPass = "urlpass-Qw7Rt9Yp"
	smtpPass    = "smtppass-Zx4Cv8Bn"
	linkSecret  = "linksecret-0123456789abcdefghijklmnop"
	matrixToken = "syt_YXNrYnJpZGdl_MatrixSecret_1a2b3c"
)

func secretsConfig(t *testing.T) (*Config, []string) {
	t.Helper()
	vars := map[string]string{
		"ASKUSER_REDIS_URL":               "redis://bridge:" + redisPass + "@redis:6379/0",
		"ASKUSER_HTTP_ADDR":               ":8080",
		"ASKUSER_HTTP_TOKEN":              httpToken,
		"ASKUSER_TELEGRAM_TOKEN":          tgToken,
		"ASKUSER_TELEGRAM_WEBHOOK_URL":    "https://bridge.example.com/tg",
		"ASKUSER_TELEGRAM_WEBHOOK_SECRET": hookSecret,
		"ASKUSER_DISCORD_TOKEN":           discordToken,
		"ASKUSER_SLACK_BOT_TOKEN":         slackBot,
		"ASKUSER_SLACK_APP_TOKEN":         slackApp,
		"ASKUSER_SLACK_SIGNING_SECRET":    slackSigning,
		"ASKUSER_CALLBACK_SECRET":         callbackSecret,
		"ASKUSER_CALLBACK_HOSTS":          "agents.example.com",
		"ASKUSER_MATRIX_TOKEN":            matrixToken,
		"ASKUSER_MATRIX_HOMESERVER":       "https://matrix.example.org",
		"ASKUSER_MATRIX_USER":             "@askbridge:example.org",
		"ASKUSER_SMTP_URL":                "smtps://relay:" + smtpURLPass + "@smtp.example.com",
		"ASKUSER_SMTP_USER":               "bridge",
		"ASKUSER_SMTP_PASSWORD":           smtpPass,
		"ASKUSER_SMTP_FROM":               "Ask <ask@example.com>",
		"ASKUSER_PUBLIC_URL":              "https://ask.example.com",
		"ASKUSER_LINK_SECRET":             linkSecret,
	}
	c, err := Load(env(vars), noFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	return c, []string{redisPass, httpToken, tgToken, hookSecret, discordToken, slackBot, slackApp, slackSigning, callbackSecret, smtpURLPass, smtpPass, linkSecret, matrixToken,
		// distinctive parts, in case a secret is printed cut or escaped
		"AAHdqTcvCH1vGWJx", "GhIjKl", "AbCdEfGhIjKl", "abcdef0123456789", "99yyyzzz"}
}

func assertNoSecret(t *testing.T, what, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s shows secret %q:\n%s", what, s, out)
		}
	}
}

func TestRedactionFmt(t *testing.T) {
	c, secrets := secretsConfig(t)
	c.Routes["ops"] = Route{To: "telegram:-100123", Answerers: []string{"telegram:1"}}
	values := []struct {
		name string
		v    any
	}{
		{"*Config", c},
		{"Config", *c},
		{"Redis", c.Redis},
		{"HTTP", c.HTTP},
		{"*Telegram", c.Telegram},
		{"Telegram", *c.Telegram},
		{"*Discord", c.Discord},
		{"*Slack", c.Slack},
		{"Slack", *c.Slack},
		{"in a slice", []any{c, c.Telegram}},
		{"in a struct", struct{ C *Config }{c}},
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%10.3v"}
	for _, tc := range values {
		for _, verb := range verbs {
			t.Run(tc.name+" "+verb, func(t *testing.T) {
				assertNoSecret(t, verb, fmt.Sprintf(verb, tc.v), secrets)
			})
		}
	}
	t.Run("Sprint and Sprintln", func(t *testing.T) {
		assertNoSecret(t, "Sprint", fmt.Sprint(c, *c.Slack), secrets)
		assertNoSecret(t, "Sprintln", fmt.Sprintln(c), secrets)
	})
}

func TestRedactedForm(t *testing.T) {
	c, _ := secretsConfig(t)
	c.Replica = "r1"
	c.Routes["ops"] = Route{To: "telegram:-100123", Answerers: []string{"telegram:1"}}
	c.Discord = nil
	c.Targets, c.Chats.Telegram = TargetsRoutesOnly, "-100123,-100456"
	c.MaxPendingPerAgent = 50
	want := "{Redis:{URL:redis://bridge:xxxxx@redis:6379/0 EmbeddedAddr:127.0.0.1:6380 Prefix:askuser: DataDir:} " +
		"HTTP:{Addr::8080 Token:[redacted] Origins: MaxEventStreams:100 MCPMaxCalls:64 MCPMaxWait:50s MCPElicit:on MetricsAddr: PprofAddr:} Replica:r1 DefaultRoute:web " +
		"Routes:map[ops:{To:telegram:-100123 Answerers:[telegram:1] Locale: Escalate:[] Links:false}] Targets:routes-only Chats:{Telegram:-100123,-100456 Discord: Slack: Matrix: Email:} MaxPendingPerAgent:50 Retention:24h0m0s ClaimIdle:30s StopGrace:20s " +
		"Telegram:{Token:[redacted] APIURL:https://api.telegram.org WebhookURL:https://bridge.example.com/tg WebhookSecret:[redacted]} " +
		"Discord:off " +
		"Slack:{BotToken:[redacted] AppToken:[redacted] APIURL:https://slack.com/api/ SigningSecret:[redacted]} Matrix:{Homeserver:https://matrix.example.org User:@askbridge:example.org Token:[redacted] AutoJoin:} Email:{SMTPURL:[redacted] User:bridge Password:[redacted] From:Ask <ask@example.com> CAFile:} PublicURL:https://ask.example.com LinkSecret:[redacted] LogLevel:info Locale:en " +
		"Callback:{Secret:[redacted] Hosts:agents.example.com HTTPHosts: PrivateHosts:}}"
	tests := []struct{ name, got, want string }{
		{"%v", fmt.Sprintf("%v", c), want},
		{"%+v", fmt.Sprintf("%+v", c), want},
		{"String", c.String(), want},
		{"unset secrets are empty", fmt.Sprint(HTTP{Addr: "127.0.0.1:1"}), "{Addr:127.0.0.1:1 Token: Origins: MaxEventStreams:0 MCPMaxCalls:0 MCPMaxWait:0s MCPElicit: MetricsAddr: PprofAddr:}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", tc.got, tc.want)
			}
		})
	}
}

func TestRedactedURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"redis://redis:6379", "redis://redis:6379"},
		{"redis://:" + redisPass + "@redis:6379/1", "redis://:xxxxx@redis:6379/1"},
		{"rediss://user:" + redisPass + "@redis:6380", "rediss://user:xxxxx@redis:6380"},
		{"redis://" + redisPass + "@redis:6379", "redis://xxxxx@redis:6379"},
		{"redis-sentinel://s1:26379/m?sentinel_password=" + redisPass + "&db=2", "redis-sentinel://s1:26379/m?db=2&sentinel_password=xxxxx"},
		{"redis://:" + redisPass + "@redis:port", "[redacted]"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := (Redis{URL: tc.in}).RedactedURL(); got != tc.want {
				t.Errorf("RedactedURL() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRedactionSlogAndJSON(t *testing.T) {
	c, secrets := secretsConfig(t)
	tests := []struct {
		name string
		out  func() string
	}{
		{"slog JSON", func() string {
			var b bytes.Buffer
			slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "config", c, "telegram", c.Telegram, "redis", c.Redis)
			return b.String()
		}},
		{"slog text", func() string {
			var b bytes.Buffer
			slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", c, "slack", c.Slack)
			return b.String()
		}},
		{"json.Marshal", func() string {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out()
			assertNoSecret(t, tc.name, out, secrets)
			if tc.name != "json.Marshal" && !strings.Contains(out, "[redacted]") {
				t.Errorf("no redaction marker in %s", out)
			}
		})
	}
	t.Run("slog shows the settings", func(t *testing.T) {
		c.Targets, c.Chats.Telegram = TargetsRoutesOnly, "-100123"
		var b bytes.Buffer
		slog.New(slog.NewJSONHandler(&b, nil)).Info("config", "config", c)
		var rec struct {
			Config struct {
				Redis    struct{ URL string }
				HTTP     struct{ Addr string }
				Targets  string
				Chats    struct{ Telegram string }
				Telegram struct{ WebhookURL string }
				Discord  struct{ APIURL string }
			}
		}
		if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Config.Redis.URL != "redis://bridge:xxxxx@redis:6379/0" || rec.Config.HTTP.Addr != ":8080" ||
			rec.Config.Targets != TargetsRoutesOnly || rec.Config.Chats.Telegram != "-100123" ||
			rec.Config.Telegram.WebhookURL != "https://bridge.example.com/tg" || rec.Config.Discord.APIURL != discord.DefaultAPIURL {
			t.Errorf("log record %s", b.String())
		}
	})
}

// Messages about a bad secret never quote it.
func TestRedactionInErrors(t *testing.T) {
	badTg := "123:bad token " + redisPass
	tests := []struct {
		name   string
		vars   map[string]string
		secret string
	}{
		{"redis url with a bad port", map[string]string{"ASKUSER_REDIS_URL": "redis://u:" + redisPass + "@redis:port"}, redisPass},
		{"redis url with a bad scheme", map[string]string{"ASKUSER_REDIS_URL": "https://u:" + redisPass + "@redis"}, redisPass},
		{"redis url without host", map[string]string{"ASKUSER_REDIS_URL": "redis://u:" + redisPass + "@/0"}, redisPass},
		{"redis url with a bad escape", map[string]string{"ASKUSER_REDIS_URL": "redis://u:" + redisPass + "%zz@redis"}, redisPass},
		{"telegram token", map[string]string{"ASKUSER_TELEGRAM_TOKEN": badTg}, redisPass},
		{"webhook secret", map[string]string{"ASKUSER_TELEGRAM_TOKEN": tgToken, "ASKUSER_TELEGRAM_WEBHOOK_URL": "https://x.example.com/", "ASKUSER_TELEGRAM_WEBHOOK_SECRET": redisPass + "!"}, redisPass},
		{"webhook secret without webhook", map[string]string{"ASKUSER_TELEGRAM_TOKEN": tgToken, "ASKUSER_TELEGRAM_WEBHOOK_SECRET": redisPass}, redisPass},
		{"http token", map[string]string{"ASKUSER_HTTP_TOKEN": "x" + redisPass + " y"}, redisPass},
		{"short http token", map[string]string{"ASKUSER_HTTP_TOKEN": "abc123"}, "abc123"},
		{"discord token", map[string]string{"ASKUSER_DISCORD_TOKEN": redisPass + " x"}, redisPass},
		{"slack bot token", map[string]string{"ASKUSER_SLACK_BOT_TOKEN": "xapp-" + redisPass, "ASKUSER_SLACK_SIGNING_SECRET": slackSigning}, redisPass},
		{"slack app token", map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackBot, "ASKUSER_SLACK_APP_TOKEN": "xoxb-" + redisPass}, redisPass},
		{"slack signing secret", map[string]string{"ASKUSER_SLACK_BOT_TOKEN": slackBot, "ASKUSER_SLACK_SIGNING_SECRET": redisPass + " x"}, redisPass},
		{"secret with both variables", map[string]string{"ASKUSER_DISCORD_TOKEN": redisPass, "ASKUSER_DISCORD_TOKEN_FILE": "/x"}, redisPass},
		{"slack token without bot token", map[string]string{"ASKUSER_SLACK_APP_TOKEN": redisPass}, redisPass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(env(tc.vars), files(nil))
			if err == nil {
				t.Fatal("no error")
			}
			assertNoSecret(t, "error", err.Error(), []string{tc.secret})
		})
	}
	t.Run("secrets in a YAML type error", func(t *testing.T) {
		_, err := Load(env(map[string]string{"ASKUSER_CONFIG": "/c.yaml"}), files(map[string]string{"/c.yaml": "http:\n  token: [" + redisPass + "]\n"}))
		if err == nil {
			t.Fatal("no error")
		}
		assertNoSecret(t, "error", err.Error(), []string{redisPass, "p4ssw0"})
	})
	t.Run("secrets in a single value where a mapping belongs", func(t *testing.T) {
		_, err := Load(env(map[string]string{"ASKUSER_CONFIG": "/c.yaml"}), files(map[string]string{"/c.yaml": "redis: redis://:" + redisPass + "@r\nmaxPendingPerAgent: {a: " + redisPass + "}\n"}))
		if err == nil {
			t.Fatal("no error")
		}
		assertNoSecret(t, "error", err.Error(), []string{redisPass, "p4ssw0"})
	})
	t.Run("a YAML type error never quotes the value", func(t *testing.T) {
		msg := atLine("/c.yaml", quotedValue().ReplaceAllString("line 3: cannot unmarshal !!str `p4ssw0r...` into int", ""))
		if msg != "/c.yaml:3: cannot unmarshal !!str into int" {
			t.Errorf("got %q", msg)
		}
	})
}
