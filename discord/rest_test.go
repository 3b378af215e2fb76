package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/discord/internal/discordtest"
)

// nopCoord is enough for Send and Finish, which never touch it, and for
// the handlers, which only deduplicate refused presses.
type nopCoord struct{ askbridge.Coordinator }

func (nopCoord) FirstSeen(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}

// ShareCooldown tells no one: the channel is alone.
func (nopCoord) ShareCooldown(context.Context, string, string, time.Duration) error { return nil }

func newTestChannel(t *testing.T, apiURL, token string) *Channel {
	t.Helper()
	c, err := New(Config{Token: token, APIURL: apiURL, Replica: "test"}, nopCoord{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testPlan(t testing.TB, id string) askbridge.Plan {
	req, err := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return askbridge.BuildPlan(id, req, caps)
}

// send posts a whole prompt and returns the messages Send handed over.
func send(ctx context.Context, c *Channel, chat string, plan askbridge.Plan) ([]askbridge.MessageRef, error) {
	var refs []askbridge.MessageRef
	err := c.Send(ctx, askbridge.Delivery{Chat: chat, Plan: plan, Sent: func(ref askbridge.MessageRef) error {
		refs = append(refs, ref)
		return nil
	}})
	return refs, err
}

func TestRateLimitResponsesAreClassified(t *testing.T) {
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		want    time.Duration
		global  bool
	}{
		{"body retry_after in seconds", nil, `{"message":"You are being rate limited.","retry_after":1.5,"global":false}`, 1500 * time.Millisecond, false},
		{"Reset-After header longer", map[string]string{"X-RateLimit-Reset-After": "2.25", "X-RateLimit-Remaining": "0"}, `{"message":"You are being rate limited.","retry_after":0.5,"global":false}`, 2250 * time.Millisecond, false},
		{"Retry-After header", map[string]string{"Retry-After": "3"}, `{"message":"You are being rate limited."}`, 3 * time.Second, false},
		{"global", map[string]string{"X-RateLimit-Global": "true", "Retry-After": "1"}, `{"message":"You are being rate limited.","retry_after":0.75,"global":true}`, time.Second, true},
		{"scope global", map[string]string{"X-RateLimit-Scope": "global"}, `{"message":"You are being rate limited.","retry_after":0.2}`, 200 * time.Millisecond, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				for k, v := range c.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(429)
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			ch := newTestChannel(t, srv.URL+"/", "tok")
			start := time.Now()
			_, err := send(context.Background(), ch, "123", testPlan(t, "q"))
			var se *askbridge.SendError
			if !errors.As(err, &se) || se.Kind != askbridge.RateLimited || se.RetryAfter != c.want {
				t.Fatalf("error %v (%#v), want rate limited for %s", err, se, c.want)
			}
			if time.Since(start) > 500*time.Millisecond || calls.Load() != 1 {
				t.Errorf("discordgo retried by itself: %d calls in %s", calls.Load(), time.Since(start))
			}
			var rl *rateLimitError
			if !errors.As(err, &rl) || rl.Global != c.global {
				t.Errorf("global %v, want %v", rl != nil && rl.Global, c.global)
			}
		})
	}
}

func TestRouteBucketsAreHonoured(t *testing.T) {
	fake := discordtest.New(discordtest.Options{Limits: map[string]discordtest.Limit{
		"POST /channels/{id}/messages": {Count: 2, Window: 400 * time.Millisecond},
	}})
	defer fake.Close()
	room := fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	start := time.Now()
	for i := range 5 {
		if _, err := send(context.Background(), ch, room, testPlan(t, fmt.Sprint("q", i))); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Errorf("5 messages at 2 per 400ms took only %s", d)
	}
	for _, r := range fake.Requests() {
		if r.Status == 429 {
			t.Errorf("the bucket was not honoured: %s %s got 429", r.Method, r.Path)
		}
	}
	// A wait longer than the caller allows is a rate limit at once.
	other := fake.AddChannel()
	for i := range 2 {
		if _, err := send(context.Background(), ch, other, testPlan(t, fmt.Sprint("fill", i))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	before := len(fake.Requests())
	_, err := send(ctx, ch, other, testPlan(t, "late"))
	if kind, wait, _ := askbridge.Classify(err); kind != askbridge.RateLimited || wait <= 0 {
		t.Errorf("send past the deadline: %v", err)
	}
	if len(fake.Requests()) != before {
		t.Error("a request went out although its wait passed the deadline")
	}
}

func TestPlatformErrorsAreClassified(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   askbridge.ErrorKind
		reason string
	}{
		{404, `{"message":"Unknown Channel","code":10003}`, askbridge.Permanent, "Discord: Unknown Channel (code 10003)"},
		{403, `{"message":"Missing Access","code":50001}`, askbridge.Permanent, "Discord: Missing Access (code 50001)"},
		{403, `{"message":"Missing Permissions","code":50013}`, askbridge.Permanent, "Discord: Missing Permissions (code 50013)"},
		{403, `{"message":"Cannot send messages to this user","code":50007}`, askbridge.Permanent, "Discord: Cannot send messages to this user (code 50007)"},
		{401, `{"message":"401: Unauthorized","code":0}`, askbridge.Permanent, "Discord: 401: Unauthorized (code 0)"},
		{500, `{"message":"Internal Server Error","code":0}`, askbridge.Temporary, "Discord: Internal Server Error (code 0)"},
		{502, `<html>bad gateway</html>`, askbridge.Temporary, "Discord: "},
	}
	for _, c := range cases {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(c.status)
			fmt.Fprint(w, c.body)
		}))
		ch := newTestChannel(t, srv.URL+"/", "tok")
		_, err := send(context.Background(), ch, "123", testPlan(t, "q"))
		srv.Close()
		kind, _, reason := askbridge.Classify(err)
		if kind != c.kind || !strings.HasPrefix(reason, c.reason) {
			t.Errorf("%d %s: kind %v reason %q, want %v %q", c.status, c.body, kind, reason, c.kind, c.reason)
		}
		if calls.Load() != 1 {
			t.Errorf("%d: %d calls; discordgo must not retry on its own", c.status, calls.Load())
		}
	}
}

func TestFakeRefusesWhatDiscordRefuses(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room := fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	btn := func(label, id string) discordgo.MessageComponent {
		return discordgo.Button{Label: label, CustomID: id, Style: discordgo.PrimaryButton}
	}
	row := func(btns ...discordgo.MessageComponent) discordgo.MessageComponent {
		return discordgo.ActionsRow{Components: btns}
	}
	six := []discordgo.MessageComponent{}
	for i := range 6 {
		six = append(six, row(btn("x", fmt.Sprint("id", i))))
	}
	cases := []struct {
		name string
		ms   *discordgo.MessageSend
	}{
		{"2001 characters", &discordgo.MessageSend{Content: strings.Repeat("y", 2001)}},
		{"6 rows", &discordgo.MessageSend{Content: "x", Components: six}},
		{"6 buttons in a row", &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{row(btn("a", "1"), btn("b", "2"), btn("c", "3"), btn("d", "4"), btn("e", "5"), btn("f", "6"))}}},
		{"81-character label", &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{row(btn(strings.Repeat("l", 81), "1"))}}},
		{"101-character custom_id", &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{row(btn("l", strings.Repeat("i", 101)))}}},
	}
	for _, c := range cases {
		_, err := ch.rest.ChannelMessageSendComplex(room, c.ms)
		if restCode(err) != codeInvalidFormBody || restStatus(err) != 400 {
			t.Errorf("%s: %v, want 400 Invalid Form Body (50035)", c.name, err)
		}
	}
	// What the renderer makes of the tightest plan passes.
	plan := testPlan(t, "q")
	plan.Rows[0][0].Label = strings.Repeat("x", 200)
	if _, err := send(context.Background(), ch, room, plan); err != nil {
		t.Errorf("the renderer let a long label through: %v", err)
	}
}

func TestTokensStayOutOfErrors(t *testing.T) {
	if got := redactURL("https://discord.com/api/v9/interactions/123/secret-token/callback"); strings.Contains(got, "secret") {
		t.Errorf("redactURL kept the token: %s", got)
	}
	if got := redactURL("https://discord.com/api/v9/webhooks/1/secret-token/messages/@original"); strings.Contains(got, "secret") {
		t.Errorf("redactURL kept the token: %s", got)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close() // hang up: the client gets a *url.Error naming the URL
	}))
	defer srv.Close()
	ch := newTestChannel(t, srv.URL+"/", "bot-token-value")
	err := ch.rest.InteractionRespond(&discordgo.Interaction{ID: "1", Token: "interaction-secret"}, &discordgo.InteractionResponse{Type: 6})
	serr := ch.classify("acknowledge", err)
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("error %v is not a *url.Error", err)
	}
	if err == nil || strings.Contains(serr.Error(), "interaction-secret") || strings.Contains(serr.Error(), "bot-token-value") {
		t.Errorf("error %v shows a token", serr)
	}
}

func longPlan(t *testing.T) askbridge.Plan {
	t.Helper()
	for _, s := range shapes {
		if s.name == "long_split" {
			return askbridge.BuildPlan("long", mustRequest(t, s.body), caps)
		}
	}
	t.Fatal("no long_split shape")
	return askbridge.Plan{}
}

// TestSendPostsFromAPart: Send numbers each message by its part in the
// whole prompt, starts at Delivery.From, stops at the first error of Sent,
// returning it as is, and never posts a part of a question twice.
func TestSendPostsFromAPart(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room := fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	plan := longPlan(t)
	parts := renderParts(plan)
	if len(parts) < 3 {
		t.Fatalf("%d parts, want at least 3", len(parts))
	}
	ctx := context.Background()
	posted := func() int { return len(fake.Messages(room)) }

	refs, err := send(ctx, ch, room, plan)
	if err != nil || len(refs) != len(parts) {
		t.Fatalf("whole prompt: %d refs, %v", len(refs), err)
	}
	for i, ref := range refs {
		m, _ := fake.Message(ref.Message)
		if ref.Part != i || ref.Chat != room || ref.Platform != Platform || m.Content != parts[i] {
			t.Errorf("ref %d = %+v showing %.20q, want part %d", i, ref, m.Content, i)
		}
	}

	// The same prompt again (a replica that took over): Discord returns
	// the parts already posted (their nonces), and posts nothing.
	before := posted()
	again, err := send(ctx, ch, room, plan)
	if err != nil || posted() != before || !slices.Equal(again, refs) {
		t.Fatalf("the same prompt again: %d posted, refs %+v, %v; want none posted, %+v", posted()-before, again, err, refs)
	}

	// Another question of the same shape, from part 1.
	plan.ID = "long-2"
	before = posted()
	var from []askbridge.MessageRef
	err = ch.Send(ctx, askbridge.Delivery{Chat: room, Plan: plan, From: 1, Sent: func(ref askbridge.MessageRef) error {
		from = append(from, ref)
		return nil
	}})
	if err != nil || len(from) != len(parts)-1 || posted()-before != len(parts)-1 {
		t.Fatalf("from part 1: %d refs, %d posted, %v", len(from), posted()-before, err)
	}
	for i, ref := range from {
		if m, _ := fake.Message(ref.Message); ref.Part != i+1 || m.Content != parts[i+1] {
			t.Errorf("from part 1, message %d: part %d showing %.20q", i, ref.Part, m.Content)
		}
	}
	if last, _ := fake.Message(from[len(from)-1].Message); len(last.Components) == 0 {
		t.Error("the last part lost its buttons")
	}

	before = posted()
	err = ch.Send(ctx, askbridge.Delivery{Chat: room, Plan: plan, From: len(parts), Sent: func(askbridge.MessageRef) error {
		t.Error("Sent called past the last part")
		return nil
	}})
	if err != nil || posted() != before {
		t.Errorf("from past the last part: %d posted, %v", posted()-before, err)
	}

	errStop := errors.New("store is down")
	plan.ID = "long-3"
	before = posted()
	err = ch.Send(ctx, askbridge.Delivery{Chat: room, Plan: plan, Sent: func(askbridge.MessageRef) error { return errStop }})
	if err != errStop || posted()-before != 1 {
		t.Errorf("Sent failing: %d posted, error %v, want 1 and the error as is", posted()-before, err)
	}
}

// withoutInstructions is what part, a message of plan's prompt as posted,
// shows once its question ended with status: its lines less the trailing
// instruction lines (Plan.FreeText and each line of Plan.Closing), the
// status line under them, or alone when nothing else is left.
func withoutInstructions(plan askbridge.Plan, part, status string) string {
	instr := map[string]bool{escape(plan.FreeText): true}
	for _, l := range strings.Split(plan.Closing, "\n") {
		instr[escape(l)] = true
	}
	ls := strings.Split(part, "\n")
	for len(ls) > 0 && (instr[ls[len(ls)-1]] || ls[len(ls)-1] == "") {
		ls = ls[:len(ls)-1]
	}
	st := "**" + escape(status) + "**"
	if len(ls) == 0 {
		return st
	}
	return strings.Join(ls, "\n") + "\n\n" + st
}

// TestFinishRendersThePartItShowed: Finish shows part ref.Part of the
// plan without its instructions, with the status line, in one edit per message, without reading the
// message back; it is safe to repeat, and a message that is gone is done.
func TestFinishRendersThePartItShowed(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room := fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	plan := longPlan(t)
	parts := renderParts(plan)
	ctx := context.Background()
	refs, err := send(ctx, ch, room, plan)
	if err != nil {
		t.Fatal(err)
	}
	end := askbridge.Ending{Plan: plan, Outcome: askbridge.OutcomeCancelled, Status: "Cancelled"}
	for range 2 {
		for i, ref := range refs {
			if err := ch.Finish(ctx, ref, end); err != nil {
				t.Fatalf("finish part %d: %v", i, err)
			}
			m, _ := fake.Message(ref.Message)
			if want := withoutInstructions(plan, parts[i], "Cancelled"); m.Content != want || len(m.Components) != 0 {
				t.Errorf("part %d after Finish: %d rows, content\n%s\nwant\n%s", i, len(m.Components), m.Content, want)
			}
			if m.Flags&discordtest.SuppressEmbeds == 0 {
				t.Errorf("part %d lost SUPPRESS_EMBEDS: flags %d", i, m.Flags)
			}
		}
	}
	for _, r := range fake.Requests() {
		if r.Method == http.MethodGet && strings.Contains(r.Path, "/messages/") {
			t.Errorf("Finish read a message back: %s %s", r.Method, r.Path)
		}
		if r.Message != nil && (!r.Message.Quiet() || !r.Message.SuppressesEmbeds()) {
			t.Errorf("%s %s: allowed_mentions %+v flags %v, want parse [] and SUPPRESS_EMBEDS", r.Method, r.Path, r.Message.AllowedMentions, r.Message.Flags)
		}
	}
	gone := askbridge.MessageRef{Platform: Platform, Chat: room, Message: "1999999999999999999"}
	if err := ch.Finish(ctx, gone, end); err != nil {
		t.Errorf("finishing a message that is gone: %v", err)
	}
	box := refs[0]
	box.Part = askbridge.PartReplyBox
	if err := ch.Finish(ctx, box, end); err == nil {
		t.Error("finishing a part the prompt does not have succeeded")
	} else if kind, _, _ := askbridge.Classify(err); kind != askbridge.Permanent {
		t.Errorf("finishing a part the prompt does not have: %v, want permanent", err)
	}
}
