package slack

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// fakeChannel is a channel on a fake Slack with channel C1, its rate-limit
// gate on a fake clock (so a test moves past a Retry-After at once).
func fakeChannel(t *testing.T) (*Channel, *slacktest.Server, *clockwork.FakeClock) {
	t.Helper()
	fake := slacktest.New(slacktest.Options{BotToken: "xoxb-1", SigningSecret: "s"})
	t.Cleanup(fake.Close)
	fake.AddChannel("C1")
	c := newTestChannel(t, fake)
	clock := clockwork.NewFakeClock()
	c.gate.clock = clock
	return c, fake, clock
}

// post sends p to C1 and returns its messages.
func post(t *testing.T, c *Channel, p engine.Plan) []engine.MessageRef {
	t.Helper()
	var got collect
	if err := c.Send(context.Background(), engine.Delivery{Chat: "C1", Plan: p, Sent: got.sent}); err != nil {
		t.Fatal(err)
	}
	return got.refs
}

// sendErr is err as a *engine.SendError, failing the test when it is
// not one.
func sendErr(t *testing.T, err error) *engine.SendError {
	t.Helper()
	var se *engine.SendError
	if !errors.As(err, &se) {
		t.Fatalf("%v is not a SendError", err)
	}
	return se
}

// shownAs checks that message m of the fake shows want: its text and its
// blocks, as Send would post them.
func shownAs(t *testing.T, m slacktest.Message, want message) {
	t.Helper()
	blocks, err := json.Marshal(want.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != want.Text || string(m.Blocks) != string(blocks) {
		t.Errorf("message %s shows\n%s\n%s\nwant\n%s\n%s", m.TS, m.Text, m.Blocks, want.Text, blocks)
	}
}

// Someone pressed Seen: Update edits the prompt in place to show the plan
// as it now is, exactly as Send posts it: "Seen by Alice" with the notes,
// no Seen button, the options kept, the question's metadata kept, nothing
// unfurled. Updating again changes nothing; a prompt that is gone, or a
// message the bot cannot edit, counts as updated.
func TestUpdate(t *testing.T) {
	c, fake, _ := fakeChannel(t)
	caps := c.Capabilities()
	open := escalatedRecord(t, "en", nil).PlanFor(1, caps)
	seen := escalatedRecord(t, "en", seer("en")).PlanFor(1, caps)
	refs := post(t, c, open)
	if len(refs) != 1 {
		t.Fatalf("posted %+v", refs)
	}
	before, _ := fake.Message("C1", refs[0].Message)
	if got := slacktest.Buttons(before.Blocks); strings.Join(got, ",") != "Staging (Recommended),Production,Skip,Seen" {
		t.Fatalf("posted with buttons %q", got)
	}
	for range 2 {
		if err := c.Update(context.Background(), refs[0], seen); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := fake.Message("C1", refs[0].Message)
	shownAs(t, after, render(seen)[0])
	if got := slacktest.Buttons(after.Blocks); strings.Join(got, ",") != "Staging (Recommended),Production,Skip" {
		t.Errorf("updated with buttons %q", got)
	}
	if !strings.Contains(string(after.Blocks), `"No answer after 10 min, so this is asked here too.\nSeen by Alice"`) {
		t.Errorf("updated without the notes: %s", after.Blocks)
	}
	if after.Updates != 2 || string(after.Metadata) != string(before.Metadata) || !strings.Contains(string(after.Metadata), `"question":"q-seen"`) {
		t.Errorf("%d updates, metadata %s (was %s)", after.Updates, after.Metadata, before.Metadata)
	}
	for i, d := range after.Displays {
		if d != (slacktest.Display{}) {
			t.Errorf("write %d shown as %+v", i, d)
		}
	}

	// Gone: never posted, or not the bot's to edit.
	gone := engine.MessageRef{Platform: Platform, Chat: "C1", Message: "1.000001"}
	if err := c.Update(context.Background(), gone, seen); err != nil {
		t.Errorf("update of a message that is not there: %v", err)
	}
	ts, _, err := fake.Say(slacktest.Person{ID: "UALICE"}, "C1", "", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Update(context.Background(), engine.MessageRef{Platform: Platform, Chat: "C1", Message: ts}, seen); err != nil {
		t.Errorf("update of a person's message: %v", err)
	}
	if n := len(fake.Calls("chat.update")); n != 4 {
		t.Errorf("%d chat.update calls, want 4 (one try each)", n)
	}
}

// Update edits the part it is given, each with its own content: the notes
// only on the last part. A part the plan does not have is Permanent.
func TestUpdateParts(t *testing.T) {
	c, fake, _ := fakeChannel(t)
	p := bigPlan()
	refs := post(t, c, p)
	if len(refs) != 2 {
		t.Fatalf("posted %d parts, want 2", len(refs))
	}
	p.Notes = []string{"Seen by Alice"}
	want := render(p)
	for i := len(refs) - 1; i >= 0; i-- {
		if err := c.Update(context.Background(), refs[i], p); err != nil {
			t.Fatal(err)
		}
	}
	for i, ref := range refs {
		m, _ := fake.Message("C1", ref.Message)
		shownAs(t, m, want[i])
		if shows := strings.Contains(string(m.Blocks), "Seen by Alice"); shows != (i == 1) {
			t.Errorf("part %d shows the notes: %t", i, shows)
		}
	}
	beyond := refs[1]
	beyond.Part = 2
	if se := sendErr(t, c.Update(context.Background(), beyond, p)); se.Kind != engine.Permanent {
		t.Errorf("update of part 2 of 2: %v", se)
	}
}

// Update's refusals are classified as Finish's are: a 429 is RateLimited
// with Slack's Retry-After, and holds the channel's other calls back for
// it; a channel the bot left is Permanent.
func TestUpdateRefusals(t *testing.T) {
	c, fake, clock := fakeChannel(t)
	p := plan(t, "q", shapes[0].body)
	refs := post(t, c, p)
	fake.SetRateLimit(1, time.Minute, 6)
	if err := c.Notify(context.Background(), "C1", "", "one call of the window"); err != nil {
		t.Fatal(err)
	}
	if se := sendErr(t, c.Update(context.Background(), refs[0], p)); se.Kind != engine.RateLimited || se.RetryAfter != 6*time.Second {
		t.Errorf("update past the limit: %v", se)
	}
	// The gate holds the channel: a caller that cannot wait 6 s is told
	// so without a call.
	calls := len(fake.Calls("chat.update"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if se := sendErr(t, c.Update(ctx, refs[0], p)); se.Kind != engine.RateLimited || se.RetryAfter <= 0 {
		t.Errorf("update while the channel is held: %v", se)
	}
	if n := len(fake.Calls("chat.update")); n != calls {
		t.Errorf("%d calls made while the channel was held", n-calls)
	}
	fake.SetRateLimit(0, 0, 0)
	clock.Advance(6 * time.Second)
	fake.SetChannelError("C1", "not_in_channel")
	if se := sendErr(t, c.Update(context.Background(), refs[0], p)); se.Kind != engine.Permanent || se.Reason != "not_in_channel" {
		t.Errorf("update in a channel the bot left: %v", se)
	}
	fake.SetChannelError("C1", "")
	if err := c.Update(context.Background(), refs[0], p); err != nil {
		t.Errorf("update once the limit passed: %v", err)
	}
}

// Remind posts the reminder in the prompt's thread, escaped so it
// mentions no one, unfurling nothing, and returns it; Delete deletes it,
// and a reminder already gone counts as deleted.
func TestRemindAndDelete(t *testing.T) {
	c, fake, _ := fakeChannel(t)
	refs := post(t, c, plan(t, "q", shapes[0].body))
	prompt := refs[0]
	ref, err := c.Remind(context.Background(), prompt, "Still waiting for <!channel> & <@U0BOSS> — 12 min left.")
	if err != nil {
		t.Fatal(err)
	}
	if ref.Platform != Platform || ref.Chat != "C1" || ref.Message == "" || ref.Message == prompt.Message {
		t.Fatalf("reminder %+v", ref)
	}
	m, ok := fake.Message("C1", ref.Message)
	if !ok || m.ThreadTS != prompt.Message || m.Text != "Still waiting for &lt;!channel&gt; &amp; &lt;@U0BOSS&gt; — 12 min left." || m.Blocks != nil {
		t.Fatalf("reminder posted as %+v, want a plain escaped reply in the thread %s", m, prompt.Message)
	}
	if len(m.Displays) != 1 || m.Displays[0] != (slacktest.Display{}) {
		t.Errorf("reminder shown as %+v", m.Displays)
	}
	for range 2 {
		if err := c.Delete(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
	}
	if d := fake.Deleted("C1"); len(d) != 1 || d[0].TS != ref.Message {
		t.Errorf("deleted %+v, want the reminder", d)
	}
	if _, ok := fake.Message("C1", prompt.Message); !ok {
		t.Error("the prompt went with its reminder")
	}
	if n := len(fake.Calls("chat.delete")); n != 2 {
		t.Errorf("%d chat.delete calls, want 2", n)
	}
}

// Remind makes one try: a 429 is RateLimited with Slack's wait, a prompt
// that is gone is Permanent (no reminder can go under it). A delete waits
// out the channel's limit like every call to it, and a 429 is RateLimited;
// of a message that is not the bot's, it is Permanent.
func TestRemindAndDeleteRefusals(t *testing.T) {
	c, fake, clock := fakeChannel(t)
	refs := post(t, c, plan(t, "q", shapes[0].body))
	prompt := refs[0]
	fake.SetRateLimit(1, time.Minute, 8)
	if _, err := c.Remind(context.Background(), prompt, "first"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Remind(context.Background(), prompt, "second")
	if se := sendErr(t, err); se.Kind != engine.RateLimited || se.RetryAfter != 8*time.Second {
		t.Errorf("reminder past the limit: %v", se)
	}
	// Held for 8 s, the channel's delete cannot go within a second.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if se := sendErr(t, c.Delete(ctx, prompt)); se.Kind != engine.RateLimited || len(fake.Calls("chat.delete")) != 0 {
		t.Errorf("delete while the channel is held: %v", se)
	}
	if n := len(fake.Calls("chat.postMessage")); n != 3 {
		t.Errorf("%d chat.postMessage calls, want 3 (the prompt, then one try of each reminder)", n)
	}
	fake.SetRateLimit(0, 0, 0)
	clock.Advance(8 * time.Second)
	// A delete Slack answers 429 returns it with Slack's wait.
	fake.SetRateLimit(1, time.Minute, 5)
	if err := c.Notify(context.Background(), "C1", "", "one call of the window"); err != nil {
		t.Fatal(err)
	}
	if se := sendErr(t, c.Delete(context.Background(), prompt)); se.Kind != engine.RateLimited || se.RetryAfter != 5*time.Second {
		t.Errorf("delete past the limit: %v", se)
	}
	fake.SetRateLimit(0, 0, 0)
	clock.Advance(5 * time.Second)

	ts, _, err := fake.Say(slacktest.Person{ID: "UALICE"}, "C1", "", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if se := sendErr(t, c.Delete(context.Background(), engine.MessageRef{Platform: Platform, Chat: "C1", Message: ts})); se.Kind != engine.Permanent || se.Reason != "cant_delete_message" {
		t.Errorf("delete of a person's message: %v", se)
	}
	if err := c.Delete(context.Background(), prompt); err != nil {
		t.Fatal(err)
	}
	_, err = c.Remind(context.Background(), prompt, "under nothing")
	if se := sendErr(t, err); se.Kind != engine.Permanent || se.Reason != "thread_not_found" {
		t.Errorf("reminder under a deleted prompt: %v", se)
	}
	fake.SetChannelError("C1", "channel_not_found")
	if se := sendErr(t, c.Delete(context.Background(), prompt)); se.Kind != engine.Permanent || se.Reason != "channel_not_found" {
		t.Errorf("delete in a channel that is gone: %v", se)
	}
}
