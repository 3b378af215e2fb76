package slack

import (
	"regexp"
	"strings"

	"github.com/askbridge/askbridge/internal/redact"
)

// slackSecret matches what Slack hands out as secrets, wherever a text
// shows one: tokens (xoxb-, xoxp-, xapp-, …; Slack's token types) and the
// ticket of a socket mode URL (apps.connections.open returns
// wss://…/link/?ticket=…&app_id=…, and the ticket opens a connection).
var slackSecret = regexp.MustCompile(`\b(?:xox[a-z]|xapp)-[0-9A-Za-z-]+|ticket=[^&\s"'<>]+`)

// newScrubber takes the channel's secrets out of errors before they leave
// it (a log line, a SendError's Reason or Err, a result's error text): the
// configured tokens and signing secret, and anything shaped like a Slack
// token or a socket mode ticket.
func newScrubber(cfg Config) redact.Scrubber {
	s := redact.New(cfg.BotToken, cfg.AppToken, cfg.SigningSecret)
	s.Also = func(str string) string {
		return slackSecret.ReplaceAllStringFunc(str, func(m string) string {
			if strings.HasPrefix(m, "ticket=") {
				return "ticket=" + redact.Marker
			}
			return redact.Marker
		})
	}
	return s
}
