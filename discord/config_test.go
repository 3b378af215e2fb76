package discord

import (
	"fmt"
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
		{"no token", Config{}, "discord: token is required"},
		{"only the prefix", Config{Token: "Bot "}, "discord: token is required"},
		{"two words", Config{Token: "Bot a b"}, "discord: token: must not contain spaces"},
		{"bad url", Config{Token: "t", APIURL: "discord.com"}, `discord: api url: "discord.com" must be an http:// or https:// URL`},
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
	if got := fmt.Sprintf("%#v", Config{Token: "s3cret", APIURL: "http://x/"}); got != "{Token:[redacted] APIURL:http://x/}" {
		t.Errorf("formatted: %s", got)
	}
	d := Config{}.withDefaults()
	if d.LeaseTTL+d.StandbyPoll > 15*time.Second || d.LeaseTTL > 10*time.Second || d.AckAfter >= 3*time.Second {
		t.Errorf("defaults miss the issue's bounds: lease %s, poll %s, ack %s", d.LeaseTTL, d.StandbyPoll, d.AckAfter)
	}
}
