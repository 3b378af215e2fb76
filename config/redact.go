package config

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/askbridge/askbridge/config/settings"
)

// Secrets never leave this package in text: every type holding one
// implements fmt.Formatter (so every verb, %v, %+v, %#v, %s, %d…, prints the
// redacted form) and slog.LogValuer, and its secret fields are tagged
// `json:"-"`.

// RedactedURL is the Redis URL with its password (and a user name given
// without a password, and any password-like query parameter) replaced.
func (r Redis) RedactedURL() string {
	if r.URL == "" {
		return ""
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return settings.Redacted
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			if strings.Contains(lk, "pass") || strings.Contains(lk, "secret") || strings.Contains(lk, "token") || strings.Contains(lk, "auth") {
				q[k] = []string{"xxxxx"}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// String returns the redacted form.
func (r Redis) String() string {
	return fmt.Sprintf("{URL:%s EmbeddedAddr:%s Prefix:%s DataDir:%s}", r.RedactedURL(), r.EmbeddedAddr, r.Prefix, r.DataDir)
}

// Format prints the redacted form for every verb.
func (r Redis) Format(f fmt.State, _ rune) { io.WriteString(f, r.String()) }

// LogValue logs the redacted form.
func (r Redis) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("url", r.RedactedURL()),
		slog.String("embeddedAddr", r.EmbeddedAddr),
		slog.String("prefix", r.Prefix),
		slog.String("dataDir", r.DataDir),
	)
}

// Format and LogValue show the settings, the token redacted.
func (h HTTP) Format(f fmt.State, _ rune) { io.WriteString(f, settings.String(h)) }
func (h HTTP) LogValue() slog.Value       { return settings.LogValue(h) }

// section prints a platform section, or "off" when it is nil.
func section[T any](p *T) string {
	if p == nil {
		return "off"
	}
	return fmt.Sprint(*p)
}

func sectionValue[T slog.LogValuer](p *T) slog.Value {
	if p == nil {
		return slog.StringValue("off")
	}
	return (*p).LogValue()
}

func (c Config) routesString() string {
	var b strings.Builder
	b.WriteString("map[")
	for i, name := range slices.Sorted(maps.Keys(c.Routes)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		r := c.Routes[name]
		fmt.Fprintf(&b, "%s:{To:%s Answerers:%v Locale:%s Escalate:%v Links:%t}", name, r.To, r.Answerers, r.Locale, r.Escalate, r.Links)
	}
	b.WriteString("]")
	return b.String()
}

// String returns the redacted form.
func (c Config) String() string {
	return fmt.Sprintf("{Redis:%s HTTP:%s Replica:%s DefaultRoute:%s Routes:%s Targets:%s Chats:%s MaxPendingPerAgent:%d Retention:%s ClaimIdle:%s StopGrace:%s Telegram:%s Discord:%s Slack:%s Matrix:%s Email:%s PublicURL:%s LinkSecret:%s LogLevel:%s Locale:%s Callback:%s}",
		c.Redis, c.HTTP, c.Replica, c.DefaultRoute, c.routesString(), c.Targets, settings.String(c.Chats), c.MaxPendingPerAgent, c.Retention, c.ClaimIdle, c.StopGrace,
		section(c.Telegram), section(c.Discord), section(c.Slack), section(c.Matrix), section(c.Email), c.PublicURL, redactedSecret(c.LinkSecret), c.LogLevel, c.Locale, settings.String(c.Callback))
}

// Format prints the redacted form for every verb.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// LogValue logs the redacted form.
func (c Config) LogValue() slog.Value {
	routes := make([]slog.Attr, 0, len(c.Routes))
	for _, name := range slices.Sorted(maps.Keys(c.Routes)) {
		r := c.Routes[name]
		routes = append(routes, slog.Group(name, slog.String("to", r.To), slog.Any("answerers", r.Answerers), slog.String("locale", r.Locale), slog.Any("escalate", r.Escalate), slog.Bool("links", r.Links)))
	}
	return slog.GroupValue(
		slog.Any("redis", c.Redis),
		slog.Any("http", c.HTTP),
		slog.String("replica", c.Replica),
		slog.String("defaultRoute", c.DefaultRoute),
		slog.Attr{Key: "routes", Value: slog.GroupValue(routes...)},
		slog.String("targets", c.Targets),
		slog.Group("chats", slog.String("telegram", c.Chats.Telegram), slog.String("discord", c.Chats.Discord), slog.String("slack", c.Chats.Slack), slog.String("matrix", c.Chats.Matrix), slog.String("email", c.Chats.Email)),
		slog.Int("maxPendingPerAgent", c.MaxPendingPerAgent),
		slog.Duration("retention", c.Retention),
		slog.Duration("claimIdle", c.ClaimIdle),
		slog.Attr{Key: "telegram", Value: sectionValue(c.Telegram)},
		slog.Attr{Key: "discord", Value: sectionValue(c.Discord)},
		slog.Attr{Key: "slack", Value: sectionValue(c.Slack)},
		slog.Attr{Key: "matrix", Value: sectionValue(c.Matrix)},
		slog.Attr{Key: "email", Value: sectionValue(c.Email)},
		slog.String("publicURL", c.PublicURL),
		slog.String("linkSecret", redactedSecret(c.LinkSecret)),
		slog.String("logLevel", c.LogLevel),
		slog.String("locale", c.Locale),
		slog.Any("callback", c.Callback),
	)
}

// redactedSecret is how a secret outside a section prints: "[redacted]"
// when set, "" when not, as settings.String prints a section's.
func redactedSecret(s string) string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}
