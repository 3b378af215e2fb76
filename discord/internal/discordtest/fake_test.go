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
