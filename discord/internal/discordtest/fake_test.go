package discordtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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
	s := discordtest.New(discordtest.Options{})
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
	time.Sleep(discordtest.InteractionDeadline + 100*time.Millisecond)
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
