package slack

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// slackSecret matches what Slack hands out as secrets, wherever a text
// shows one: tokens (xoxb-, xoxp-, xapp-, …; Slack's token types) and the
// ticket of a socket mode URL (apps.connections.open returns
// wss://…/link/?ticket=…&app_id=…, and the ticket opens a connection).
var slackSecret = regexp.MustCompile(`\b(?:xox[a-z]|xapp)-[0-9A-Za-z-]+|ticket=[^&\s"'<>]+`)

// scrubber takes the channel's secrets out of errors before they leave it
// (a log line, a SendError's Reason or Err, a result's error text): the
// configured tokens and signing secret, and anything shaped like a Slack
// token or a socket mode ticket.
type scrubber struct{ secrets []string }

func newScrubber(cfg Config) scrubber {
	var s scrubber
	for _, v := range []string{cfg.BotToken, cfg.AppToken, cfg.SigningSecret} {
		if v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
	return s
}

// text returns str with every secret replaced.
func (s scrubber) text(str string) string {
	for _, v := range s.secrets {
		str = strings.ReplaceAll(str, v, "<redacted>")
	}
	return slackSecret.ReplaceAllStringFunc(str, func(m string) string {
		if strings.HasPrefix(m, "ticket=") {
			return "ticket=<redacted>"
		}
		return "<redacted>"
	})
}

// err returns err without the secrets: the URL of every *url.Error in its
// chain is scrubbed in place, and when the text still shows a secret (a
// wrapper made its text before), err is hidden behind an error with the
// scrubbed text. That error answers errors.Is and errors.As as err does
// (classify and errorCode need them) but does not unwrap, so no wrapper
// with the old text can be reached. nil stays nil.
func (s scrubber) err(err error) error {
	if err == nil {
		return nil
	}
	walk(err, func(e error) {
		if ue, ok := e.(*url.Error); ok {
			ue.URL = s.text(ue.URL)
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
