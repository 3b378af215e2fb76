package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/internal/webtest"
)

// standingList is the reply of GET /api/standing.
type standingList struct {
	Now      int64 `json:"now"`
	Standing []struct {
		Agent     string              `json:"agent"`
		Key       string              `json:"key"`
		Answers   map[string][]string `json:"answers"`
		By        string              `json:"by"`
		Since     int64               `json:"since"`
		Until     int64               `json:"until"`
		Uses      int                 `json:"uses"`
		Text      string              `json:"text"`
		MayRevoke bool                `json:"mayRevoke"`
	} `json:"standing"`
}

func listStanding(t *testing.T, b *webtest.Bridge) standingList {
	t.Helper()
	res, data := b.Request(t, http.MethodGet, "/api/standing", nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/standing = %d %s", res.StatusCode, data)
	}
	var l standingList
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func post(t *testing.T, b *webtest.Bridge, path string, body any, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	res, data := b.Request(t, http.MethodPost, path, body, hdr)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s = %d %s: not JSON", path, res.StatusCode, data)
	}
	return res.StatusCode, out
}

// TestKeepOnThePage: a remember question answered on the page shows the
// offer in its timeline entry; the page keeps it by POST; the offer goes
// and the list shows the standing answer, which answers the next ask.
func TestKeepOnThePage(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Standing: true})
	id := b.Ask(t, webtest.RememberQuestion("keep-1", "web"))
	b.WaitOpen(t, id)
	if code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Production"}}}); code != http.StatusOK {
		t.Fatalf("answer = %d %v", code, out)
	}
	e := b.WaitHistory(t, id)
	if e.Offer == nil {
		t.Fatalf("timeline entry %+v has no offer", e)
	}
	if e.Offer.For != "web page" || len(e.Offer.Keep) != 2 || e.Offer.Keep[1].Index != 1 || e.Offer.Keep[1].Seconds != 86400 {
		t.Errorf("offer = %+v", e.Offer)
	}
	if e.Offer.Keep[0].Label != "Keep this answer for 1 h" {
		t.Errorf("label = %q; want the button's words", e.Offer.Keep[0].Label)
	}
	if left := time.Until(time.UnixMilli(e.Offer.Until)); left < 14*time.Minute || left > 16*time.Minute {
		t.Errorf("offer until in %s; want 15 minutes", left)
	}

	keep := "/api/questions/" + id + "/keep"
	refused := []struct {
		name string
		body any
		hdr  map[string]string
		want int
	}{
		{"another origin", map[string]any{"index": 0}, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"no such index", map[string]any{"index": 2}, nil, http.StatusBadRequest},
		{"no such seconds", map[string]any{"seconds": 60}, nil, http.StatusBadRequest},
		{"both", map[string]any{"index": 0, "seconds": 3600}, nil, http.StatusBadRequest},
	}
	for _, tc := range refused {
		if code, out := post(t, b, keep, tc.body, tc.hdr); code != tc.want {
			t.Errorf("%s: keep = %d %v; want %d", tc.name, code, out, tc.want)
		}
	}
	events, _ := b.OpenEvents(t, "", nil)
	defer events.Close()
	code, out := post(t, b, keep, map[string]any{"seconds": 3600}, nil)
	if code != http.StatusOK || out["notice"] != string(engine.NoticeKept) {
		t.Fatalf("keep = %d %v", code, out)
	}
	events.Next(t, "kept", id)
	if code, out := post(t, b, keep, map[string]any{"index": 0}, nil); code != http.StatusConflict || out["notice"] != string(engine.NoticeKeptAgain) {
		t.Errorf("keep again = %d %v", code, out)
	}
	if !testwait.Until(10*time.Second, func() bool { return b.WaitHistory(t, id).Offer == nil }) {
		t.Error("the offer is still in the timeline after the keep")
	}

	l := listStanding(t, b)
	if len(l.Standing) != 1 {
		t.Fatalf("standing = %+v; want one", l.Standing)
	}
	s := l.Standing[0]
	if s.Agent != "deploy-bot" || s.Key != "deploy:prod" || s.By != "web page" || s.Uses != 0 || !s.MayRevoke ||
		!webtest.SameAnswers(s.Answers, map[string][]string{"deploy_target": {"Production"}}) {
		t.Errorf("standing = %+v", s)
	}
	if d := time.Duration(s.Until-s.Since) * time.Millisecond; d != time.Hour {
		t.Errorf("until - since = %s; want 1h", d)
	}
	next := b.Ask(t, webtest.RememberQuestion("keep-2", "web"))
	if res := b.Result(t, next, 5*time.Second); res.Via != askbridge.ViaStanding {
		t.Fatalf("the next ask = %+v; want answered via standing", res)
	}
	if l := listStanding(t, b); len(l.Standing) != 1 || l.Standing[0].Uses != 1 {
		t.Errorf("after a use: %+v", l.Standing)
	}
}

// TestRevokeOnThePage: the page revokes a standing answer it kept; one
// kept on another platform it may not revoke (the engine's rule).
func TestRevokeOnThePage(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{Standing: true})
	id := b.Ask(t, webtest.RememberQuestion("revoke-1", "web"))
	b.WaitOpen(t, id)
	if code, out := b.Answer(t, id, map[string]any{"answers": map[string][]string{"deploy_target": {"Staging (Recommended)"}}}); code != http.StatusOK {
		t.Fatalf("answer = %d %v", code, out)
	}
	b.WaitHistory(t, id)
	if code, out := post(t, b, "/api/questions/"+id+"/keep", map[string]any{"index": 1}, nil); code != http.StatusOK {
		t.Fatalf("keep = %d %v", code, out)
	}
	body := map[string]any{"agent": "deploy-bot", "key": "deploy:prod"}
	if code, out := post(t, b, "/api/standing/revoke", body, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden || out["notice"] != nil {
		t.Errorf("revoke from another origin = %d %v", code, out)
	}
	events, _ := b.OpenEvents(t, "", nil)
	defer events.Close()
	code, out := post(t, b, "/api/standing/revoke", body, nil)
	if code != http.StatusOK || out["notice"] != string(engine.NoticeRevoked) {
		t.Fatalf("revoke = %d %v", code, out)
	}
	// The revoked event names no question: the page hears it all the same.
	if ev := events.Next(t, "revoked", ""); ev.Data["key"] != "deploy:prod" || ev.Data["agent"] != "deploy-bot" {
		t.Errorf("revoked event = %v", ev.Data)
	}
	if code, out := post(t, b, "/api/standing/revoke", body, nil); code != http.StatusNotFound || out["notice"] != string(engine.NoticeRevokeGone) {
		t.Errorf("revoke again = %d %v", code, out)
	}
	if l := listStanding(t, b); len(l.Standing) != 0 {
		t.Errorf("standing after revoke = %+v", l.Standing)
	}

	// Kept on Slack by someone there: not the page's to revoke.
	other := b.Ask(t, webtest.RememberQuestion("revoke-2", "slack:C0123"))
	rec := waitRecord(t, b, other)
	alice := askbridge.Person{Platform: "slack", ID: "U1", Name: "Alice"}
	a := engine.Answer{By: alice, Via: askbridge.ViaButton, Values: map[string][]string{"deploy_target": {"Production"}}, Place: 0}
	if sub, err := b.Engine.SubmitRecord(t.Context(), rec, a); err != nil || !sub.Won {
		t.Fatalf("answer on slack: %+v, %v", sub, err)
	}
	if out, err := b.Engine.Keep(t.Context(), other, alice, time.Hour); err != nil || out.Result != engine.KeepKept {
		t.Fatalf("keep on slack: %+v, %v", out, err)
	}
	if l := listStanding(t, b); len(l.Standing) != 1 || l.Standing[0].MayRevoke || !strings.Contains(l.Standing[0].Text, "Alice") {
		t.Errorf("standing = %+v; want Alice's, not the page's to revoke", l.Standing)
	}
	if code, out := post(t, b, "/api/standing/revoke", body, nil); code != http.StatusForbidden || out["notice"] != string(engine.NoticeRevokeNotAllowed) {
		t.Errorf("revoke Alice's = %d %v", code, out)
	}
}

func waitRecord(t *testing.T, b *webtest.Bridge, id string) engine.Record {
	t.Helper()
	var rec engine.Record
	ok := testwait.Until(10*time.Second, func() bool {
		r, found, err := b.Store.Get(t.Context(), id)
		rec = r
		return err == nil && found
	})
	if !ok {
		t.Fatalf("question %s never created", id)
	}
	return rec
}
