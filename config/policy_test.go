package config

import (
	"errors"
	"reflect"
	"testing"

	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/telegram"
)

// The policy settings load from the environment and the file, and a bad
// value is refused naming the setting the way the operator wrote it.
func TestLoadTargetsPolicy(t *testing.T) {
	tests := []struct {
		name  string
		vars  map[string]string
		yaml  string
		check func(t *testing.T, c *Config)
		want  []string // nil: valid
	}{
		{name: "default is any", check: func(t *testing.T, c *Config) {
			if c.Targets != TargetsAny || c.Chats != (Chats{}) {
				t.Errorf("Targets %q, Chats %+v", c.Targets, c.Chats)
			}
		}},
		{name: "routes-only, any case", vars: map[string]string{"ASKUSER_TARGETS": "Routes-Only"}, check: func(t *testing.T, c *Config) {
			if c.Targets != TargetsRoutesOnly {
				t.Errorf("Targets %q", c.Targets)
			}
		}},
		{name: "every list", vars: allOn(map[string]string{
			"ASKUSER_TELEGRAM_CHATS":   "-1001234567890, 123456789",
			"ASKUSER_DISCORD_CHANNELS": "123456789012345678,@112233445566778899",
			"ASKUSER_SLACK_CHANNELS":   "C0123456789,G0123456789,D0123456789,U0123ABCDEF,W0123ABCDEF",
		}), check: func(t *testing.T, c *Config) {
			want := Chats{
				Telegram: "-1001234567890, 123456789",
				Discord:  "123456789012345678,@112233445566778899",
				Slack:    "C0123456789,G0123456789,D0123456789,U0123ABCDEF,W0123ABCDEF",
			}
			if c.Chats != want {
				t.Errorf("Chats %+v", c.Chats)
			}
			if got := platformNamed("telegram").allowed(c); !reflect.DeepEqual(got, []string{"-1001234567890", "123456789"}) {
				t.Errorf("telegram list %q", got)
			}
		}},
		{name: "from the file", vars: allOn(nil),
			yaml: "targets: routes-only\ntelegram:\n  chats: \"-100123\"\ndiscord:\n  channels: \"123456789012345678\"\nslack:\n  channels: C0123456789\n",
			check: func(t *testing.T, c *Config) {
				if c.Targets != TargetsRoutesOnly || c.Chats != (Chats{Telegram: "-100123", Discord: "123456789012345678", Slack: "C0123456789"}) {
					t.Errorf("Targets %q, Chats %+v", c.Targets, c.Chats)
				}
			}},
		{name: "an unknown policy", vars: map[string]string{"ASKUSER_TARGETS": "routes_only"},
			want: []string{`ASKUSER_TARGETS: "routes_only" is not one of any, routes-only`}},
		{name: "an unknown policy in the file", yaml: "targets: none\n",
			want: []string{`targets: "none" is not one of any, routes-only`}},
		{name: "bad ids", vars: allOn(map[string]string{
			"ASKUSER_TELEGRAM_CHATS":   "-100123,@ops",
			"ASKUSER_DISCORD_CHANNELS": "general",
			"ASKUSER_SLACK_CHANNELS":   "C0123456789,#general",
		}), want: []string{
			`ASKUSER_TELEGRAM_CHATS: "telegram:@ops": a Telegram chat id is an integer such as 123456789 or -1001234567890`,
			`ASKUSER_DISCORD_CHANNELS: "discord:general": a Discord target is discord:<channel id> or discord:@<user id>, with a numeric id`,
			`ASKUSER_SLACK_CHANNELS: "slack:#general": a Slack target is a channel id (C…, G…, D…) or a user id (U…, W…), not a name`,
		}},
		{name: "a bad id in the file", vars: allOn(nil), yaml: "telegram:\n  chats: ops\n",
			want: []string{`telegram.chats: "telegram:ops": a Telegram chat id is an integer such as 123456789 or -1001234567890`}},
		{name: "a list of nothing", vars: allOn(map[string]string{"ASKUSER_SLACK_CHANNELS": " , "}),
			want: []string{`ASKUSER_SLACK_CHANNELS: lists no channel id`}},
		{name: "a list for a platform that is off", vars: map[string]string{"ASKUSER_TELEGRAM_CHATS": "-100123"},
			want: []string{"ASKUSER_TELEGRAM_CHATS is set but Telegram is off: set ASKUSER_TELEGRAM_TOKEN (or ASKUSER_TELEGRAM_TOKEN_FILE) to turn it on, or remove this setting"}},
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
			if tc.want != nil {
				if got := problemsOf(t, err); !reflect.DeepEqual(got, tc.want) {
					t.Errorf("problems:\n%s\nwant:\n%s", joinProblems(got), joinProblems(tc.want))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// policyConfig has every platform on and two routes; the default route is
// a direct target the lists do not hold.
func policyConfig() *Config {
	c := Default()
	c.Telegram = &telegram.Config{Token: tgToken}
	c.Discord = &discord.Config{Token: discordToken}
	c.Slack = &slack.Config{BotToken: slackBot, AppToken: slackApp}
	c.Routes = map[string]Route{
		"ops":    {To: "telegram:-100999", Answerers: []string{"telegram:1"}},
		"oncall": {To: "discord:@112233445566778899"},
	}
	c.DefaultRoute = "telegram:-100777"
	return c
}

func TestResolvePolicy(t *testing.T) {
	routesOnly := func(c *Config) { c.Targets = TargetsRoutesOnly }
	lists := func(c *Config) {
		c.Chats = Chats{Telegram: "-100123, 42", Discord: "123456789012345678,@223344556677889900", Slack: "C0123456789,U0123ABCDEF"}
	}
	tests := []struct {
		name   string
		policy func(*Config)
		to     string
		want   Route
		err    string
		is     error
	}{
		// routes-only
		{name: "routes-only refuses a direct target", policy: routesOnly, to: "telegram:-100123",
			err: "direct targets are not allowed (ASKUSER_TARGETS=routes-only); use a route: oncall, ops", is: ErrNotAllowed},
		{name: "routes-only refuses the web target", policy: routesOnly, to: "web",
			err: "direct targets are not allowed (ASKUSER_TARGETS=routes-only); use a route: oncall, ops", is: ErrNotAllowed},
		{name: "routes-only refuses a target that does not parse", policy: routesOnly, to: "telegram:abc",
			err: "direct targets are not allowed (ASKUSER_TARGETS=routes-only); use a route: oncall, ops", is: ErrNotAllowed},
		{name: "routes-only accepts a route", policy: routesOnly, to: "ops",
			want: Route{To: "telegram:-100999", Answerers: []string{"telegram:1"}}},
		{name: "routes-only accepts no to: the default route", policy: routesOnly, to: "",
			want: Route{To: "telegram:-100777"}},
		{name: "routes-only still names an unknown route", policy: routesOnly, to: "nowhere",
			err: `unknown route "nowhere"`, is: ErrUnknownRoute},
		{name: "a misspelt policy fails closed", policy: func(c *Config) { c.Targets = "routes_only" }, to: "web",
			err: "direct targets are not allowed (ASKUSER_TARGETS=routes_only); use a route: oncall, ops", is: ErrNotAllowed},
		{name: "any accepts a direct target", policy: func(*Config) {}, to: "telegram:-100555", want: Route{To: "telegram:-100555"}},
		{name: "empty means any", policy: func(c *Config) { c.Targets = "" }, to: "web", want: Route{To: "web"}},

		// Lists of chats
		{name: "telegram: a chat not in the list", policy: lists, to: "telegram:-100555",
			err: "telegram chat -100555 is not in ASKUSER_TELEGRAM_CHATS", is: ErrNotAllowed},
		{name: "telegram: a chat in the list", policy: lists, to: "telegram:42", want: Route{To: "telegram:42"}},
		{name: "discord: a channel not in the list", policy: lists, to: "discord:876543210987654321",
			err: "discord channel 876543210987654321 is not in ASKUSER_DISCORD_CHANNELS", is: ErrNotAllowed},
		{name: "discord: a DM not in the list", policy: lists, to: "discord:@123456789012345678",
			err: "discord DM @123456789012345678 is not in ASKUSER_DISCORD_CHANNELS", is: ErrNotAllowed},
		{name: "discord: a channel in the list", policy: lists, to: "discord:123456789012345678", want: Route{To: "discord:123456789012345678"}},
		{name: "discord: a DM in the list", policy: lists, to: "discord:@223344556677889900", want: Route{To: "discord:@223344556677889900"}},
		{name: "slack: a channel not in the list", policy: lists, to: "slack:C9999999999",
			err: "slack channel C9999999999 is not in ASKUSER_SLACK_CHANNELS", is: ErrNotAllowed},
		{name: "slack: a DM not in the list", policy: lists, to: "slack:W0123ABCDEF",
			err: "slack DM W0123ABCDEF is not in ASKUSER_SLACK_CHANNELS", is: ErrNotAllowed},
		{name: "slack: a channel in the list", policy: lists, to: "slack:C0123456789", want: Route{To: "slack:C0123456789"}},
		{name: "slack: a DM in the list", policy: lists, to: "slack:U0123ABCDEF", want: Route{To: "slack:U0123ABCDEF"}},
		{name: "a list bounds only its platform", policy: func(c *Config) { c.Chats.Telegram = "42" }, to: "slack:C9999999999",
			want: Route{To: "slack:C9999999999"}},
		{name: "the web target is not bounded by the lists", policy: lists, to: "web", want: Route{To: "web"}},
		{name: "a route to a chat not in the list", policy: lists, to: "ops",
			want: Route{To: "telegram:-100999", Answerers: []string{"telegram:1"}}},
		{name: "the default route to a chat not in the list", policy: lists, to: "",
			want: Route{To: "telegram:-100777"}},
		{name: "a bad target is named before the list", policy: lists, to: "telegram:abc",
			err: `"telegram:abc": a Telegram chat id is an integer such as 123456789 or -1001234567890`, is: ErrBadTarget},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := policyConfig()
			tc.policy(c)
			got, err := c.Resolve(tc.to)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if !errors.Is(err, tc.is) {
					t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}

	t.Run("routes-only without routes says to leave out to", func(t *testing.T) {
		c := Default()
		c.Targets = TargetsRoutesOnly
		_, err := c.Resolve("web")
		if want := "direct targets are not allowed (ASKUSER_TARGETS=routes-only); leave out to for the default route"; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
		if r, err := c.Resolve(""); err != nil || r.To != "web" {
			t.Errorf("Resolve(\"\") = %+v, %v", r, err)
		}
	})
	t.Run("a refusal names the key the operator wrote", func(t *testing.T) {
		vars := allOn(map[string]string{"ASKUSER_CONFIG": "/c.yaml", "ASKUSER_TELEGRAM_CHATS": "42"})
		c, err := Load(env(vars), files(map[string]string{"/c.yaml": "targets: any\n"}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Resolve("telegram:43"); err == nil || err.Error() != "telegram chat 43 is not in ASKUSER_TELEGRAM_CHATS" {
			t.Errorf("err = %v", err)
		}
		c.Targets = TargetsRoutesOnly
		if _, err := c.Resolve("telegram:42"); err == nil || err.Error() != "direct targets are not allowed (targets=routes-only); leave out to for the default route" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("the default route is the operator's under routes-only", func(t *testing.T) {
		vars := allOn(map[string]string{"ASKUSER_TARGETS": "routes-only", "ASKUSER_TELEGRAM_CHATS": "42", "ASKUSER_DEFAULT_TO": "telegram:-100777"})
		c, err := Load(env(vars), noFiles(t))
		if err != nil {
			t.Fatalf("a direct default route is refused: %v", err)
		}
		if r, err := c.Resolve(""); err != nil || r.To != "telegram:-100777" {
			t.Errorf("Resolve(\"\") = %+v, %v", r, err)
		}
	})
	t.Run("a route's ladder is the operator's", func(t *testing.T) {
		c := policyConfig()
		c.Targets = TargetsRoutesOnly
		c.Chats.Telegram = "42"
		for _, to := range []string{"telegram:-100555", "web", "ops"} {
			if _, err := c.Resolve(to); to != "ops" && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("Resolve(%q): %v, want ErrNotAllowed", to, err)
			}
			if _, err := c.ResolveLadder(to); err != nil {
				t.Errorf("ResolveLadder(%q): %v", to, err)
			}
		}
		if _, err := c.ResolveLadder("telegram:abc"); !errors.Is(err, ErrBadTarget) {
			t.Errorf("ResolveLadder of a bad target: %v", err)
		}
	})
}
