package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/lazyre"
)

// metrics implements engine.Metrics on Prometheus, and times the calls
// to Redis (redisHook) and to the platforms' APIs (platformTransport).
// Every label value comes from a fixed or code-bounded set: no key, chat,
// question id or token ever becomes a label.
type metrics struct {
	ended         *prometheus.CounterVec
	openFor       *prometheus.HistogramVec
	sent          *prometheus.CounterVec
	errors        *prometheus.CounterVec
	retryAfter    *prometheus.CounterVec
	panics        *prometheus.CounterVec
	waited        *prometheus.CounterVec
	reached       *prometheus.CounterVec
	standing      *prometheus.CounterVec
	email         *prometheus.CounterVec
	redisCalls    *prometheus.HistogramVec
	platformCalls *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, pending pendingCounter) *metrics {
	m := &metrics{
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_questions_ended_total",
			Help: "Questions ended by this replica, by platform (none for a refused request) and outcome, in the words of the result: answered, skipped, timeout, cancelled, undeliverable, rejected, no_quorum.",
		}, []string{"platform", "outcome"}),
		openFor: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "askbridge_time_to_answer_seconds",
			Help:    "Time from request to answer of answered questions, by platform.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600},
		}, []string{"platform"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_messages_sent_total",
			Help: "Prompt messages posted, by platform.",
		}, []string{"platform"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_platform_errors_total",
			Help: "Platform calls refused, by platform and kind (temporary, rate_limited, permanent).",
		}, []string{"platform", "kind"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_panics_total",
			Help: "Panics recovered in the engine, by operation; each is logged with its stack.",
		}, []string{"op"}),
		retryAfter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_retry_after_total",
			Help: "Rate limits imposed by a platform (retry-after), by platform.",
		}, []string{"platform"}),
		waited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_retry_after_seconds_total",
			Help: "Seconds waited because a platform asked to retry later, by platform.",
		}, []string{"platform"}),
		reached: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_reach_total",
			Help: "Reminders posted, escalation steps shown, Seen pressed, and places that could not be reached while the question stayed open elsewhere, per place, by event (reminded, escalated, acknowledged, undeliverable) and platform.",
		}, []string{"event", "platform"}),
		standing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_standing_total",
			Help: "What standing answers did on this replica (ask-user.md §9), by event: kept, used, revoked, expired.",
		}, []string{"event"}),
		email: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_email_total",
			Help: "Emails this replica tried to send (prompts, reminders, follow-ups; ask-user.md §10), by result: sent, unconfirmed (the final dot went out, its reply was lost: counted as sent), refused (5xx: that place is undeliverable), deferred (4xx: tried again), failed (connection or TLS: tried again), resumed (a send already marked, by this replica or one that died: recorded, not sent again).",
		}, []string{"result"}),
		redisCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "askbridge_redis_call_duration_seconds",
			Help:    "Duration of this replica's Redis calls, by command: its lower-case name, evalsha for the scripts (EVAL and EVALSHA), pipeline for a pipeline or transaction. A blocking read's time includes its wait.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"command"}),
		platformCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "askbridge_platform_call_duration_seconds",
			Help:    "Duration of the platforms' API calls up to the response's header, by platform and method: the Telegram Bot API method (getUpdates holds a long poll), the Slack Web API method, or the Discord route with its ids as placeholders (\"POST /channels/{id}/messages\"); other for a path of another shape.",
			Buckets: []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"platform", "method"}),
	}
	reg.MustRegister(m.ended, m.openFor, m.sent, m.errors, m.retryAfter, m.panics, m.waited, m.reached, m.standing, m.email,
		m.redisCalls, m.platformCalls, pendingCollector{store: pending}, buildInfo(currentBuild()))
	return m
}

// noPlatform labels what ended on no platform: a refused request.
const noPlatform = "none"

func (m *metrics) Ended(platform string, outcome askbridge.Outcome, open time.Duration) {
	if platform == "" {
		platform = noPlatform
	}
	m.ended.WithLabelValues(platform, outcomeLabel(outcome)).Inc()
	if outcome == askbridge.OutcomeAnswered {
		m.openFor.WithLabelValues(platform).Observe(open.Seconds())
	}
}

// outcomeLabel names an outcome as the result does: its status when that
// says it all (answered; rejected for an error result), else its reason
// (timeout, skipped, cancelled, undeliverable, no_quorum). Only the
// expired outcome is worded differently, as the result's reason timeout.
func outcomeLabel(o askbridge.Outcome) string {
	if o == askbridge.OutcomeExpired {
		return string(askbridge.ReasonTimeout)
	}
	return string(o)
}

func (m *metrics) Sent(platform string, messages int) {
	m.sent.WithLabelValues(platform).Add(float64(messages))
}

func (m *metrics) PlatformError(platform string, kind engine.ErrorKind) {
	name := "temporary"
	switch kind {
	case engine.RateLimited:
		name = "rate_limited"
	case engine.Permanent:
		name = "permanent"
	}
	m.errors.WithLabelValues(platform, name).Inc()
}

func (m *metrics) Panicked(op string) { m.panics.WithLabelValues(op).Inc() }

func (m *metrics) Standing(event engine.StandingEvent) {
	m.standing.WithLabelValues(string(event)).Inc()
}

// Email counts one email try by its result (the email channel's
// Metrics).
func (m *metrics) Email(result string) { m.email.WithLabelValues(result).Inc() }

func (m *metrics) Reached(kind askbridge.EventKind, platform string) {
	m.reached.WithLabelValues(string(kind), platform).Inc()
}

func (m *metrics) RetryAfter(platform string, wait time.Duration) {
	m.retryAfter.WithLabelValues(platform).Inc()
	m.waited.WithLabelValues(platform).Add(wait.Seconds())
}

// buildInfo is askbridge_build_info: always 1, its labels saying what the
// binary was built from (revision "unknown" when the build did not record
// it).
func buildInfo(b build) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "askbridge_build_info",
		Help: "Always 1; the labels say what this binary was built from: its version, the Go release, and the commit (unknown when not recorded).",
	}, []string{"version", "goversion", "revision"})
	revision := b.Revision
	if revision == "" {
		revision = "unknown"
	}
	g.WithLabelValues(b.Version, b.GoVersion, revision).Set(1)
	return g
}

// redisHook times every Redis command and pipeline on the Redis call
// histogram. Add it to a client with AddHook; it is safe for concurrent
// use.
func (m *metrics) redisHook() redis.Hook { return redisTimer{calls: m.redisCalls} }

// redisTimer is the redis.Hook of redisHook.
type redisTimer struct {
	calls *prometheus.HistogramVec
}

// DialHook leaves dialling alone.
func (redisTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook times one command, labelled by its name (redisCommand).
func (h redisTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.calls.WithLabelValues(redisCommand(cmd.Name())).Observe(time.Since(start).Seconds())
		return err
	}
}

// ProcessPipelineHook times a pipeline (or a MULTI/EXEC transaction) as a
// whole, labelled "pipeline".
func (h redisTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.calls.WithLabelValues("pipeline").Observe(time.Since(start).Seconds())
		return err
	}
}

// isCommandName reports whether name can be a Redis command name as a
// label: a lower-case letter, then lower-case letters, digits, '_' and
// '-', at most 32 bytes (the longest command name is 27); what
// ^[a-z][a-z0-9_-]{0,31}$ matches. Checked by hand: it runs for every
// command, and the expression, compiled at init, was part of the start.
func isCommandName(name string) bool {
	if len(name) == 0 || len(name) > 32 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// redisCommand is the label of the command called name (go-redis gives it
// lower-cased): evalsha for every way of running a script, the name itself
// when it looks like a command name, other when it does not. Only the name
// is used, never an argument, so no key becomes a label.
func redisCommand(name string) string {
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		return "evalsha"
	}
	if !isCommandName(name) {
		return "other"
	}
	return name
}

// platformTransport wraps next so that every call it carries is timed on
// the platform call histogram, labelled platform and the API method that
// method derives from the request. The request and response pass
// unchanged; the time is taken up to the response's header (or the error).
func (m *metrics) platformTransport(platform string, method func(*http.Request) string, next http.RoundTripper) http.RoundTripper {
	return &timedTransport{next: next, calls: m.platformCalls.MustCurryWith(prometheus.Labels{"platform": platform}), method: method}
}

// timedTransport is the http.RoundTripper of platformTransport.
type timedTransport struct {
	next   http.RoundTripper
	calls  prometheus.ObserverVec
	method func(*http.Request) string
}

func (t *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	t.calls.WithLabelValues(t.method(req)).Observe(time.Since(start).Seconds())
	return resp, err
}

// otherMethod labels a call whose path has no method of the expected shape.
const otherMethod = "other"

// isTelegramMethodName reports whether s is a Bot API method name: 1 to
// 64 ASCII letters, as in sendMessage (Telegram Bot API:
// https://core.telegram.org/bots/api); what ^[A-Za-z]{1,64}$ matches.
func isTelegramMethodName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// telegramMethod is the Bot API method of a call: the path segment after
// bot<token> (Telegram: https://api.telegram.org/bot<token>/METHOD_NAME).
// The token is never part of it: the method is letters only, and a token
// has a ':' and digits.
func telegramMethod(req *http.Request) string {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if n := len(segs); n >= 2 && strings.HasPrefix(segs[n-2], "bot") && isTelegramMethodName(segs[n-1]) {
		return segs[n-1]
	}
	return otherMethod
}

// slackMethodName is a Web API method name: dotted words, as in
// chat.postMessage (Slack: https://api.slack.com/methods).
var slackMethodName = lazyre.New(`^[a-z][A-Za-z]*(\.[A-Za-z]+){0,4}$`)

// slackMethod is the Web API method of a call: the last path segment
// (Slack: https://slack.com/api/METHOD). Tokens travel in a header or the
// body, never in the path.
func slackMethod(req *http.Request) string {
	path := strings.Trim(req.URL.Path, "/")
	method := path[strings.LastIndex(path, "/")+1:]
	if len(method) > 64 || !slackMethodName().MatchString(method) {
		return otherMethod
	}
	return method
}

// discordWords are the path segments of Discord's REST routes that stay in
// a label as they are; any other segment is an id, an emoji or a token
// and becomes a placeholder.
var discordWords = map[string]bool{
	"channels": true, "messages": true, "guilds": true, "members": true, "users": true,
	"@me": true, "@original": true, "webhooks": true, "interactions": true, "callback": true,
	"applications": true, "commands": true, "gateway": true, "bot": true, "typing": true,
	"pins": true, "threads": true, "reactions": true, "roles": true, "permissions": true,
	"bulk-delete": true, "crosspost": true, "followers": true, "invites": true,
	"emojis": true, "stickers": true, "thread-members": true, "active": true,
	"archived": true, "public": true, "private": true, "search": true,
}

// discordVersion is the API version segment after "api" (v10).
var discordVersion = regexp.MustCompile(`^v[0-9]+$`)

// discordMaxSegments bounds the length of a route in a label; Discord's
// longest routes, such as
// /applications/{id}/guilds/{id}/commands/{id}/permissions, have 7
// segments.
const discordMaxSegments = 8

// discordMethod is a REST call's HTTP method and route, as Discord writes
// them in its docs, with every segment that is not a route word replaced:
// {token} for a webhook's or an interaction's token, {id} for any other
// ("POST /channels/{id}/messages",
// "POST /interactions/{id}/{token}/callback"). The "api/v10" prefix is
// dropped.
func discordMethod(req *http.Request) string {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "api" && discordVersion.MatchString(segs[i+1]) {
			segs = segs[i+2:]
			break
		}
	}
	if len(segs) == 0 || len(segs) > discordMaxSegments {
		return otherMethod
	}
	out := make([]string, len(segs))
	for i, s := range segs {
		switch {
		case discordWords[s]:
			out[i] = s
		case i == 2 && (segs[0] == "webhooks" || segs[0] == "interactions"):
			out[i] = "{token}"
		default:
			out[i] = "{id}"
		}
	}
	return httpMethod(req.Method) + " /" + strings.Join(out, "/")
}

// matrixWords are the path segments of the Matrix client-server API that
// stay in a label as they are; an event type stays when it is one the
// bridge sends or reads (matrixTypes); any other segment is an id, a
// transaction id or a state key and becomes a placeholder.
var matrixWords = map[string]bool{
	"sync": true, "rooms": true, "send": true, "state": true, "join": true, "leave": true,
	"invite": true, "account": true, "whoami": true, "relations": true, "user": true,
	"filter": true, "event": true, "messages": true, "receipt": true, "redact": true,
	"joined_members": true, "members": true, "profile": true, "versions": true, "login": true,
	"logout": true, "joined_rooms": true, "typing": true, "context": true,
}

// matrixTypes are the event types the bridge sends or reads by path.
var matrixTypes = map[string]bool{
	"m.room.message": true, "m.poll.start": true, "m.poll.end": true, "m.poll.response": true,
	"org.matrix.msc3381.poll.start": true, "org.matrix.msc3381.poll.end": true,
	"org.matrix.msc3381.poll.response": true, "m.room.encryption": true, "m.reaction": true,
	"m.room.member": true, "m.room.name": true, "m.reference": true, "m.replace": true, "m.thread": true,
}

// matrixMethod is a client-server API call as a label: the HTTP method
// and the path after /_matrix/client/<version>, with ids as placeholders
// ("PUT /rooms/{id}/send/m.room.message/{id}"); other for a path of
// another shape. Room and user ids, transaction ids and tokens never
// reach a label.
func matrixMethod(req *http.Request) string {
	rest, ok := strings.CutPrefix(req.URL.Path, "/_matrix/client/")
	if !ok {
		return otherMethod
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	if len(segs) < 2 || len(segs) > discordMaxSegments+1 {
		return otherMethod
	}
	segs = segs[1:] // the version: v3, r0, v1
	out := make([]string, len(segs))
	for i, s := range segs {
		switch {
		case matrixWords[s], matrixTypes[s]:
			out[i] = s
		default:
			out[i] = "{id}"
		}
	}
	return httpMethod(req.Method) + " /" + strings.Join(out, "/")
}

// httpMethod is an HTTP method as a label: one of the standard ones, or
// OTHER.
func httpMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// channelStates reports each channel's state at scrape time as
// askbridge_channel_state: 1 for the state it is in, 0 for the others.
type channelStates struct {
	channels []engine.Channel
}

var channelStateDesc = prometheus.NewDesc("askbridge_channel_state",
	"1 for the state each platform's channel is in, 0 for the others: connecting, connected, retrying, bad_credentials, standby (another replica holds the platform's single inbound connection).",
	[]string{"platform", "state"}, nil)

// channelStateList is every state a channel reports (engine.ChannelState).
var channelStateList = []engine.ChannelState{
	engine.StateConnecting, engine.StateConnected, engine.StateRetrying,
	engine.StateBadCredentials, engine.StateStandby,
}

// stateLabel is a state as a label: its words joined by '_'
// ("bad credentials" is bad_credentials).
func stateLabel(s engine.ChannelState) string {
	return strings.ReplaceAll(string(s), " ", "_")
}

func (c channelStates) Describe(ch chan<- *prometheus.Desc) { ch <- channelStateDesc }

// Collect reads State, which never blocks, from every channel.
func (c channelStates) Collect(ch chan<- prometheus.Metric) {
	for _, channel := range c.channels {
		now := channel.State()
		known := false
		for _, s := range channelStateList {
			v := 0.0
			if s == now {
				v, known = 1, true
			}
			ch <- prometheus.MustNewConstMetric(channelStateDesc, prometheus.GaugeValue, v, channel.Platform(), stateLabel(s))
		}
		if !known {
			ch <- prometheus.MustNewConstMetric(channelStateDesc, prometheus.GaugeValue, 1, channel.Platform(), stateLabel(now))
		}
	}
}

// pendingCollector reads the number of pending questions from Redis at
// scrape time, so every replica reports the shared number.
type pendingCollector struct {
	store pendingCounter
}

// pendingCounter counts the pending questions in O(1). *store.Store
// implements it.
type pendingCounter interface {
	Pending(ctx context.Context) (int64, error)
}

var pendingDesc = prometheus.NewDesc("askbridge_questions_pending", "Questions waiting for an answer, across all replicas.", nil, nil)

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pendingDesc }

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := c.store.Pending(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(pendingDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
}
