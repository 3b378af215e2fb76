package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// Paths of HTTP mode, to enter in the Slack app's settings as the Events
// API request URL and the interactivity request URL.
const (
	EventsPath        = "/slack/events"
	InteractivityPath = "/slack/interactivity"
)

const (
	// Slack: a request whose X-Slack-Request-Timestamp is more than five
	// minutes from local time may be a replay and is refused (Verifying
	// requests from Slack).
	replayWindow = 5 * time.Minute
	// maxBodyBytes bounds a request body; Slack's payloads are far smaller.
	maxBodyBytes = 1 << 20
)

// HTTPHandler serves HTTP mode: the Events API on EventsPath and
// interactivity on InteractivityPath. Every request must carry a valid
// X-Slack-Signature made with the signing secret and a timestamp within
// five minutes, else it gets 401 and changes nothing. url_verification is
// answered; button presses are acknowledged with 200 at once and handled in
// the background (Slack wants an answer within 3 seconds and never sends a
// press again). An Events API event is answered once its handling has
// decided, or after decideWithin: 200, or 503 when the handling failed
// because Redis could not be reached and Slack has a retry left, so Slack
// delivers it again. Until Run has started, and once it is stopping, it
// answers 503, so Slack retries (another replica takes the event). Safe for
// concurrent use.
func (c *Channel) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(EventsPath, c.serveEvents)
	mux.HandleFunc(InteractivityPath, c.serveInteractivity)
	return mux
}

func (c *Channel) serveEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := c.verified(w, r)
	if !ok {
		return
	}
	var probe struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	if probe.Type == slackevents.URLVerification {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": probe.Challenge})
		return
	}
	ir := c.inbox.Load()
	if ir == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil {
		// Acknowledged all the same: an event this bridge does not use
		// (or cannot read) must not be retried.
		c.log.Debug("unreadable event", "err", c.scrub.Err(err))
		w.WriteHeader(http.StatusOK)
		return
	}
	// Slack delivers an event again when it is not answered 200, at most
	// maxEventRetries times: before the last, a failed handling may ask for
	// that (redelivery) instead of telling the person to try again.
	var again *redelivery
	if n, _ := strconv.Atoi(r.Header.Get("X-Slack-Retry-Num")); n < maxEventRetries {
		again = newRedelivery()
	}
	if err := c.dispatch(ir, func(ctx context.Context, in engine.Inbox) { c.handleEvent(ctx, in, ev, again) }); err != nil {
		refuseBusy(w, err)
		return
	}
	if again.await(decideWithin) {
		http.Error(w, "could not handle the event; deliver it again", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (c *Channel) serveInteractivity(w http.ResponseWriter, r *http.Request) {
	body, ok := c.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	ir := c.inbox.Load()
	if ir == nil {
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	if err := c.dispatch(ir, func(ctx context.Context, in engine.Inbox) { c.handleInteraction(ctx, in, cb) }); err != nil {
		refuseBusy(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// refuseBusy answers a request whose event was not handled (dispatch's
// err) 503, so that Slack delivers it again, with a second's wait asked
// for where Slack honours it.
func refuseBusy(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, err.Error()+"; deliver the event again", http.StatusServiceUnavailable)
}

// verified reads the body and checks Slack's signature: v0=HMAC-SHA256 of
// "v0:<timestamp>:<body>" with the signing secret, compared in constant
// time, and the timestamp within the replay window. It answers the refusal
// itself.
func (c *Channel) verified(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return nil, false
	}
	if len(body) > maxBodyBytes {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if c.cfg.SigningSecret == "" || !Verify(c.cfg.SigningSecret, r.Header, body, c.cfg.Now()) {
		c.log.Warn("refused a request with a bad or stale signature", "path", r.URL.Path)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return nil, false
	}
	return body, true
}

// Verify reports whether header carries Slack's valid signature of body
// made with secret, with a timestamp within five minutes of now.
func Verify(secret string, header http.Header, body []byte, now time.Time) bool {
	tsText := header.Get("X-Slack-Request-Timestamp")
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(ts, 0)); d > replayWindow || d < -replayWindow {
		return false
	}
	got, err := hex.DecodeString(trimV0(header.Get("X-Slack-Signature")))
	if err != nil {
		return false
	}
	return hmac.Equal(got, signature(secret, tsText, body))
}

// Sign returns the X-Slack-Signature of body sent at timestamp ts.
func Sign(secret, ts string, body []byte) string {
	return "v0=" + hex.EncodeToString(signature(secret, ts, body))
}

func signature(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return m.Sum(nil)
}

func trimV0(s string) string {
	if len(s) > 3 && s[:3] == "v0=" {
		return s[3:]
	}
	return "-"
}
