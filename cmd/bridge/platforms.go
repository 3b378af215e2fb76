package main

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

// platform is a chat platform's channel and the HTTP endpoints it serves
// (webhooks), if any.
type platform struct {
	channel askbridge.Channel
	routes  map[string]http.Handler // mux pattern -> handler
}

// platformChannels makes the channel of every platform that has a token. A
// nil config section means the platform is off; a section is the platform's
// own Config, loaded and checked by config, to which only the wiring is
// added here (the replica name). The constructors make no network call: a
// platform that cannot connect retries in its Run loop and reports its
// state on /readyz, never stopping the process.
func platformChannels(cfg *config.Config, st *store.Store, log *slog.Logger, panicked func(op string)) ([]platform, error) {
	var out []platform
	if cfg.Telegram != nil {
		tg := *cfg.Telegram
		tg.Replica, tg.Panicked = cfg.Replica, panicked
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
		dc.Replica, dc.Panicked = cfg.Replica, panicked
		ch, err := discord.New(dc, st, log.With("part", "discord"))
		if err != nil {
			return nil, fmt.Errorf("discord: %w", err)
		}
		out = append(out, platform{channel: ch})
	}
	if cfg.Slack != nil {
		sl := *cfg.Slack
		sl.Panicked = panicked
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
	return out, nil
}
