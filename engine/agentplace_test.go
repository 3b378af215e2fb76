package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
)

// clientAlice is a person answering in the agent's own client.
var clientAlice = askbridge.Person{Platform: askbridge.PlatformMCP, ID: "alice", Name: "Alice"}

// answerEntry is the JSON of an answer entry by clientAlice to question
// id, with answers (a JSON object) or, when answers is "", a skip.
func answerEntry(id, answers string) string {
	if answers == "" {
		return fmt.Sprintf(`{"id":%q,"by":{"platform":"mcp","id":"alice","name":"Alice"},"skip":true}`, id)
	}
	return fmt.Sprintf(`{"id":%q,"by":{"platform":"mcp","id":"alice","name":"Alice"},"answers":%s}`, id, answers)
}

// rejections are the errors of the rejected events published under id.
func (h *harness) rejections(id string) []string {
	h.t.Helper()
	var out []string
	for _, ev := range h.events(id) {
		if ev.Kind == askbridge.EventRejected {
			out = append(out, ev.Error)
		}
	}
	return out
}

// TestAgentPlaceAnswered: a question shown in the agent's own client is
// answered there by an answer entry, shown alone (nothing posted in any
// chat) or besides a chat, whose message is then finished naming who
// answered and where.
func TestAgentPlaceAnswered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		to           string
		client, chat bool   // shown in the agent's client, in the ops chat
		place        string // the result's place
	}{
		{name: "only in the client", to: `"mcp"`, client: true, place: ""},
		{name: "only in a chat", to: `"ops"`, chat: true, place: "mcp"},
		{name: "in a chat and in the client", to: `["ops","mcp"]`, client: true, chat: true, place: "mcp"},
		{name: "in the client and in a chat", to: `["mcp","ops"]`, client: true, chat: true, place: "mcp"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{})
			id := h.ask(askIn(fmt.Sprint("ap-", i), tt.to, `"agent":"deploy-bot"`))
			var p sentPrompt
			if tt.chat {
				p = h.waitSent(1)[0]
			}
			waitFor(t, "requested, and delivered in the client", func() bool {
				evs := h.events(id)
				return slices.ContainsFunc(evs, func(ev askbridge.Event) bool { return ev.Kind == askbridge.EventRequested }) &&
					slices.ContainsFunc(evs, func(ev askbridge.Event) bool {
						return ev.Kind == askbridge.EventDelivered && ev.Platform == askbridge.PlatformMCP && ev.Message == id
					}) == tt.client
			})
			h.agentOf().Answer(t, answerEntry(id, `{"deploy_target":["2"]}`))
			res := h.result(id, 5*time.Second)
			if res.Status != askbridge.StatusAnswered || res.Via != askbridge.ViaMCP || res.AnsweredBy == nil || *res.AnsweredBy != clientAlice ||
				res.Place != tt.place || !slices.Equal(res.Answers.Answers["deploy_target"], []string{"Production"}) {
				t.Fatalf("result %+v (answered by %+v), want Production answered by Alice via mcp, place %q", res, res.AnsweredBy, tt.place)
			}
			if tt.chat {
				h.waitStatus(p.refs[0].Message, "Answered by Alice in the agent's app: Production")
			}
			h.waitHandled()
			posted := 0
			if tt.chat {
				posted = 1
			}
			if n := len(h.ch.sends()); n != posted {
				t.Fatalf("%d prompts posted in the chat, want %d", n, posted)
			}
			waitFor(t, "the answered event", func() bool { return slices.Contains(kinds(h.events(id)), "answered") })
			if r := h.rejections(id); len(r) > 0 {
				t.Fatalf("rejected: %v", r)
			}
		})
	}
}

// TestAgentPlaceSkip: a skip from the agent's client ends the question
// skipped, and the chat's message says so.
func TestAgentPlaceSkip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("ap-skip", `"ops"`, ""))
	p := h.waitSent(1)[0]
	h.agentOf().Answer(t, answerEntry(id, ""))
	res := h.result(id, 5*time.Second)
	if res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonSkipped {
		t.Fatalf("result %+v, want no_answer skipped", res)
	}
	h.waitStatus(p.refs[0].Message, "Skipped")
}

// TestAgentPlaceWhoMayAnswer: the client answers only when the request's
// answerers and those of every place (a route's) name it or name nobody;
// an answer refused so is a rejected event under the question's id, and
// the question stays open for those who may answer.
func TestAgentPlaceWhoMayAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		to    string
		extra string
		ok    bool
	}{
		{name: "the request names the client", to: `"ops"`, extra: `"answerers":["telegram:bob","mcp:alice"]`, ok: true},
		{name: "the request names others", to: `"ops"`, extra: `"answerers":["telegram:bob","mcp:carol"]`},
		{name: "a route names others", to: `"only-bob"`},
		{name: "a route names others, the client no one", to: `["mcp","only-bob"]`},
		{name: "a step's route names others", to: `"ops"`, extra: `"escalate":[{"afterSeconds":300,"to":"only-bob"}]`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{})
			id := h.ask(askIn(fmt.Sprint("ap-who-", i), tt.to, tt.extra))
			p := h.waitSent(1)[0]
			h.agentOf().Answer(t, answerEntry(id, `{"deploy_target":["Staging"]}`))
			h.waitHandled()
			if tt.ok {
				if res := h.result(id, 5*time.Second); res.Via != askbridge.ViaMCP {
					t.Fatalf("result %+v, want answered via mcp", res)
				}
				return
			}
			if got := h.rejections(id); !slices.Equal(got, []string{"answer: mcp:alice may not answer this question"}) {
				t.Fatalf("rejected %q", got)
			}
			if q, _, _ := h.store.Get(context.Background(), id); q.Status != askbridge.StatusPending {
				t.Fatalf("question %s after a refused answer", q.Status)
			}
			// Bob, whom every place allows, still answers.
			bob := askbridge.Person{Platform: "telegram", ID: "bob", Name: "Bob"}
			if r := tap(h, p, 1, bob, "bob-1"); r.Notice != engine.NoticeRecorded {
				t.Fatalf("bob's tap told %s", r.Notice)
			}
			if res := h.result(id, 5*time.Second); res.AnsweredBy == nil || res.AnsweredBy.ID != "bob" {
				t.Fatalf("result %+v, want bob's", res)
			}
		})
	}
}

// TestAgentPlaceQuorum: on a quorum question the client is one voter: its
// vote is counted, and the question ends when another voter agrees.
func TestAgentPlaceQuorum(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(quorumAsk("ap-quorum", 2, []string{"mcp:alice", "telegram:bob"}, ""))
	p := h.waitSent(1)[0]
	h.agentOf().Answer(t, answerEntry(id, `{"go":["approve"]}`))
	waitFor(t, "the client's vote", func() bool {
		return slices.ContainsFunc(h.events(id), func(ev askbridge.Event) bool { return ev.Kind == askbridge.EventVoted && ev.By == "mcp:alice" })
	})
	if q, _, _ := h.store.Get(context.Background(), id); q.Status != askbridge.StatusPending || len(q.Votes) != 1 {
		t.Fatalf("after one vote: %s with %d votes", q.Status, len(q.Votes))
	}
	if out := vote(h, p, "bob", "Approve"); !out.Claimed || out.Respond != "" {
		t.Fatalf("bob's deciding vote: %+v", out)
	}
	res := h.result(id, 5*time.Second)
	if res.Status != askbridge.StatusAnswered || res.Answers.Answers["go"][0] != "Approve" || len(res.Votes) != 2 ||
		res.Votes[0].By != clientAlice || res.Votes[1].By.ID != "bob" {
		t.Fatalf("result %+v", res)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Approve")
}

// TestAgentPlaceRefusals: an answer entry that does not decode, names no
// known question, or does not fit the question is acknowledged with a
// rejected event, under the question's id when the entry names a valid
// one (else the entry's), with an error that starts "answer:"; the
// question stays open.
func TestAgentPlaceRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("ap-refused", `"ops"`, ""))
	h.waitSent(1)
	tests := []struct {
		name   string
		body   string
		under  string // "" for the entry's id
		errors string
	}{
		{"not JSON", `{"id":`, "", "answer: answer is not valid JSON: unexpected end of input"},
		{"a bad id", `{"id":"a b","by":{"platform":"mcp","id":"alice"},"skip":true}`, "",
			"answer: id must be a question id: 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit"},
		{"an unknown field", `{"id":"ap-refused","by":{"platform":"mcp","id":"alice"},"skip":true,"at":1}`, id, `answer: "at" is not a known field`},
		{"another platform", `{"id":"ap-refused","by":{"platform":"telegram","id":"alice"},"skip":true}`, id,
			`answer: by.platform must be "mcp" (got "telegram"): an answer entry hands in an answer given in the agent's own client`},
		{"a bad person id", `{"id":"ap-refused","by":{"platform":"mcp","id":"al ice"},"skip":true}`, id,
			"answer: by.id must be 1 to 128 letters, digits, '_', '.', '@', '+' or '-', starting with a letter or digit"},
		{"both", `{"id":"ap-refused","by":{"platform":"mcp","id":"alice"},"skip":true,"answers":{"deploy_target":["Staging"]}}`, id,
			"answer: answers and skip: give one of them, not both"},
		{"neither", `{"id":"ap-refused","by":{"platform":"mcp","id":"alice"}}`, id,
			`answer: answers or skip is required: the person's answers, or "skip": true`},
		{"an unknown question", answerEntry("ap-nowhere", `{"deploy_target":["Staging"]}`), "ap-nowhere",
			`answer: no question "ap-nowhere" (no bridge has taken it yet, or it ended longer ago than the result retention)`},
		{"two answers to a single-select question", answerEntry(id, `{"deploy_target":["Staging","Production"]}`), id,
			"answer: answers.deploy_target takes one answer"},
		{"a question it does not have", answerEntry(id, `{"deploy_target":["Staging"],"other":["x"]}`), id,
			"answer: answers.other is not a question of this request"},
		{"oversize", `{"id":"ap-refused","pad":"` + strings.Repeat("x", askbridge.MaxEntryBytes) + `"}`, id,
			fmt.Sprintf("answer: entry is %d bytes; at most %d", len("answer")+len(`{"id":"ap-refused","pad":""}`)+askbridge.MaxEntryBytes, askbridge.MaxEntryBytes)},
	}
	for _, tt := range tests {
		entry := h.agentOf().Answer(t, tt.body)
		under := tt.under
		if under == "" {
			under = entry
		}
		h.waitHandled()
		if got := h.rejections(under); !slices.Contains(got, tt.errors) {
			t.Errorf("%s: rejected under %s with %q, want %q", tt.name, under, got, tt.errors)
		}
	}
	if q, _, _ := h.store.Get(context.Background(), id); q.Status != askbridge.StatusPending {
		t.Fatalf("question %s after refused answers", q.Status)
	}
	if n := h.resultCount(id); n != 0 {
		t.Fatalf("%d results for the open question", n)
	}
}

// TestAgentPlaceAfterTheEnd: an answer entry to a question that has ended
// changes nothing and is no refusal.
func TestAgentPlaceAfterTheEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("ap-late", `"ops"`, ""))
	p := h.waitSent(1)[0]
	if r := tap(h, p, 0, alice, "late-1"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap told %s", r.Notice)
	}
	first := h.result(id, 5*time.Second)
	h.agentOf().Answer(t, answerEntry(id, `{"deploy_target":["Production"]}`))
	h.waitHandled()
	q, _, err := h.store.Get(context.Background(), id)
	if err != nil || q.Result == nil || q.Result.Via != askbridge.ViaButton || q.Result.Answers.Answers["deploy_target"][0] != first.Answers.Answers["deploy_target"][0] {
		t.Fatalf("stored result %+v, %v; want the tap's", q.Result, err)
	}
	if n := h.resultCount(id); n != 0 {
		t.Fatalf("%d more results", n)
	}
	if r := h.rejections(id); len(r) > 0 {
		t.Fatalf("rejected: %v", r)
	}
}

// TestAgentPlaceNotInSteps: an escalation step cannot show a question in
// the agent's client, whether the request's own step or a route's ladder
// names it: the request is refused naming the step.
func TestAgentPlaceNotInSteps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	own := h.ask(askIn("ap-step", `"ops"`, `"escalate":[{"afterSeconds":60,"to":["telegram:b","mcp"]}]`))
	ladder := h.ask(askIn("ap-ladder", `"mcp-ladder"`, ""))
	for id, want := range map[string]string{
		own:    `escalate[0].to[1]: "mcp" is the agent's own client, which only the agent shows a question in: a step's places are shown later, by the bridge`,
		ladder: `escalate[0].to: "mcp" is the agent's own client, which only the agent shows a question in: a step's places are shown later, by the bridge`,
	} {
		if res := h.result(id, 5*time.Second); res.Status != askbridge.StatusError || res.Error != want {
			t.Errorf("%s: result %+v, want the error %q", id, res, want)
		}
	}
}

// downLookup is a store whose Lookup fails while down is set.
type downLookup struct {
	enginetest.Store
	down atomic.Bool
}

func (d *downLookup) Lookup(ctx context.Context, id string) (engine.Record, bool, error) {
	if d.down.Load() {
		return engine.Record{}, false, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	}
	return d.Store.Lookup(ctx, id)
}

// TestAgentPlaceAnswerDuringOutage: an answer entry the store cannot take
// stays pending and is handled again once it can.
func TestAgentPlaceAnswerDuringOutage(t *testing.T) {
	t.Parallel()
	var d *downLookup
	h := newHarness(t, harnessOpts{claimIdle: 200 * time.Millisecond, wrap: func(s enginetest.Store) enginetest.Store {
		d = &downLookup{Store: s}
		return d
	}})
	id := h.ask(askIn("ap-outage", `"mcp"`, ""))
	h.waitHandled()
	d.down.Store(true)
	entry := h.agentOf().Answer(t, answerEntry(id, `{"deploy_target":["Staging"]}`))
	waitFor(t, "the entry read and left pending", func() bool {
		p, err := h.agent.XPending(context.Background(), h.prefix+"requests", "bridge").Result()
		return err == nil && p.Count == 1 && p.Lower == entry
	})
	d.down.Store(false)
	if res := h.result(id, 10*time.Second); res.Via != askbridge.ViaMCP || res.Answers.Answers["deploy_target"][0] != "Staging" {
		t.Fatalf("result %+v, want Staging via mcp", res)
	}
	h.waitHandled()
}

func TestMayAnswerFromAgent(t *testing.T) {
	t.Parallel()
	place := func(step int, answerers ...string) askbridge.Place {
		return askbridge.Place{Name: "p", Target: askbridge.Target{Platform: "telegram", Chat: "1"}, Answerers: answerers, Step: step}
	}
	tests := []struct {
		name      string
		answerers []string // the request's
		places    []askbridge.Place
		want      bool
	}{
		{"anyone anywhere", nil, []askbridge.Place{place(0)}, true},
		{"named by the request and its places", []string{"mcp:alice"}, []askbridge.Place{place(0, "mcp:alice")}, true},
		{"not named by the request", []string{"telegram:bob"}, []askbridge.Place{place(0)}, false},
		{"not named by a place", nil, []askbridge.Place{place(0), place(0, "telegram:bob")}, false},
		{"not named by a step's place", nil, []askbridge.Place{place(0), place(1, "telegram:bob")}, false},
		{"named by every place", nil, []askbridge.Place{place(0, "mcp:alice", "telegram:bob"), place(1, "mcp:alice")}, true},
		{"another client", []string{"mcp:carol"}, []askbridge.Place{place(0, "mcp:carol")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := engine.Record{Request: askbridge.Request{Answerers: tt.answerers}, Places: tt.places, Answerers: tt.places[0].Answerers}
			if got := rec.MayAnswerFromAgent(clientAlice); got != tt.want {
				t.Fatalf("MayAnswerFromAgent = %v, want %v", got, tt.want)
			}
		})
	}
}
