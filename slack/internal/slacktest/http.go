package slacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// HTTP mode: events and interactivity delivered by signed POST.

// UseHTTP sends every event by signed HTTP POST to the bridge instead of
// the socket: events to eventsURL, button presses to interactURL.
func (s *Server) UseHTTP(eventsURL, interactURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventsURL, s.interactURL = eventsURL, interactURL
}

// Signing says how PostSigned signs a request.
type Signing int

const (
	// SignValid signs with the signing secret and the current time.
	SignValid Signing = iota
	// SignBad signs with a wrong secret.
	SignBad
	// SignStale signs correctly, with a timestamp six minutes old.
	SignStale
	// SignNone sends no signature headers.
	SignNone
)

// PostSigned POSTs body to url the way Slack does, signed as sign says,
// with X-Slack-Retry-Num when retry > 0. It returns the status code and
// body of the answer.
func (s *Server) PostSigned(target, contentType string, body []byte, sign Signing, retry int) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", contentType)
	ts := time.Now()
	secret := s.opts.SigningSecret
	switch sign {
	case SignBad:
		secret += "-wrong"
	case SignStale:
		ts = ts.Add(-6 * time.Minute)
	}
	if sign != SignNone {
		tsText := strconv.FormatInt(ts.Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", tsText)
		req.Header.Set("X-Slack-Signature", SignBody(secret, tsText, body))
	}
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	res, err := s.httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.String(), nil
}

// Delivery is an event as the fake sent it, to send again (a duplicate).
type Delivery struct {
	Kind    string // "events_api" or "interactive"
	Payload json.RawMessage
}

// Deliver sends an event to the bridge: over the socket, or in HTTP mode
// by signed POST, retrying (with X-Slack-Retry-Num) up to MaxRetries times
// while the bridge does not answer 200.
func (s *Server) Deliver(d Delivery) error {
	s.mu.Lock()
	eventsURL, interactURL := s.eventsURL, s.interactURL
	s.mu.Unlock()
	if eventsURL == "" {
		s.envelopeDeliver(d.Kind, d.Payload)
		return nil
	}
	target, ctype, body := eventsURL, "application/json", []byte(d.Payload)
	if d.Kind == "interactive" {
		target, ctype = interactURL, "application/x-www-form-urlencoded"
		body = []byte(url.Values{"payload": {string(d.Payload)}}.Encode())
	}
	var last error
	for attempt := 0; attempt <= s.opts.MaxRetries; attempt++ {
		code, _, err := s.PostSigned(target, ctype, body, SignValid, attempt)
		if err == nil && code == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("slacktest: deliver: status %d: %v", code, err)
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// SignBody returns Slack's X-Slack-Signature of body at timestamp ts.
func SignBody(secret, ts string, body []byte) string {
	return signHex(secret, ts, body)
}
