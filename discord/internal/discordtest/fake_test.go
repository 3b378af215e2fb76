package discordtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/askbridge/askbridge/discord/internal/discordtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func call(t *testing.T, s *discordtest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+"api/v10/"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bot "+s.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestLateCallbackFails: like Discord, the fake refuses a first response
// that comes after 3 seconds, and a second response.
func TestLateCallbackFails(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	s := discordtest.New(discordtest.Options{Clock: clock})
	defer s.Close()
	room, user := s.AddChannel(), s.AddUser("p")
	status, msg := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"q","components":[{"type":1,"components":[{"type":2,"style":1,"label":"A","custom_id":"a"}]}]}`)
	if status != 200 {
		t.Fatalf("post: %d %v", status, msg)
	}
	late, err := s.Click(user, msg["id"].(string), "a")
	if err != nil {
		t.Fatal(err)
	}
	onTime, _ := s.Click(user, msg["id"].(string), "a")
	in, _ := s.Interaction(onTime)
	if status, _ := call(t, s, "POST", "interactions/"+onTime+"/"+in.Token+"/callback", `{"type":6}`); status != 204 {
		t.Errorf("first callback: %d", status)
	}
	if status, body := call(t, s, "POST", "interactions/"+onTime+"/"+in.Token+"/callback", `{"type":6}`); status != 400 || body["code"].(float64) != 40060 {
		t.Errorf("second callback: %d %v", status, body)
	}
	clock.Advance(discordtest.InteractionDeadline + 100*time.Millisecond)
	in, _ = s.Interaction(late)
	if !in.Failed {
		t.Error("an unanswered interaction did not fail")
	}
	if status, body := call(t, s, "POST", "interactions/"+late+"/"+in.Token+"/callback", `{"type":6}`); status != 404 || body["code"].(float64) != 10062 {
		t.Errorf("late callback: %d %v", status, body)
	}
	if status, body := call(t, s, "POST", "webhooks/"+s.AppID+"/"+in.Token, `{"content":"x","flags":64}`); status != 404 || body["code"].(float64) != 10015 {
		t.Errorf("follow-up without an acknowledgement: %d %v", status, body)
	}
}

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	s := discordtest.New(discordtest.Options{Limits: map[string]discordtest.Limit{"POST /channels/{id}/messages": {Count: 1, Window: time.Second}}})
	defer s.Close()
	room := s.AddChannel()
	if status, _ := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"1"}`); status != 200 {
		t.Fatal(status)
	}
	status, body := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"2"}`)
	if status != 429 || body["global"] != false || body["retry_after"].(float64) <= 0 || body["retry_after"].(float64) > 1 {
		t.Errorf("over the limit: %d %v", status, body)
	}
	other := s.AddChannel()
	if status, _ := call(t, s, "POST", "channels/"+other+"/messages", `{"content":"1"}`); status != 200 {
		t.Errorf("another channel shares the bucket: %d", status)
	}
}

// TestFlagsAndWhatWasSent: the fake records what each call said of a
// message, and keeps flags as Discord does: set on creation, kept by an
// edit without flags, and only SUPPRESS_EMBEDS changed by one with them.
func TestFlagsAndWhatWasSent(t *testing.T) {
	t.Parallel()
	s := discordtest.New(discordtest.Options{})
	defer s.Close()
	room := s.AddChannel()
	status, msg := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"see https://a.test and <https://b.test> [c](<https://c.test>)","allowed_mentions":{"parse":[]},"flags":4}`)
	if status != 200 {
		t.Fatalf("post: %d %v", status, msg)
	}
	id := msg["id"].(string)
	m, _ := s.Message(id)
	if m.Flags != discordtest.SuppressEmbeds || len(m.Unfurls()) != 0 {
		t.Errorf("flags %d, unfurls %v; want SUPPRESS_EMBEDS and none", m.Flags, m.Unfurls())
	}
	if status, _ := call(t, s, "PATCH", "channels/"+room+"/messages/"+id, `{"content":"again https://a.test"}`); status != 200 {
		t.Fatalf("edit: %d", status)
	}
	if m, _ = s.Message(id); m.Flags != discordtest.SuppressEmbeds {
		t.Errorf("an edit without flags changed them to %d", m.Flags)
	}
	if status, _ := call(t, s, "PATCH", "channels/"+room+"/messages/"+id, `{"flags":64}`); status != 200 {
		t.Fatalf("edit: %d", status)
	}
	if m, _ = s.Message(id); m.Flags != 0 || len(m.Unfurls()) != 1 || m.Unfurls()[0] != "https://a.test" {
		t.Errorf("after unsetting SUPPRESS_EMBEDS: flags %d, unfurls %v", m.Flags, m.Unfurls())
	}
	var sent []*discordtest.Sent
	for _, r := range s.Requests() {
		if r.Message != nil {
			sent = append(sent, r.Message)
		}
	}
	if len(sent) != 3 {
		t.Fatalf("%d calls recorded with a message, want 3", len(sent))
	}
	if !sent[0].Quiet() || !sent[0].SuppressesEmbeds() || sent[0].Content == nil {
		t.Errorf("the post was recorded as %+v", sent[0])
	}
	if sent[1].Quiet() || sent[1].Flags != nil {
		t.Errorf("an edit without allowed_mentions or flags was recorded as %+v", sent[1])
	}
	if sent[2].SuppressesEmbeds() || sent[2].Content != nil {
		t.Errorf("the flags edit was recorded as %+v", sent[2])
	}
}

// formErrorCode is the first error code Invalid Form Body gives a field.
func formErrorCode(body map[string]any, field string) string {
	errs, _ := body["errors"].(map[string]any)
	f, _ := errs[field].(map[string]any)
	list, _ := f["_errors"].([]any)
	if len(list) == 0 {
		return ""
	}
	e, _ := list[0].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestReplies: like Discord, a reply to a message in the channel is
// posted as a reply and recorded with its message_reference; one to a
// message that is not there is refused, unless fail_if_not_exists is
// false, which posts a plain message; one naming another channel is
// refused.
func TestReplies(t *testing.T) {
	t.Parallel()
	s := discordtest.New(discordtest.Options{})
	defer s.Close()
	room, other := s.AddChannel(), s.AddChannel()
	_, prompt := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"prompt"}`)
	pid := prompt["id"].(string)

	status, body := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"r","message_reference":{"message_id":"`+pid+`","fail_if_not_exists":false}}`)
	if status != 200 || body["type"].(float64) != 19 {
		t.Fatalf("reply: %d %v", status, body)
	}
	if m, _ := s.Message(body["id"].(string)); m.ReplyTo != pid {
		t.Errorf("the reply replies to %q, want %s", m.ReplyTo, pid)
	}
	reqs := s.Requests()
	ref := reqs[len(reqs)-1].Message.Reference
	if ref == nil || ref.MessageID != pid || ref.FailIfNotExists == nil || *ref.FailIfNotExists {
		t.Errorf("recorded reference %+v", ref)
	}

	unknown := "1999999999999999999"
	status, body = call(t, s, "POST", "channels/"+room+"/messages", `{"content":"r","message_reference":{"message_id":"`+unknown+`"}}`)
	if status != 400 || body["code"].(float64) != 50035 || formErrorCode(body, "message_reference") != "REPLIES_UNKNOWN_MESSAGE" {
		t.Errorf("reply to an unknown message: %d %v", status, body)
	}
	status, body = call(t, s, "POST", "channels/"+room+"/messages", `{"content":"r","message_reference":{"message_id":"`+unknown+`","fail_if_not_exists":false}}`)
	if m, _ := s.Message(body["id"].(string)); status != 200 || m.ReplyTo != "" || body["message_reference"] != nil {
		t.Errorf("reply to an unknown message, not failing: %d %v", status, body)
	}
	status, body = call(t, s, "POST", "channels/"+other+"/messages", `{"content":"r","message_reference":{"message_id":"`+pid+`","channel_id":"`+room+`"}}`)
	if status != 400 || formErrorCode(body, "message_reference") != "REPLIES_CANNOT_REFERENCE_OTHER_CHANNEL" {
		t.Errorf("reply to another channel's message: %d %v", status, body)
	}
}

// TestDeletes: like Discord, the bot deletes its own message (204), a
// message already gone is 404 Unknown Message (10008), another user's is
// 403 Missing Permissions (50013), and the route has its own rate limit.
func TestDeletes(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	s := discordtest.New(discordtest.Options{Clock: clock, Limits: map[string]discordtest.Limit{"DELETE /channels/{id}/messages/{id}": {Count: 2, Window: time.Second}}})
	defer s.Close()
	room, user := s.AddChannel(), s.AddUser("p")
	_, msg := call(t, s, "POST", "channels/"+room+"/messages", `{"content":"reminder"}`)
	id := msg["id"].(string)
	if status, body := call(t, s, "DELETE", "channels/"+room+"/messages/"+id, ""); status != 204 {
		t.Fatalf("delete: %d %v", status, body)
	}
	if _, ok := s.Message(id); ok {
		t.Error("a deleted message is still there")
	}
	if m, ok := s.Deleted(id); !ok || m.Content != "reminder" {
		t.Errorf("Deleted: %+v %v", m, ok)
	}
	if len(s.Messages(room)) != 0 {
		t.Errorf("the channel still lists %d messages", len(s.Messages(room)))
	}
	if status, body := call(t, s, "DELETE", "channels/"+room+"/messages/"+id, ""); status != 404 || body["code"].(float64) != 10008 {
		t.Errorf("delete again: %d %v", status, body)
	}
	theirs, err := s.Post(user, room, "mine")
	if err != nil {
		t.Fatal(err)
	}
	status, body := call(t, s, "DELETE", "channels/"+room+"/messages/"+theirs, "")
	if status != 429 || body["retry_after"].(float64) <= 0 {
		t.Errorf("a third delete within the window: %d %v", status, body)
	}
	clock.Advance(time.Second) // the end of the rate-limit window
	if status, body := call(t, s, "DELETE", "channels/"+room+"/messages/"+theirs, ""); status != 403 || body["code"].(float64) != 50013 {
		t.Errorf("delete another user's message: %d %v", status, body)
	}
}
