package config

import (
	"os"
	"reflect"
	"testing"
	"time"
)

const examplePath = "../config.example.yaml"

// The documented example loads with the tokens it names, and says what it
// documents.
func TestExampleFile(t *testing.T) {
	vars := map[string]string{
		"ASKUSER_CONFIG":          examplePath,
		"ASKUSER_TELEGRAM_TOKEN":  tgToken,
		"ASKUSER_DISCORD_TOKEN":   discordToken,
		"ASKUSER_SLACK_BOT_TOKEN": slackBot,
		"ASKUSER_SLACK_APP_TOKEN": slackApp,
	}
	c, err := Load(env(vars), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"redis.url", c.Redis.URL, ""},
		{"redis.embeddedAddr", c.Redis.EmbeddedAddr, "127.0.0.1:6380"},
		{"redis.prefix", c.Redis.Prefix, "askuser:"},
		{"http.addr", c.HTTP.Addr, "127.0.0.1:8080"},
		{"http.token", c.HTTP.Token, ""},
		{"http.origins", c.HTTP.Origins, ""},
		{"http.maxEventStreams", c.HTTP.MaxEventStreams, 100},
		{"http.metricsAddr", c.HTTP.MetricsAddr, ""},
		{"redis.dataDir", c.Redis.DataDir, ""},
		{"defaultRoute", c.DefaultRoute, "ops"},
		{"targets", c.Targets, TargetsRoutesOnly},
		{"telegram.chats", c.Chats.Telegram, ""},
		{"discord.channels", c.Chats.Discord, ""},
		{"slack.channels", c.Chats.Slack, ""},
		{"resultRetention", c.Retention, 48 * time.Hour},
		{"claimIdle", c.ClaimIdle, 30 * time.Second},
		{"routes", c.Routes, map[string]Route{
			"ops":      {To: "telegram:-1001234567890", Answerers: []string{"telegram:123456789", "telegram:987654321"}},
			"releases": {To: "slack:C0123456789", Answerers: []string{"slack:U0123ABCDEF"}, Locale: "th"},
			"oncall": {To: "discord:@112233445566778899", Escalate: []Step{
				{AfterSeconds: 900, To: StepTo{"ops"}}, {AfterSeconds: 1800, To: StepTo{"releases", "desk"}},
			}},
			"desk": {To: "web"},
		}},
		{"telegram.apiURL", c.Telegram.APIURL, "https://api.telegram.org"},
		{"telegram.webhookURL", c.Telegram.WebhookURL, ""},
		{"discord.apiURL", c.Discord.APIURL, "https://discord.com/"},
		{"slack.apiURL", c.Slack.APIURL, "https://slack.com/api/"},
		{"slack socket mode", c.Slack.AppToken != "", true},
		{"log.level", c.LogLevel, "info"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	t.Run("default route resolves", func(t *testing.T) {
		r, err := c.Resolve("")
		if err != nil || r.To != "telegram:-1001234567890" {
			t.Errorf("Resolve(\"\") = %+v, %v", r, err)
		}
	})
}

// Without the tokens, the example's platform settings and routes are
// reported, each by its YAML key.
func TestExampleFileNeedsTokens(t *testing.T) {
	_, err := Load(env(map[string]string{"ASKUSER_CONFIG": examplePath}), os.ReadFile)
	want := []string{
		"telegram.apiURL is set but Telegram is off: set ASKUSER_TELEGRAM_TOKEN (or ASKUSER_TELEGRAM_TOKEN_FILE) to turn it on, or remove this setting",
		"discord.apiURL is set but Discord is off: set ASKUSER_DISCORD_TOKEN (or ASKUSER_DISCORD_TOKEN_FILE) to turn it on, or remove this setting",
		"slack.apiURL is set but Slack is off: set ASKUSER_SLACK_BOT_TOKEN (or ASKUSER_SLACK_BOT_TOKEN_FILE) to turn it on, or remove this setting",
		`routes.oncall.to: Discord is off (no ASKUSER_DISCORD_TOKEN), so "discord:@112233445566778899" cannot be used`,
		`routes.ops.to: Telegram is off (no ASKUSER_TELEGRAM_TOKEN), so "telegram:-1001234567890" cannot be used`,
		`routes.releases.to: Slack is off (no ASKUSER_SLACK_BOT_TOKEN), so "slack:C0123456789" cannot be used`,
		`defaultRoute: Telegram is off (no ASKUSER_TELEGRAM_TOKEN), so "telegram:-1001234567890" cannot be used`,
	}
	got := problemsOf(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(want))
	}
}
