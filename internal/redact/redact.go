// Package redact takes secrets out of texts and errors before they leave a
// channel: a log line, a SendError's reason, a result's error text. Each
// platform makes a Scrubber of its configured secrets and, where they have a
// shape of their own, a pattern for what a text may show of them.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Marker stands for a secret in a text.
const Marker = "<redacted>"

// Scrubber takes secrets out of texts and errors. The zero value takes out
// nothing. Safe for concurrent use.
type Scrubber struct {
	secrets []string
	// Also, when set, takes out what the fixed secrets do not cover: a
	// platform's token patterns, tokens in URL segments.
	Also func(string) string
	// Fix, when set, is called on every error of a chain Err scrubs, to
	// scrub the fields of a platform's own error types in place (text is
	// Text).
	Fix func(e error, text func(string) string)
}

// New makes a Scrubber of secrets; empty ones are dropped.
func New(secrets ...string) Scrubber {
	var s Scrubber
	for _, v := range secrets {
		if v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
	return s
}

// Text returns str with every secret replaced by Marker.
func (s Scrubber) Text(str string) string {
	for _, v := range s.secrets {
		str = strings.ReplaceAll(str, v, Marker)
	}
	if s.Also != nil {
		str = s.Also(str)
	}
	return str
}

// Err returns err without the secrets: the URL of every *url.Error in its
// chain (and what Fix scrubs) is scrubbed in place, and when the text still
// shows a secret (a wrapper made its text before), err is hidden behind an
// error with the scrubbed text. That error answers errors.Is and errors.As
// as err does (the channels' classification needs them) but does not
// unwrap, so no wrapper with the old text can be reached. nil stays nil.
func (s Scrubber) Err(err error) error {
	if err == nil {
		return nil
	}
	walk(err, func(e error) {
		if ue, ok := e.(*url.Error); ok {
			ue.URL = s.Text(ue.URL)
		}
		if s.Fix != nil {
			s.Fix(e, s.Text)
		}
	})
	text := err.Error()
	if clean := s.Text(text); clean != text {
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
