package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/telegram"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in             string
		platform, chat string
		err            string
	}{
		{in: "web", platform: "web"},
		{in: "mcp", platform: "mcp"},
		{in: "telegram:123456789", platform: "telegram", chat: "123456789"},
		{in: "telegram:-1001234567890", platform: "telegram", chat: "-1001234567890"},
		{in: "discord:123456789012345678", platform: "discord", chat: "123456789012345678"},
		{in: "discord:@123456789012345678", platform: "discord", chat: "@123456789012345678"},
		{in: "slack:C0123456789", platform: "slack", chat: "C0123456789"},
		{in: "slack:G0123456789", platform: "slack", chat: "G0123456789"},
		{in: "slack:D0123456789", platform: "slack", chat: "D0123456789"},
		{in: "slack:U0123456789", platform: "slack", chat: "U0123456789"},
		{in: "slack:W0123456789", platform: "slack", chat: "W0123456789"},
		{in: "", err: "empty target"},
		{in: "irc:#ops", err: `unknown platform "irc"`},
		{in: "Telegram:1", err: `unknown platform "Telegram"`},
		{in: "ops", err: `"ops" is not a target (want telegram:<chat id>, discord:<channel id>, discord:@<user id>, slack:<channel or user id>, matrix:<room id>, email:<address>, web or mcp)`},
		{in: "telegram", err: `"telegram" is not a target (want telegram:<chat id>, discord:<channel id>, discord:@<user id>, slack:<channel or user id>, matrix:<room id>, email:<address>, web or mcp)`},
		{in: "web:page", err: `"web:page": the web target takes no chat, write "web"`},
		{in: "mcp:x", err: `"mcp:x": the mcp target takes no chat, write "mcp"`},
		{in: "mcp:", err: `"mcp:": the mcp target takes no chat, write "mcp"`},
		{in: "telegram:", err: `"telegram:": a Telegram chat id is an integer such as 123456789 or -1001234567890`},
		{in: "telegram:@channel", err: `"telegram:@channel": a Telegram chat id is an integer such as 123456789 or -1001234567890`},
		{in: "telegram:0", err: `"telegram:0": a Telegram chat id is an integer such as 123456789 or -1001234567890`},
		{in: "telegram:99999999999999999999", err: `"telegram:99999999999999999999": a Telegram chat id is an integer such as 123456789 or -1001234567890`},
		{in: "discord:@", err: `"discord:@": a Discord target is discord:<channel id> or discord:@<user id>, with a numeric id`},
		{in: "discord:general", err: `"discord:general": a Discord target is discord:<channel id> or discord:@<user id>, with a numeric id`},
		{in: "discord:99999999999999999999", err: `"discord:99999999999999999999": a Discord target is discord:<channel id> or discord:@<user id>, with a numeric id`},
		{in: "slack:#general", err: `"slack:#general": a Slack target is a channel id (C…, G…, D…) or a user id (U…, W…), not a name`},
		{in: "slack:c0123", err: `"slack:c0123": a Slack target is a channel id (C…, G…, D…) or a user id (U…, W…), not a name`},
		{in: "slack:C", err: `"slack:C": a Slack target is a channel id (C…, G…, D…) or a user id (U…, W…), not a name`},
		{in: "telegram:" + strings.Repeat("1", 200), err: "target is longer than 200 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			platform, chat, err := ParseTarget(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || platform != tc.platform || chat != tc.chat {
				t.Errorf("= %q, %q, %v; want %q, %q", platform, chat, err, tc.platform, tc.chat)
			}
		})
	}
}

func TestParseAnswerer(t *testing.T) {
	tests := []struct {
		in             string
		platform, user string
		err            string
	}{
		{in: "telegram:123456789", platform: "telegram", user: "123456789"},
		{in: "discord:123456789012345678", platform: "discord", user: "123456789012345678"},
		{in: "slack:U0123ABCDEF", platform: "slack", user: "U0123ABCDEF"},
		{in: "slack:W0123ABCDEF", platform: "slack", user: "W0123ABCDEF"},
		{in: "web:alice@example.com", platform: "web", user: "alice@example.com"},
		{in: "mcp:alice@example.com", platform: "mcp", user: "alice@example.com"},
		{in: "mcp:client-1", platform: "mcp", user: "client-1"},
		{in: "mcp:-x", err: `"mcp:-x": "-x" is not a MCP client user id`},
		{in: "mcp:", err: `"mcp:": "" is not a MCP client user id`},
		{in: "alice", err: `"alice" must be <platform>:<user id> with platform telegram, discord, slack, matrix, email, web or mcp`},
		{in: "irc:bob", err: `"irc:bob" must be <platform>:<user id> with platform telegram, discord, slack, matrix, email, web or mcp`},
		{in: "web:", err: `"web:": "" is not a web user id`},
		{in: "telegram:-100", err: `"telegram:-100": "-100" is not a Telegram user id`},
		{in: "slack:C0123", err: `"slack:C0123": "C0123" is not a Slack user id`},
		{in: "discord:@1", err: `"discord:@1": "@1" is not a Discord user id`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			platform, user, err := ParseAnswerer(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || platform != tc.platform || user != tc.user {
				t.Errorf("= %q, %q, %v; want %q, %q", platform, user, err, tc.platform, tc.user)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	c := Default()
	c.Telegram = &telegram.Config{Token: tgToken, APIURL: telegram.DefaultAPIURL}
	c.Routes = map[string]Route{
		"ops":   {To: "telegram:-100123", Answerers: []string{"telegram:1", "telegram:2"}},
		"desk":  {To: "web"},
		"chat":  {To: "discord:123456789012345678"}, // Discord is off
		"weird": {To: "ops"},                        // built by hand, never validated
		"own":   {To: "mcp"},                        // so is this
		"thai":  {To: "telegram:-100777", Locale: "th", Escalate: []Step{{AfterSeconds: 600, To: StepTo{"ops", "web"}}}},
	}
	c.DefaultRoute = "ops"

	tests := []struct {
		name string
		to   string
		want Route
		err  string
		is   error
	}{
		{name: "empty goes to the default route", to: "", want: Route{To: "telegram:-100123", Answerers: []string{"telegram:1", "telegram:2"}}},
		{name: "a route name", to: "desk", want: Route{To: "web"}},
		{name: "a route's locale and ladder", to: "thai", want: Route{To: "telegram:-100777", Locale: "th", Escalate: []Step{{AfterSeconds: 600, To: StepTo{"ops", "web"}}}}},
		{name: "a target", to: "telegram:42", want: Route{To: "telegram:42"}},
		{name: "web", to: "web", want: Route{To: "web"}},
		{name: "mcp", to: "mcp", want: Route{To: "mcp"}},
		{name: "a route to mcp, built by hand", to: "own",
			err: `route "own": "mcp" is the agent's own client, which only the agent shows a question in: a request's to may name it, a route, the default route or an escalation step may not`, is: ErrBadTarget},
		{name: "a discord DM target on a platform that is off", to: "discord:@123456789012345678",
			err: `Discord is off (no ASKUSER_DISCORD_TOKEN), so "discord:@123456789012345678" cannot be used`, is: ErrPlatformOff},
		{name: "unknown name", to: "x", err: `unknown route "x"`, is: ErrUnknownRoute},
		{name: "a bare platform name", to: "telegram", err: `unknown route "telegram" (a Telegram target names a chat: telegram:<id>)`, is: ErrUnknownRoute},
		{name: "a bad target", to: "telegram:abc", err: `"telegram:abc": a Telegram chat id is an integer such as 123456789 or -1001234567890`, is: ErrBadTarget},
		{name: "an unknown platform", to: "irc:#ops", err: `unknown platform "irc"`, is: ErrBadTarget},
		{name: "a route to a platform that is off", to: "chat",
			err: `Discord is off (no ASKUSER_DISCORD_TOKEN), so "discord:123456789012345678" cannot be used`, is: ErrPlatformOff},
		{name: "a route whose target is not one", to: "weird",
			err: `route "weird": "ops" is not a target (want telegram:<chat id>, discord:<channel id>, discord:@<user id>, slack:<channel or user id>, matrix:<room id>, email:<address>, web or mcp)`, is: ErrBadTarget},
		{name: "slack is off", to: "slack:C0123456789",
			err: `Slack is off (no ASKUSER_SLACK_BOT_TOKEN), so "slack:C0123456789" cannot be used`, is: ErrPlatformOff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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

	t.Run("answerers are a copy", func(t *testing.T) {
		r, _ := c.Resolve("ops")
		r.Answerers[0] = "telegram:666"
		if c.Routes["ops"].Answerers[0] != "telegram:1" {
			t.Error("Resolve shares the route's answerers")
		}
	})
	t.Run("mcp is not a ladder's", func(t *testing.T) {
		_, err := c.ResolveLadder("mcp")
		want := `"mcp" is the agent's own client, which only the agent shows a question in: a request's to may name it, a route, the default route or an escalation step may not`
		if err == nil || err.Error() != want || !errors.Is(err, ErrBadTarget) {
			t.Errorf("ResolveLadder(mcp) = %v, want %q", err, want)
		}
	})
	t.Run("mcp whatever the policy on targets", func(t *testing.T) {
		c := Default()
		c.Targets = TargetsRoutesOnly
		c.Routes = map[string]Route{"desk": {To: "web"}}
		if r, err := c.Resolve("mcp"); err != nil || r.To != "mcp" {
			t.Errorf("Resolve(mcp) under routes-only = %+v, %v", r, err)
		}
		if _, err := c.Resolve("web"); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Resolve(web) under routes-only = %v, want ErrNotAllowed", err)
		}
	})
	t.Run("an empty default route means web", func(t *testing.T) {
		c := &Config{}
		if r, err := c.Resolve(""); err != nil || r.To != "web" {
			t.Errorf("= %+v, %v", r, err)
		}
	})
}

func TestEnabled(t *testing.T) {
	c := Default()
	c.Slack = &slack.Config{}
	tests := []struct {
		platform string
		want     bool
	}{
		{"web", true}, {"mcp", true}, {"slack", true}, {"telegram", false}, {"discord", false}, {"irc", false},
	}
	for _, tc := range tests {
		t.Run(tc.platform, func(t *testing.T) {
			if got := c.Enabled(tc.platform); got != tc.want {
				t.Errorf("Enabled(%q) = %v", tc.platform, got)
			}
		})
	}
}

// FuzzParseTarget: `to` comes from agents. A target that parses is exactly
// its platform and chat joined again, and Resolve never panics.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"web", "mcp", "telegram:-100123", "discord:@1", "slack:C1", "ops", "", "irc:x", "web:x", "mcp:x", "telegram:", ":"} {
		f.Add(s)
	}
	c := Default()
	c.Telegram = &telegram.Config{}
	c.Routes["ops"] = Route{To: "web"}
	f.Fuzz(func(t *testing.T, s string) {
		platform, chat, err := ParseTarget(s)
		if err == nil {
			joined := platform
			if !chatless(platform) {
				joined += ":" + chat
			}
			if joined != s {
				t.Errorf("ParseTarget(%q) = %q, %q", s, platform, chat)
			}
		}
		r, err := c.Resolve(s)
		if err == nil {
			if _, _, perr := ParseTarget(r.To); perr != nil {
				t.Errorf("Resolve(%q) = %q, which does not parse: %v", s, r.To, perr)
			}
		}
		if _, _, err := ParseAnswerer(s); err == nil && !strings.Contains(s, ":") {
			t.Errorf("ParseAnswerer(%q) accepted a value without ':'", s)
		}
	})
}
