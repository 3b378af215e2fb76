package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/email"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/matrix"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

// platform is a chat platform's channel and the HTTP endpoints it serves
// (webhooks), if any.
type platform struct {
	channel engine.Channel
	routes  map[string]http.Handler // mux pattern -> handler
}

// The time limits of the platforms' API clients are the ones each package
// gives the client it makes when none is passed (their Config's
// withDefaults); the clients here are those, with a transport that times
// every call.
const (
	// telegramTimeoutOverPoll is added to the long poll's timeout:
	// getUpdates holds the call that long.
	telegramTimeoutOverPoll = 15 * time.Second
	discordTimeout          = 20 * time.Second
	slackTimeout            = 30 * time.Second
	// matrixTimeoutOverSync is added to a /sync long poll's timeout.
	matrixTimeoutOverSync = 15 * time.Second
)

// platformChannels makes the channel of every platform that has a token. A
// nil config section means the platform is off; a section is the platform's
// own Config, loaded and checked by config, to which only the wiring is
// added here (the replica name, the panic counter, and an HTTP client whose
// calls m times). The constructors make no network call: a platform that
// cannot connect retries in its Run loop and reports its state on /readyz,
// never stopping the process.
func platformChannels(cfg *config.Config, st *store.Store, log *slog.Logger, m *metrics) ([]platform, error) {
	var out []platform
	if cfg.Telegram != nil {
		tg := *cfg.Telegram
		tg.Replica, tg.Panicked = cfg.Replica, m.Panicked
		poll := tg.PollTimeout
		if poll == 0 {
			poll = telegram.DefaultPollTimeout
		}
		tg.HTTPClient = m.timedClient(tg.HTTPClient, poll+telegramTimeoutOverPoll, telegram.Platform, telegramMethod)
		ch, err := telegram.New(tg, st, log.With("part", "telegram"))
		if err != nil {
			return nil, fmt.Errorf("telegram: %w", err)
		}
		p := platform{channel: ch}
		if tg.WebhookURL != "" {
			p.routes = map[string]http.Handler{"POST " + ch.WebhookPath(): ch.WebhookHandler()}
		}
		out = append(out, p)
	}
	if cfg.Discord != nil {
		dc := *cfg.Discord
		dc.Replica, dc.Panicked = cfg.Replica, m.Panicked
		dc.HTTPClient = m.timedClient(dc.HTTPClient, discordTimeout, discord.Platform, discordMethod)
		ch, err := discord.New(dc, st, log.With("part", "discord"))
		if err != nil {
			return nil, fmt.Errorf("discord: %w", err)
		}
		out = append(out, platform{channel: ch})
	}
	if cfg.Slack != nil {
		sl := *cfg.Slack
		sl.Panicked = m.Panicked
		sl.HTTPClient = m.timedClient(sl.HTTPClient, slackTimeout, slack.Platform, slackMethod)
		ch, err := slack.New(sl, st, log.With("part", "slack"))
		if err != nil {
			return nil, fmt.Errorf("slack: %w", err)
		}
		p := platform{channel: ch}
		if sl.AppToken == "" { // HTTP mode: Slack calls the bridge
			h := ch.HTTPHandler()
			p.routes = map[string]http.Handler{"POST " + slack.EventsPath: h, "POST " + slack.InteractivityPath: h}
		}
		out = append(out, p)
	}
	if cfg.Matrix != nil {
		mc := *cfg.Matrix
		mc.Replica, mc.Panicked = cfg.Replica, m.Panicked
		sync := mc.SyncTimeout
		if sync == 0 {
			sync = matrix.DefaultSyncTimeout
		}
		mc.HTTPClient = m.timedClient(mc.HTTPClient, sync+matrixTimeoutOverSync, matrix.Platform, matrixMethod)
		ch, err := matrix.New(mc, st, log.With("part", "matrix"))
		if err != nil {
			return nil, fmt.Errorf("matrix: %w", err)
		}
		out = append(out, platform{channel: ch})
	}
	if cfg.Email != nil {
		_, links, err := answerLinks(cfg)
		if err != nil || links == nil {
			return nil, fmt.Errorf("email needs answer links (ASKUSER_PUBLIC_URL and ASKUSER_LINK_SECRET): %v", err)
		}
		ch, err := email.New(*cfg.Email, email.Deps{
			Links: *links, Marks: st, Questions: st, Metrics: m, Logger: log.With("part", "email"),
		})
		if err != nil {
			return nil, fmt.Errorf("email: %w", err)
		}
		out = append(out, platform{channel: ch})
	}
	return out, nil
}

// answerLinks is the signer of cfg's answer links (ASKUSER_LINK_SECRET)
// and the maker of the links (under ASKUSER_PUBLIC_URL), both nil when
// links are off. A link works until its question's deadline and, past it,
// for as long as the result is kept, so its page shows how the question
// ended.
func answerLinks(cfg *config.Config) (*link.Signer, *link.Maker, error) {
	if !cfg.LinksOn() {
		return nil, nil, nil
	}
	s, err := link.NewSigner([]byte(cfg.LinkSecret))
	if err != nil {
		return nil, nil, fmt.Errorf("ASKUSER_LINK_SECRET: %w", err)
	}
	return s, &link.Maker{Base: cfg.PublicURL, Signer: s, Grace: cfg.Retention}, nil
}

// timedClient is client (nil: a new one with the time limit timeout) with
// its transport wrapped by platformTransport, so that every call of
// platform is timed by the API method method derives from it.
func (m *metrics) timedClient(client *http.Client, timeout time.Duration, platform string, method func(*http.Request) string) *http.Client {
	c := http.Client{Timeout: timeout}
	if client != nil {
		c = *client
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = m.platformTransport(platform, method, next)
	return &c
}
