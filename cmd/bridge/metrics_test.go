package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestMetrics scrapes /metrics after one question of each ending the
// dashboard shows: answered, timed out, refused. Outcomes are in the
// result's words, a refused request is on platform "none", and the build,
// Redis and channel state series are there.
func TestMetrics(t *testing.T) {
	b := startBridge(t, map[string]string{})
	rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
	defer rdb.Close()
	ctx := context.Background()
	push := func(req string) {
		t.Helper()
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask", req}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	result := func(id string) askbridge.Result {
		t.Helper()
		got, err := rdb.BLPop(ctx, 5*time.Second, "askuser:result:{"+id+"}").Result()
		if err != nil {
			t.Fatalf("no result for %s: %v", id, err)
		}
		var r askbridge.Result
		if err := json.Unmarshal([]byte(got[1]), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	ask := func(id string) string {
		return `{"id":"` + id + `","to":"web","timeoutSeconds":30,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`
	}

	// Answered.
	push(ask("m-answered"))
	waitOpen(t, b, "m-answered")
	answerOnPage(t, b, "m-answered", `{"answers":{"a":["A"]}}`)
	if r := result("m-answered"); r.Status != askbridge.StatusAnswered {
		t.Fatalf("answered: %+v", r)
	}
	// Timed out: the shortest timeout is 30 s, so the question's deadline
	// (the hash's public field, and the sweepers' schedule) is moved to
	// the past; the next sweep ends it as a timeout.
	push(ask("m-timeout"))
	waitOpen(t, b, "m-timeout")
	past := time.Now().Add(-time.Second).UnixMilli()
	if err := rdb.HSet(ctx, "askuser:question:{m-timeout}", "deadline", past).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAddXX(ctx, "askuser:deadlines", redis.Z{Score: float64(past), Member: "m-timeout"}).Err(); err != nil {
		t.Fatal(err)
	}
	if r := result("m-timeout"); r.Reason != askbridge.ReasonTimeout {
		t.Fatalf("timeout: %+v", r)
	}
	// Refused.
	push(`{"id":"m-refused"}`)
	if r := result("m-refused"); r.Status != askbridge.StatusError {
		t.Fatalf("refused: %+v", r)
	}

	build := currentBuild()
	var body string
	wants := []string{
		`askbridge_questions_ended_total{outcome="answered",platform="web"} 1`,
		`askbridge_questions_ended_total{outcome="timeout",platform="web"} 1`,
		`askbridge_questions_ended_total{outcome="rejected",platform="none"} 1`,
		fmt.Sprintf(`askbridge_build_info{goversion=%q,revision="unknown",version=%q} 1`, build.GoVersion, build.Version),
		`askbridge_channel_state{platform="web",state="connected"} 1`,
		`askbridge_channel_state{platform="web",state="retrying"} 0`,
		`askbridge_channel_state{platform="web",state="bad_credentials"} 0`,
	}
	// The finisher counts an ending just after the result is pushed.
	testwait.Until(5*time.Second, func() bool {
		_, body = b.get(t, "/metrics")
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	})
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "askbridge_"))
		}
	}
	if strings.Contains(body, `outcome="expired"`) || strings.Contains(body, `platform=""`) {
		t.Errorf("metrics use other words than the result's:\n%s", grepLines(body, "askbridge_questions_ended"))
	}
	for _, command := range []string{"evalsha", "pipeline", "xreadgroup"} {
		if n := sampleCount(t, body, `askbridge_redis_call_duration_seconds_count{command="`+command+`"}`); n < 1 {
			t.Errorf("no Redis %s call timed:\n%s", command, grepLines(body, "askbridge_redis_call_duration_seconds_count"))
		}
	}
	for _, line := range strings.Split(grepLines(body, "askbridge_redis_call_duration_seconds"), "\n") {
		if m := commandLabel.FindStringSubmatch(line); m == nil || !isCommandName(m[1]) {
			t.Errorf("Redis series without a command name: %s", line)
		}
	}
}

var commandLabel = regexp.MustCompile(`\{command="([^"]*)"`)

// sampleCount is the value of the series line starting with series in a
// scrape, or -1 when there is none.
func sampleCount(t *testing.T, body, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	return -1
}

// redisCommand labels the command, never its arguments, and every way of
// running a script alike.
func TestRedisCommand(t *testing.T) {
	tests := []struct{ name, want string }{
		{"get", "get"},
		{"xreadgroup", "xreadgroup"},
		{"evalsha", "evalsha"},
		{"eval", "evalsha"},
		{"evalsha_ro", "evalsha"},
		{"askuser:question:{q-1}", "other"},
		{"GET", "other"},
		{"", "other"},
		{strings.Repeat("x", 33), "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := redisCommand(tc.name); got != tc.want {
				t.Errorf("redisCommand(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// The Redis hook times commands, scripts and pipelines on a real client,
// labelled by command and never by key.
func TestRedisHook(t *testing.T) {
	srv := miniredis.RunT(t)
	reg := prometheus.NewRegistry()
	m := newMetrics(reg, nopPending{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	rdb.AddHook(m.redisHook())
	ctx := context.Background()
	const key = "askuser:secret-key-name"
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := redis.NewScript(`return redis.call('GET', KEYS[1])`).Run(ctx, rdb, []string{key}).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	pipe.Get(ctx, key)
	pipe.Incr(ctx, key+"-n")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	got := counts(t, reg, "askbridge_redis_call_duration_seconds")
	for _, want := range []string{`command="set"`, `command="evalsha"`, `command="pipeline"`} {
		if got[want] < 1 {
			t.Errorf("no sample for %s: %v", want, got)
		}
	}
	if got[`command="get"`] != 0 || got[`command="incr"`] != 0 {
		t.Errorf("commands of a pipeline were timed one by one: %v", got)
	}
	for labels := range got {
		if strings.Contains(labels, "secret-key-name") {
			t.Errorf("a key became a label: %s", labels)
		}
	}
}

// The platform transport labels each call with the API method its URL
// names, in each platform's URL shape, and never with a token or an id.
func TestPlatformTransport(t *testing.T) {
	const (
		tgToken   = "123456789:AAHsecret-telegram_token"
		hookToken = "aW50ZXJhY3Rpb246c2VjcmV0LWludGVyYWN0aW9uLXRva2Vu"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"ok":true}`)) }))
	defer srv.Close()
	tests := []struct {
		platform string
		method   func(*http.Request) string
		verb     string
		path     string
		want     string
	}{
		{"telegram", telegramMethod, "POST", "/bot" + tgToken + "/sendMessage", "sendMessage"},
		{"telegram", telegramMethod, "POST", "/bot" + tgToken + "/getUpdates", "getUpdates"},
		{"telegram", telegramMethod, "POST", "/local-api/bot" + tgToken + "/editMessageText", "editMessageText"},
		{"telegram", telegramMethod, "GET", "/file/bot" + tgToken + "/photos/file_1.jpg", "other"},
		{"telegram", telegramMethod, "GET", "/file/bot" + tgToken + "/file_1.jpg", "other"},
		{"telegram", telegramMethod, "POST", "/bot" + tgToken, "other"},
		{"slack", slackMethod, "POST", "/api/chat.postMessage", "chat.postMessage"},
		{"slack", slackMethod, "POST", "/api/apps.connections.open", "apps.connections.open"},
		{"slack", slackMethod, "POST", "/api/auth.test", "auth.test"},
		{"slack", slackMethod, "POST", "/api/xoxb-not/a method", "other"},
		{"discord", discordMethod, "POST", "/api/v10/channels/1234567890123456789/messages", "POST /channels/{id}/messages"},
		{"discord", discordMethod, "PATCH", "/api/v9/channels/1234567890123456789/messages/9876543210987654321", "PATCH /channels/{id}/messages/{id}"},
		{"discord", discordMethod, "POST", "/api/v10/interactions/1234567890123456789/" + hookToken + "/callback", "POST /interactions/{id}/{token}/callback"},
		{"discord", discordMethod, "PATCH", "/api/v10/webhooks/1234567890123456789/" + hookToken + "/messages/@original", "PATCH /webhooks/{id}/{token}/messages/@original"},
		{"discord", discordMethod, "POST", "/api/v10/users/@me/channels", "POST /users/@me/channels"},
		{"discord", discordMethod, "PUT", "/api/v10/channels/1/messages/2/reactions/👍/@me", "PUT /channels/{id}/messages/{id}/reactions/{id}/@me"},
		{"discord", discordMethod, "GET", "/api/v10/gateway/bot", "GET /gateway/bot"},
		{"discord", discordMethod, "GET", "/api/v10/a/b/c/d/e/f/g/h/i", "other"},
		{"matrix", matrixMethod, "PUT", "/_matrix/client/v3/rooms/!1234567890123456789:example.org/send/m.room.message/ab-1234567890123456789", "PUT /rooms/{id}/send/m.room.message/{id}"},
		{"matrix", matrixMethod, "PUT", "/_matrix/client/v3/rooms/!r:example.org/send/org.matrix.msc3381.poll.start/t1", "PUT /rooms/{id}/send/org.matrix.msc3381.poll.start/{id}"},
		{"matrix", matrixMethod, "GET", "/_matrix/client/v3/rooms/!r:example.org/state/m.room.encryption/", "GET /rooms/{id}/state/m.room.encryption"},
		{"matrix", matrixMethod, "GET", "/_matrix/client/v3/sync", "GET /sync"},
		{"matrix", matrixMethod, "POST", "/_matrix/client/v3/join/!1234567890123456789:example.org", "POST /join/{id}"},
		{"matrix", matrixMethod, "GET", "/.well-known/matrix/client", "other"},
	}
	for _, tc := range tests {
		t.Run(tc.platform+tc.path, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := newMetrics(reg, nopPending{})
			client := m.timedClient(nil, 5*time.Second, tc.platform, tc.method)
			req, err := http.NewRequest(tc.verb, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := counts(t, reg, "askbridge_platform_call_duration_seconds")
			want := fmt.Sprintf("method=%q,platform=%q", tc.want, tc.platform)
			if len(got) != 1 || got[want] != 1 {
				t.Errorf("samples %v, want one for %s", got, want)
			}
			for labels := range got {
				for _, secret := range []string{"AAHsecret", "secret-telegram", hookToken, "1234567890123456789", "👍"} {
					if strings.Contains(labels, secret) {
						t.Errorf("label %s holds %q", labels, secret)
					}
				}
			}
		})
	}
}

// The channel state gauge is 1 for the state each channel is in and 0 for
// the others, read when scraped.
func TestChannelStates(t *testing.T) {
	ch := &stateChannel{platform: "telegram", state: engine.StateConnecting}
	reg := prometheus.NewRegistry()
	reg.MustRegister(channelStates{channels: []engine.Channel{ch}})
	for _, state := range []engine.ChannelState{engine.StateBadCredentials, engine.StateStandby} {
		ch.state = state
		got := gauges(t, reg, "askbridge_channel_state")
		if len(got) != len(channelStateList) {
			t.Errorf("%d series, want one per state: %v", len(got), got)
		}
		for labels, v := range got {
			want := 0.0
			if labels == fmt.Sprintf("platform=%q,state=%q", "telegram", stateLabel(state)) {
				want = 1
			}
			if v != want {
				t.Errorf("in state %s: %s = %v, want %v", state, labels, v, want)
			}
		}
	}
	if got := gauges(t, reg, "askbridge_channel_state"); got[`platform="telegram",state="standby"`] != 1 || got[`platform="telegram",state="bad_credentials"`] != 0 {
		t.Errorf("%v", got)
	}
}

// stateChannel is a Channel whose state the test sets; the engine never
// sees it.
type stateChannel struct {
	engine.Channel
	platform string
	state    engine.ChannelState
}

func (c *stateChannel) Platform() string           { return c.platform }
func (c *stateChannel) State() engine.ChannelState { return c.state }

// nopPending has no pending questions.
type nopPending struct{}

func (nopPending) Pending(context.Context) (int64, error) { return 0, nil }

// scrape is the text a scrape of reg returns.
func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// series reads the series called name from a scrape of reg: each one's
// value by its labels as the scrape writes them (method="get",platform="x").
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(scrape(t, reg), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			t.Fatalf("unexpected line %q", line)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[labels] = v
	}
	return out
}

// counts is the sample count of each series of the histogram name.
func counts(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	return series(t, reg, name+"_count")
}

// gauges is the value of each series of the gauge name.
func gauges(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	return series(t, reg, name)
}

// TestNameChecksMatchTheirExpressions checks the hand-written name checks
// against the expressions they stand for.
func TestNameChecksMatchTheirExpressions(t *testing.T) {
	command := regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	method := regexp.MustCompile(`^[A-Za-z]{1,64}$`)
	names := []string{"", "a", "get", "evalsha", "client-setinfo", "x_y", "Get", "1abc", "a b", "a.b", "sendMessage",
		"getUpdates", "bot123:abc", "é", "aé", strings.Repeat("a", 32), strings.Repeat("a", 33),
		strings.Repeat("A", 64), strings.Repeat("A", 65), "a-", "a9", "-a", "_a"}
	for _, n := range names {
		if got, want := isCommandName(n), command.MatchString(n); got != want {
			t.Errorf("isCommandName(%q) = %v, the expression says %v", n, got, want)
		}
		if got, want := isTelegramMethodName(n), method.MatchString(n); got != want {
			t.Errorf("isTelegramMethodName(%q) = %v, the expression says %v", n, got, want)
		}
	}
}
