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
	"github.com/askbridge/askbridge/engine"
)

// nopCoord is enough for Send and Finish, which never touch it, and for
// the handlers, which only deduplicate refused presses.
type nopCoord struct{ engine.Coordinator }

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

func testPlan(t testing.TB, id string) engine.Plan {
	req, err := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return engine.BuildPlan(id, req, caps)
}

// send posts a whole prompt and returns the messages Send handed over.
func send(ctx context.Context, c *Channel, chat string, plan engine.Plan) ([]engine.MessageRef, error) {
	var refs []engine.MessageRef
	err := c.Send(ctx, engine.Delivery{Chat: chat, Plan: plan, Sent: func(ref engine.MessageRef) bool {
		refs = append(refs, ref)
		return true
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
			var se *engine.SendError
			if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter != c.want {
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
	if kind, wait, _ := engine.Classify(err); kind != engine.RateLimited || wait <= 0 {
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
		kind   engine.ErrorKind
		reason string
	}{
		{404, `{"message":"Unknown Channel","code":10003}`, engine.Permanent, "Discord: Unknown Channel (code 10003)"},
		{403, `{"message":"Missing Access","code":50001}`, engine.Permanent, "Discord: Missing Access (code 50001)"},
		{403, `{"message":"Missing Permissions","code":50013}`, engine.Permanent, "Discord: Missing Permissions (code 50013)"},
		{403, `{"message":"Cannot send messages to this user","code":50007}`, engine.Permanent, "Discord: Cannot send messages to this user (code 50007)"},
		{401, `{"message":"401: Unauthorized","code":0}`, engine.Permanent, "Discord: 401: Unauthorized (code 0)"},
		{500, `{"message":"Internal Server Error","code":0}`, engine.Temporary, "Discord: Internal Server Error (code 0)"},
		{502, `<html>bad gateway</html>`, engine.Temporary, "Discord: "},
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
		kind, _, reason := engine.Classify(err)
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

func longPlan(t *testing.T) engine.Plan {
	t.Helper()
	for _, s := range shapes {
		if s.name == "long_split" {
			return engine.BuildPlan("long", mustRequest(t, s.body), caps)
		}
	}
	t.Fatal("no long_split shape")
	return engine.Plan{}
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
	var from []engine.MessageRef
	err = ch.Send(ctx, engine.Delivery{Chat: room, Plan: plan, From: 1, Sent: func(ref engine.MessageRef) bool {
		from = append(from, ref)
		return true
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
	err = ch.Send(ctx, engine.Delivery{Chat: room, Plan: plan, From: len(parts), Sent: func(engine.MessageRef) bool {
		t.Error("Sent called past the last part")
		return true
	}})
	if err != nil || posted() != before {
		t.Errorf("from past the last part: %d posted, %v", posted()-before, err)
	}

	plan.ID = "long-3"
	before = posted()
	err = ch.Send(ctx, engine.Delivery{Chat: room, Plan: plan, Sent: func(engine.MessageRef) bool { return false }})
	if err != nil || posted()-before != 1 {
		t.Errorf("Sent saying stop: %d posted, error %v, want 1 and none", posted()-before, err)
	}
}

// withoutInstructions is what part, a message of plan's prompt as posted,
// shows once its question ended with status: its lines less the trailing
// instruction lines (Plan.FreeText and each line of Plan.Closing), the
// status line under them, or alone when nothing else is left.
func withoutInstructions(plan engine.Plan, part, status string) string {
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
	end := engine.Ending{Plan: plan, Outcome: askbridge.OutcomeCancelled, Status: "Cancelled"}
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
	gone := engine.MessageRef{Platform: Platform, Chat: room, Message: "1999999999999999999"}
	if err := ch.Finish(ctx, gone, end); err != nil {
		t.Errorf("finishing a message that is gone: %v", err)
	}
	box := refs[0]
	box.Part = engine.PartReplyBox
	if err := ch.Finish(ctx, box, end); err == nil {
		t.Error("finishing a part the prompt does not have succeeded")
	} else if kind, _, _ := engine.Classify(err); kind != engine.Permanent {
		t.Errorf("finishing a part the prompt does not have: %v, want permanent", err)
	}
}

// seenPlans are the plans of a long prompt of a request with an escalation
// step, in its first place: open (a Seen button) and once someone pressed
// Seen (a "Seen by" note, no Seen button).
func seenPlans(t *testing.T) (open, seen engine.Plan) {
	t.Helper()
	body := strings.Replace(shapes[6].body, `{"questions"`, `{"timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"discord:1000000000000000003"}],"questions"`, 1)
	rec := seenRecord(t, body)
	open = rec.PlanFor(0, caps)
	rec.Acknowledged = &seenBy
	return open, rec.PlanFor(0, caps)
}

// TestUpdateShowsThePlan: Update edits each part of an open prompt to
// show the part as Send posts it for the new plan (the notes under the
// last part, the buttons less Seen on it, none on the others), quietly,
// once per call and safe to repeat; a message or channel that is gone is
// done, and a part the plan does not have is refused for good.
func TestUpdateShowsThePlan(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room := fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	ctx := context.Background()
	open, seen := seenPlans(t)
	refs, err := send(ctx, ch, room, open)
	if err != nil || len(refs) < 3 {
		t.Fatalf("%d parts, %v; want a prompt of several", len(refs), err)
	}
	if last, _ := fake.Message(refs[len(refs)-1].Message); !slices.Contains(ids(last), askbridge.EncodePayload(open.ID, askbridge.Choice{Kind: askbridge.ControlSeen})) {
		t.Fatalf("the prompt has no Seen button: %v", ids(last))
	}
	parts := renderParts(seen)
	for range 2 {
		for i, ref := range refs {
			if err := ch.Update(ctx, ref, seen); err != nil {
				t.Fatalf("update part %d: %v", i, err)
			}
			m, _ := fake.Message(ref.Message)
			if m.Content != parts[i] || m.Flags&discordtest.SuppressEmbeds == 0 {
				t.Errorf("part %d after Update (flags %d):\n%s\nwant\n%s", i, m.Flags, m.Content, parts[i])
			}
			want := []string{}
			if i == len(refs)-1 {
				want = []string{askbridge.EncodePayload(seen.ID, askbridge.Choice{Kind: askbridge.ControlSkip})}
			}
			if got := ids(m); !slices.Equal(got, want) {
				t.Errorf("part %d shows buttons %v, want %v", i, got, want)
			}
		}
	}
	last, _ := fake.Message(refs[len(refs)-1].Message)
	if !strings.HasSuffix(last.Content, "\n\nSeen by alice\\_b") || last.Edits != 2 {
		t.Errorf("the last part, edited %d times:\n%s", last.Edits, last.Content)
	}
	for _, r := range fake.Requests() {
		if r.Message != nil && (!r.Message.Quiet() || !r.Message.SuppressesEmbeds()) {
			t.Errorf("%s %s: allowed_mentions %+v flags %v", r.Method, r.Path, r.Message.AllowedMentions, r.Message.Flags)
		}
	}
	for _, gone := range []engine.MessageRef{
		{Platform: Platform, Chat: room, Message: "1999999999999999999"},
		{Platform: Platform, Chat: "1999999999999999998", Message: refs[0].Message},
	} {
		if err := ch.Update(ctx, gone, seen); err != nil {
			t.Errorf("updating a message that is gone (%+v): %v", gone, err)
		}
	}
	past := refs[0]
	past.Part = len(refs)
	if kind, _, _ := engine.Classify(ch.Update(ctx, past, seen)); kind != engine.Permanent {
		t.Errorf("updating a part the prompt does not have: %v, want permanent", kind)
	}
}

// ids lists the custom_ids of a message's buttons.
func ids(m discordtest.Message) []string {
	out := []string{}
	for _, row := range m.Components {
		for _, b := range row.Components {
			out = append(out, b.CustomID)
		}
	}
	return out
}

// TestRemindRepliesQuietly: a reminder is a reply to the prompt in its
// channel that pings no one and unfurls nothing, with its text escaped;
// Remind returns it; a prompt deleted by then gets a plain message; a
// channel the bot may not post in is a permanent refusal.
func TestRemindRepliesQuietly(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room := fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	ctx := context.Background()
	refs, err := send(ctx, ch, room, testPlan(t, "remind"))
	if err != nil {
		t.Fatal(err)
	}
	prompt := refs[0]
	text := "Still waiting @everyone <@123> — see https://x.test — 12 min left."
	got, err := ch.Remind(ctx, prompt, text)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := fake.Message(got.Message)
	if !ok || got.Platform != Platform || got.Chat != room || m.ChannelID != room {
		t.Fatalf("Remind returned %+v, on Discord %+v", got, m)
	}
	if m.ReplyTo != prompt.Message || m.Content != escape(text) || len(m.Pings()) > 0 || len(m.Unfurls()) > 0 {
		t.Errorf("the reminder replies to %q, pings %v, unfurls %v:\n%s", m.ReplyTo, m.Pings(), m.Unfurls(), m.Content)
	}
	reqs := fake.Requests()
	sent := reqs[len(reqs)-1].Message
	if sent == nil || !sent.Quiet() || !sent.SuppressesEmbeds() || sent.Reference == nil || sent.Reference.FailIfNotExists == nil || *sent.Reference.FailIfNotExists {
		t.Errorf("the reminder was sent as %+v", sent)
	}

	if err := ch.Delete(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	plain, err := ch.Remind(ctx, prompt, text)
	if m, _ := fake.Message(plain.Message); err != nil || m.ReplyTo != "" || m.Content != escape(text) {
		t.Errorf("a reminder under a deleted prompt: %v, %+v", err, m)
	}

	fake.DenyChannel(room)
	if _, err := ch.Remind(ctx, refs[0], text); err == nil {
		t.Error("a reminder in a denied channel was posted")
	} else if kind, _, reason := engine.Classify(err); kind != engine.Permanent || !strings.Contains(reason, "Missing Access") {
		t.Errorf("a reminder in a denied channel: %v %q, want permanent", kind, reason)
	}
}

// TestDeleteIsSafeToRepeat: Delete removes a message the bot posted; one
// already gone, or in a channel that is gone, is done; another user's
// message, which a bot without Manage Messages cannot delete, is a
// permanent refusal.
func TestDeleteIsSafeToRepeat(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room, user := fake.AddChannel(), fake.AddUser("p")
	ch := newTestChannel(t, fake.URL, fake.Token())
	ctx := context.Background()
	refs, err := send(ctx, ch, room, testPlan(t, "delete"))
	if err != nil {
		t.Fatal(err)
	}
	reminder, err := ch.Remind(ctx, refs[0], "Still waiting.")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ch.Delete(ctx, reminder); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if _, ok := fake.Deleted(reminder.Message); !ok {
		t.Error("the reminder is still there")
	}
	if _, ok := fake.Message(refs[0].Message); !ok {
		t.Error("deleting the reminder deleted the prompt")
	}
	if err := ch.Delete(ctx, engine.MessageRef{Platform: Platform, Chat: "1999999999999999998", Message: reminder.Message}); err != nil {
		t.Errorf("deleting in a channel that is gone: %v", err)
	}
	theirs, err := fake.Post(user, room, "hello")
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Delete(ctx, engine.MessageRef{Platform: Platform, Chat: room, Message: theirs})
	if kind, _, reason := engine.Classify(err); err == nil || kind != engine.Permanent || !strings.Contains(reason, "Missing Permissions") {
		t.Errorf("deleting another user's message: %v", err)
	}
}

// TestUpdateRemindDeleteRefusals: Update, Remind and Delete classify
// Discord's refusals as Send and Finish do, each in one call: a 429 is a
// rate limit with Discord's retry_after, and the route is held back for
// it; a 5xx is temporary; a 403 permanent.
func TestUpdateRemindDeleteRefusals(t *testing.T) {
	ref := engine.MessageRef{Platform: Platform, Chat: "123", Message: "456"}
	plan := testPlan(t, "q")
	calls := map[string]func(context.Context, *Channel) error{
		"update": func(ctx context.Context, c *Channel) error { return c.Update(ctx, ref, plan) },
		"remind": func(ctx context.Context, c *Channel) error {
			_, err := c.Remind(ctx, ref, "Still waiting.")
			return err
		},
		"delete": func(ctx context.Context, c *Channel) error { return c.Delete(ctx, ref) },
	}
	cases := []struct {
		status  int
		headers map[string]string
		body    string
		kind    engine.ErrorKind
		wait    time.Duration
	}{
		{429, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "2.5"}, `{"message":"You are being rate limited.","retry_after":2.5,"global":false}`, engine.RateLimited, 2500 * time.Millisecond},
		{502, nil, `<html>bad gateway</html>`, engine.Temporary, 0},
		{403, nil, `{"message":"Missing Access","code":50001}`, engine.Permanent, 0},
	}
	for name, call := range calls {
		for _, c := range cases {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				for k, v := range c.headers {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				fmt.Fprint(w, c.body)
			}))
			ch := newTestChannel(t, srv.URL+"/", "tok")
			err := call(context.Background(), ch)
			var se *engine.SendError
			if !errors.As(err, &se) || se.Kind != c.kind || se.RetryAfter != c.wait {
				t.Errorf("%s, %d: %v, want kind %v waiting %s", name, c.status, err, c.kind, c.wait)
			}
			if c.status == 429 {
				// The bucket is empty until its reset: a call with less
				// time than that is a rate limit at once.
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				err := call(ctx, ch)
				cancel()
				if kind, _, _ := engine.Classify(err); kind != engine.RateLimited {
					t.Errorf("%s right after a 429: %v, want a rate limit", name, err)
				}
			}
			if hits.Load() != 1 {
				t.Errorf("%s, %d: %d calls, want one", name, c.status, hits.Load())
			}
			srv.Close()
		}
	}
}

// TestSendInSeveralChannels: a question asked in two channels (several
// places, an escalation step) is posted in each, though Discord checks an
// enforced nonce against every message of the bot; sent again to one
// channel, it is returned, not posted twice.
func TestSendInSeveralChannels(t *testing.T) {
	fake := discordtest.New(discordtest.Options{})
	defer fake.Close()
	room, other := fake.AddChannel(), fake.AddChannel()
	ch := newTestChannel(t, fake.URL, fake.Token())
	ctx := context.Background()
	plan := testPlan(t, "two-places")
	first, err := send(ctx, ch, room, plan)
	if err != nil {
		t.Fatal(err)
	}
	second, err := send(ctx, ch, other, plan)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := fake.Message(second[0].Message); !ok || m.ChannelID != other || second[0].Message == first[0].Message {
		t.Fatalf("the prompt in the second channel is %+v, on Discord in %q", second[0], m.ChannelID)
	}
	again, err := send(ctx, ch, other, plan)
	if err != nil || !slices.Equal(again, second) || len(fake.Messages(other)) != 1 || len(fake.Messages(room)) != 1 {
		t.Errorf("sent again: %+v, %v; %d and %d messages", again, err, len(fake.Messages(room)), len(fake.Messages(other)))
	}
}
