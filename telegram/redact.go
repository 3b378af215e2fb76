package telegram

import (
	"strings"

	"github.com/askbridge/askbridge/internal/redact"
)

// newScrubber takes the bot's secrets out of errors before they leave the
// channel (a log line, a SendError's Reason or Err, a result's error text):
// token, the secret half of token (the part after the colon, should a text
// carry the colon escaped) and webhookSecret. The Bot API puts the token in
// every URL (…/bot<token>/getUpdates), so any *url.Error of a call carries
// it; a proxy's error page may echo the URL or the setWebhook form back in
// a body the library quotes.
func newScrubber(token, webhookSecret string) redact.Scrubber {
	return redact.New(token, secretHalf(token), webhookSecret)
}

// secretHalf is "<secret>" of "<bot id>:<secret>": the bot id is public.
func secretHalf(token string) string {
	_, secret, _ := strings.Cut(token, ":")
	return secret
}
