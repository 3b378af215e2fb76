package discord

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"ok", Config{Token: "t"}, ""},
		{"ok with prefix", Config{Token: "Bot t", APIURL: "http://127.0.0.1:8082/"}, ""},
		{"no token", Config{}, "Token is required"},
		{"only the prefix", Config{Token: "Bot "}, "Token is required"},
		{"bad url", Config{Token: "t", APIURL: "discord.com"}, "APIURL"},
		{"lease too long", Config{Token: "t", LeaseTTL: 11 * time.Second}, "LeaseTTL"},
		{"ack too late", Config{Token: "t", AckAfter: 3 * time.Second}, "AckAfter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Validate() = %v, want %q", err, c.want)
			}
		})
	}
	if got := (Config{Token: " Bot abc "}).token(); got != "Bot abc" {
		t.Errorf("token() = %q", got)
	}
	d := Config{}.withDefaults()
	if d.LeaseTTL+d.StandbyPoll > 15*time.Second || d.LeaseTTL > 10*time.Second || d.AckAfter >= 3*time.Second {
		t.Errorf("defaults miss the issue's bounds: lease %s, poll %s, ack %s", d.LeaseTTL, d.StandbyPoll, d.AckAfter)
	}
}
