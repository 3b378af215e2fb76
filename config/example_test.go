package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

const examplePath = "../config.example.yaml"

// A copy of the example starts as it is: with an empty environment (only
// ASKUSER_CONFIG naming it) it loads, every platform is off, and a
// request without `to` goes to the web page.
func TestExampleFileLoadsAsIs(t *testing.T) {
	c, err := Load(env(map[string]string{"ASKUSER_CONFIG": examplePath}), os.ReadFile)
	if err != nil {
		t.Fatalf("config.example.yaml does not load as it is: %v", err)
	}
	if c.Telegram != nil || c.Discord != nil || c.Slack != nil {
		t.Errorf("a platform is on: telegram %v, discord %v, slack %v", c.Telegram != nil, c.Discord != nil, c.Slack != nil)
	}
	if r, err := c.Resolve(""); err != nil || r.To != "web" {
		t.Errorf("Resolve(\"\") = %+v, %v; want the web page", r, err)
	}
}

// exampleBlock is the first line of a commented-out part of the example:
// "# ", then a mapping key alone on its line, indented as it would be.
var exampleBlock = regexp.MustCompile(`^# ( *[A-Za-z][A-Za-z0-9_.-]*:)\s*$`)

// uncommented is the example with its commented-out parts (the platform
// sections and the routes to them) turned on, as the example tells an
// operator to: "# " removed from a block's first line (exampleBlock) and
// from every following line that starts with "#  ", up to the first that
// does not. Comments inside a block stay comments.
func uncommented(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	in, blocks := false, 0
	for i, l := range lines {
		switch {
		case exampleBlock.MatchString(l):
			in = true
			blocks++
		case in && strings.HasPrefix(l, "#  "):
		default:
			in = false
			continue
		}
		lines[i] = strings.TrimPrefix(l, "# ")
	}
	if blocks == 0 {
		t.Fatal("config.example.yaml has no commented-out section")
	}
	return strings.Join(lines, "\n")
}

// exampleOn reads the example with its commented-out parts turned on.
func exampleOn(t *testing.T) func(string) ([]byte, error) {
	return files(map[string]string{examplePath: uncommented(t)})
}

// With its platform sections turned on and the tokens it names, the
// example loads, and says what it documents.
func TestExampleFile(t *testing.T) {
	vars := map[string]string{
		"ASKUSER_CONFIG":          examplePath,
		"ASKUSER_TELEGRAM_TOKEN":  tgToken,
		"ASKUSER_DISCORD_TOKEN":   discordToken,
		"ASKUSER_SLACK_BOT_TOKEN": slackBot,
		"ASKUSER_SLACK_APP_TOKEN": slackApp,
		"ASKUSER_SMTP_URL":        "smtp://smtp.example.com",
		"ASKUSER_MATRIX_TOKEN":    matrixToken,
		"ASKUSER_SMTP_FROM":       "ask@example.com",
		"ASKUSER_PUBLIC_URL":      "https://ask.example.com",
		"ASKUSER_LINK_SECRET":     linkSecret,
	}
	c, err := Load(env(vars), exampleOn(t))
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
		{"http.mcpMaxCalls", c.HTTP.MCPMaxCalls, 64},
		{"http.metricsAddr", c.HTTP.MetricsAddr, ""},
		{"redis.dataDir", c.Redis.DataDir, ""},
		{"defaultRoute", c.DefaultRoute, "desk"},
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
			"desk":      {To: "web"},
			"approvers": {To: "email:approver@example.com"},
			"alice-dm":  {To: "telegram:123456789", Links: true},
		}},
		{"telegram.apiURL", c.Telegram.APIURL, "https://api.telegram.org"},
		{"telegram.webhookURL", c.Telegram.WebhookURL, ""},
		{"discord.apiURL", c.Discord.APIURL, "https://discord.com/"},
		{"slack.apiURL", c.Slack.APIURL, "https://slack.com/api/"},
		{"matrix.homeserver", c.Matrix.Homeserver, "https://matrix.example.org"},
		{"matrix.user", c.Matrix.User, "@askbridge:example.org"},
		{"slack socket mode", c.Slack.AppToken != "", true},
		{"log.level", c.LogLevel, "info"},
		{"log.format", c.LogFormat, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	t.Run("route resolves", func(t *testing.T) {
		r, err := c.Resolve("ops")
		if err != nil || r.To != "telegram:-1001234567890" {
			t.Errorf("Resolve(\"ops\") = %+v, %v", r, err)
		}
	})
}

// With its platform sections turned on but without the tokens, the
// example's platform settings and routes are reported, each by its YAML
// key.
func TestExampleFileNeedsTokens(t *testing.T) {
	_, err := Load(env(map[string]string{"ASKUSER_CONFIG": examplePath}), exampleOn(t))
	want := []string{
		"telegram.apiURL is set but Telegram is off: set ASKUSER_TELEGRAM_TOKEN (or ASKUSER_TELEGRAM_TOKEN_FILE) to turn it on, or remove this setting",
		"discord.apiURL is set but Discord is off: set ASKUSER_DISCORD_TOKEN (or ASKUSER_DISCORD_TOKEN_FILE) to turn it on, or remove this setting",
		"slack.apiURL is set but Slack is off: set ASKUSER_SLACK_BOT_TOKEN (or ASKUSER_SLACK_BOT_TOKEN_FILE) to turn it on, or remove this setting",
		"matrix.homeserver is set but Matrix is off: set ASKUSER_MATRIX_TOKEN (or ASKUSER_MATRIX_TOKEN_FILE) to turn it on, or remove this setting",
		"matrix.user is set but Matrix is off: set ASKUSER_MATRIX_TOKEN (or ASKUSER_MATRIX_TOKEN_FILE) to turn it on, or remove this setting",
		`routes.alice-dm.to: Telegram is off (no ASKUSER_TELEGRAM_TOKEN), so "telegram:123456789" cannot be used`,
		"routes.alice-dm.links needs answer links on: set ASKUSER_PUBLIC_URL and ASKUSER_LINK_SECRET",
		`routes.approvers.to: Email is off (no ASKUSER_SMTP_URL), so "email:approver@example.com" cannot be used`,
		`routes.oncall.to: Discord is off (no ASKUSER_DISCORD_TOKEN), so "discord:@112233445566778899" cannot be used`,
		`routes.ops.to: Telegram is off (no ASKUSER_TELEGRAM_TOKEN), so "telegram:-1001234567890" cannot be used`,
		`routes.releases.to: Slack is off (no ASKUSER_SLACK_BOT_TOKEN), so "slack:C0123456789" cannot be used`,
	}
	got := problemsOf(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(want))
	}
}
