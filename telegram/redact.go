package telegram

import (
	"errors"
	"net/url"
	"strings"
)

// redacted stands for a secret in an error text.
const redacted = "<redacted>"

// scrubber takes the bot's secrets out of errors before they leave the
// channel (a log line, a SendError's Reason or Err, a result's error text).
// The Bot API puts the token in every URL (…/bot<token>/getUpdates), so any
// *url.Error of a call carries it; a proxy's error page may echo the URL or
// the setWebhook form back in a body the library quotes.
type scrubber struct{ secrets []string }

// newScrubber hides token, the secret half of token (the part after the
// colon, should a text carry the colon escaped) and webhookSecret.
func newScrubber(token, webhookSecret string) scrubber {
	var s scrubber
	for _, v := range []string{token, secretHalf(token), webhookSecret} {
		if v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
	return s
}

// secretHalf is "<secret>" of "<bot id>:<secret>": the bot id is public.
func secretHalf(token string) string {
	_, secret, _ := strings.Cut(token, ":")
	return secret
}

// text returns s with every secret replaced.
func (s scrubber) text(str string) string {
	for _, v := range s.secrets {
		str = strings.ReplaceAll(str, v, redacted)
	}
	return str
}

// err returns err without the secrets: the URL of every *url.Error in its
// chain is scrubbed in place, and when the text still shows a secret (a
// wrapper made its text before), err is hidden behind an error with the
// scrubbed text. That error answers errors.Is and errors.As as err does
// (the classification needs them) but does not unwrap, so no wrapper with
// the old text can be reached. nil stays nil.
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
