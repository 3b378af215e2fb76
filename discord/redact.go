package discord

import (
	"regexp"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/internal/redact"
)

// newScrubber takes the channel's secrets out of errors before they leave it
// (a log line, a SendError's Reason or Err, a result's error text): the bot
// token, which travels in the Authorization header and so shows only where
// a proxy quotes the request back in an error body discordgo puts in a
// RESTError, and the token of an interaction or of its webhook, which is a
// segment of the URL every *url.Error of those calls names.
func newScrubber(token string) redact.Scrubber {
	s := redact.New(token)
	s.Also = redactURL
	// discordgo's errors quote what they got: errors.As hands them out.
	s.Fix = func(e error, text func(string) string) {
		switch e := e.(type) {
		case *discordgo.RESTError:
			e.ResponseBody = []byte(text(string(e.ResponseBody)))
		case *discordgo.RateLimitError:
			if e.RateLimit != nil {
				e.URL = text(e.URL)
			}
		case *rateLimitError:
			e.Message = text(e.Message)
		}
	}
	return s
}

// hookToken matches the token segment of an interaction or webhook URL:
// /interactions/<id>/<token>/callback, /webhooks/<app id>/<token>/….
var hookToken = regexp.MustCompile(`((?:interactions|webhooks)/[^/\s"'<>]+/)[^/\s"'<>?#]+`)

// redactURL hides the token segment of interaction and webhook URLs.
func redactURL(raw string) string { return hookToken.ReplaceAllString(raw, "${1}<token>") }
