package main

import (
	"log/slog"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/store"
)

// platformChannels makes the channel of every platform that has a token.
func platformChannels(cfg *config.Config, st *store.Store, log *slog.Logger) []askbridge.Channel {
	var chans []askbridge.Channel
	return chans
}
