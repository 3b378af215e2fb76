package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testwait"
)

// TestFailingPlatformsDoNotStopTheBridge turns every platform on against
// servers that are not there: the bridge starts, /readyz shows each
// platform's trouble, and the web page keeps answering questions.
func TestFailingPlatformsDoNotStopTheBridge(t *testing.T) {
	nowhere := "http://" + freeAddr(t) + "/"
	b := startBridge(t, map[string]string{
		"ASKUSER_TELEGRAM_TOKEN":   "123456:test-token",
		"ASKUSER_TELEGRAM_API_URL": strings.TrimSuffix(nowhere, "/"),
		"ASKUSER_DISCORD_TOKEN":    "discord-test-token",
		"ASKUSER_DISCORD_API_URL":  nowhere,
		"ASKUSER_SLACK_BOT_TOKEN":  "xoxb-test",
		"ASKUSER_SLACK_APP_TOKEN":  "xapp-test",
		"ASKUSER_SLACK_API_URL":    nowhere + "api/",
	})
	var ready struct {
		Ready    bool
		Channels map[string]string
	}
	var body string
	if !testwait.Until(10*time.Second, func() bool {
		_, body = b.get(t, "/readyz")
		if err := json.Unmarshal([]byte(body), &ready); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, p := range []string{"telegram", "discord", "slack"} {
			if s := ready.Channels[p]; s != "" && s != "connected" && s != "standby" {
				bad++
			}
		}
		return bad == 3
	}) {
		t.Fatalf("/readyz never showed the platforms failing: %s", body)
	}
	if !ready.Ready || ready.Channels["web"] != "connected" {
		t.Errorf("the bridge is not ready: %+v", ready)
	}
	// The metrics show each platform's failing calls and its state, and
	// never a token.
	_, metrics := b.get(t, "/metrics")
	for _, p := range []string{"telegram", "discord", "slack"} {
		if !regexp.MustCompile(`askbridge_platform_call_duration_seconds_count\{method="[^"]+",platform="` + p + `"\} [1-9]`).MatchString(metrics) {
			t.Errorf("no %s call timed:\n%s", p, grepLines(metrics, "askbridge_platform_call_duration_seconds_count"))
		}
		// It may have moved on since /readyz (retrying, connecting again).
		in := regexp.MustCompile(`askbridge_channel_state\{platform="`+p+`",state="[a-z_]+"\} 1`).FindAllString(metrics, -1)
		if len(in) != 1 || !strings.Contains(metrics, `askbridge_channel_state{platform="`+p+`",state="connected"} 0`) {
			t.Errorf("%s is not in one state, or is connected:\n%s", p, grepLines(metrics, "askbridge_channel_state"))
		}
	}
	for _, token := range []string{"test-token", "xoxb-test", "xapp-test"} {
		if strings.Contains(metrics, token) {
			t.Errorf("the metrics hold a token (%s)", token)
		}
	}
	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	res := askAsync(context.Background(), env, "--question", "Still there?", "--option", "Yes", "--option", "No", "--id", "alive-1", "--to", "web")
	waitOpen(t, b, "alive-1")
	answerOnPage(t, b, "alive-1", `{"answers":{"answer":["Yes"]}}`)
	if r := <-res; r.code != exitAnswered {
		t.Errorf("ask: exit %d %s", r.code, r.stderr)
	}
	if strings.Contains(b.stderr.String(), "test-token") || strings.Contains(b.stderr.String(), "xoxb-test") {
		t.Errorf("a token was logged")
	}
}
