package discord

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// scrubber takes the channel's secrets out of errors before they leave it
// (a log line, a SendError's Reason or Err, a result's error text): the bot
// token, which travels in the Authorization header and so shows only where
// a proxy quotes the request back in an error body discordgo puts in a
// RESTError, and the token of an interaction or of its webhook, which is a
// segment of the URL every *url.Error of those calls names.
type scrubber struct{ token string }

// hookToken matches the token segment of an interaction or webhook URL:
// /interactions/<id>/<token>/callback, /webhooks/<app id>/<token>/….
var hookToken = regexp.MustCompile(`((?:interactions|webhooks)/[^/\s"'<>]+/)[^/\s"'<>?#]+`)

// redactURL hides the token segment of interaction and webhook URLs.
func redactURL(raw string) string { return hookToken.ReplaceAllString(raw, "${1}<token>") }

// text returns s without the bot token and any interaction or webhook
// token.
func (s scrubber) text(str string) string {
	if s.token != "" {
		str = strings.ReplaceAll(str, s.token, "<token>")
	}
	return redactURL(str)
}

// err returns err without the secrets: the URL of every *url.Error in its
// chain is scrubbed in place, and when the text still shows a secret (a
// wrapper made its text before), err is hidden behind an error with the
// scrubbed text. That error answers errors.Is and errors.As as err does
// (classify and the gateway's close codes need them) but does not unwrap,
// so no wrapper with the old text can be reached. nil stays nil.
func (s scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	walk(err, func(e error) {
		switch e := e.(type) {
		case *url.Error:
			e.URL = s.text(e.URL)
		case *discordgo.RESTError:
			// errors.As hands it out: its text quotes the body.
			e.ResponseBody = []byte(s.text(string(e.ResponseBody)))
		case *discordgo.RateLimitError:
			if e.RateLimit != nil {
				e.URL = s.text(e.URL)
			}
		case *rateLimitError:
			e.Message = s.text(e.Message)
		}
	})
	text := err.Error()
	if clean := s.text(text); clean != text {
		return &scrubbedError{text: clean, err: err}
	}
	return err
}

// walk calls f on err and every error it wraps.
func walk(err error, f func(error)) {
	for err != nil {
		f(err)
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range u.Unwrap() {
				walk(e, f)
			}
			return
		}
		err = errors.Unwrap(err)
	}
}

// scrubbedError is an error whose text has had the secrets taken out.
type scrubbedError struct {
	text string
	err  error
}

func (e *scrubbedError) Error() string        { return e.text }
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }
func (e *scrubbedError) As(target any) bool   { return errors.As(e.err, target) }
