package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/testwait"
)

func TestNumberLegacyParts(t *testing.T) {
	ref := func(platform, msg string, part int) MessageRef {
		return MessageRef{Platform: platform, Chat: "c", Message: msg, Part: part}
	}
	for _, tc := range []struct {
		name     string
		in, want []MessageRef
	}{
		{"recorded with parts",
			[]MessageRef{ref("telegram", "1", 0), ref("telegram", "2", 1), ref("telegram", "3", PartReplyBox)},
			[]MessageRef{ref("telegram", "1", 0), ref("telegram", "2", 1), ref("telegram", "3", PartReplyBox)}},
		{"recorded without parts",
			[]MessageRef{ref("slack", "1", 0), ref("slack", "2", 0), ref("slack", "3", 0)},
			[]MessageRef{ref("slack", "1", 0), ref("slack", "2", 1), ref("slack", "3", 2)}},
		{"one part per platform",
			[]MessageRef{ref("web", "q", 0), ref("telegram", "1", 0)},
			[]MessageRef{ref("web", "q", 0), ref("telegram", "1", 0)}},
		// A one-part prompt posted twice (the first copy adopted when
		// tapped): both copies are part 0.
		{"a one-part prompt posted twice",
			[]MessageRef{ref("discord", "1", 0), ref("discord", "2", 0)},
			[]MessageRef{ref("discord", "1", 0), ref("discord", "2", 0)}},
		// A two-part prompt without parts recorded, posted twice.
		{"a two-part prompt posted twice",
			[]MessageRef{ref("discord", "1", 0), ref("discord", "2", 0), ref("discord", "3", 0), ref("discord", "4", 0)},
			[]MessageRef{ref("discord", "1", 0), ref("discord", "2", 1), ref("discord", "3", 0), ref("discord", "4", 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := func(platform string, _ int) int {
				switch {
				case platform == "discord" && strings.HasPrefix(tc.name, "a one-part"):
					return 1
				case platform == "discord":
					return 2
				}
				return 0
			}
			if got := numberLegacyParts(tc.in, parts); !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGroupCommit: a caller alone runs at once; callers that come while a
// call is on its way run together in the next call, and each gets the
// error of the call that carried its items.
func TestGroupCommit(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var calls [][]int
	fail := errors.New("redis is down")
	g := &groupCommit[int]{timeout: time.Minute, run: func(ctx context.Context, items []int) error {
		mu.Lock()
		first := len(calls) == 0
		calls = append(calls, slices.Clone(items))
		mu.Unlock()
		if first {
			<-gate
			return nil
		}
		return fail
	}}
	ctx := context.Background()
	leader := make(chan error, 1)
	go func() { leader <- g.do(ctx, 0) }()
	testwait.For(t, 5*time.Second, "the leader's call", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == 1
	})
	const waiters = 20
	errs := make(chan error, waiters)
	for i := 1; i <= waiters; i++ {
		go func() { errs <- g.do(ctx, i, -i) }()
	}
	testwait.For(t, 5*time.Second, "every waiter queued", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue) == waiters
	})
	close(gate)
	if err := <-leader; err != nil {
		t.Fatalf("the first call: %v", err)
	}
	for range waiters {
		if err := <-errs; !errors.Is(err, fail) {
			t.Fatalf("a waiter got %v, want the error of its call", err)
		}
	}
	mu.Lock()
	if len(calls) != 2 || len(calls[1]) != 2*waiters {
		t.Fatalf("calls %v: want the first alone, then every waiter's items in one", calls)
	}
	mu.Unlock()
	if g.busy || len(g.queue) != 0 {
		t.Fatal("left busy")
	}
	// Alone again: one call, at once.
	if err := g.do(ctx, 99); !errors.Is(err, fail) {
		t.Fatalf("alone: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 3 || !slices.Equal(calls[2], []int{99}) {
		t.Fatalf("alone: calls %v", calls)
	}
}

// TestHoldersApartUnderOneName: two engines given the same replica name
// (a copied configuration) name their lease holds apart, so one cannot take
// again, as its own, a lease the other holds.
func TestHoldersApartUnderOneName(t *testing.T) {
	a := &core{replica: "replica-1", nonce: Nonce()}
	b := &core{replica: "replica-1", nonce: Nonce()}
	if ha, hb := a.holder(), b.holder(); ha == hb {
		t.Fatalf("both hold as %q", ha)
	}
	if h1, h2 := a.holder(), a.holder(); h1 == h2 {
		t.Fatalf("two holds of one engine share %q", h1)
	}
}

// TestRefusedID: the error result of a refused request goes to the id the
// request names at its top level, read as far as the JSON goes.
func TestRefusedID(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name, ask, want string
	}{
		{"whole request", `{"id":"q-1","questions":[]}`, "q-1"},
		{"id after other keys", `{"to":"web","questions":[{"id":"inner"}],"id":"q-2"}`, "q-2"},
		{"cut after the id", `{"id":"q-3","questions":[{"question":"` + long[:100], "q-3"},
		{"cut before the id", `{"questions":[{"question":"` + long[:100], "1-0"},
		{"broken after the id", `{"id":"q-4","questions":[}`, "q-4"},
		{"nested id only", `{"questions":[{"id":"inner"}]}`, "1-0"},
		{"not an id", `{"id":"bad id"}`, "1-0"},
		{"id not a string", `{"id":42}`, "1-0"},
		{"not an object", `["id","q-5"]`, "1-0"},
		{"empty", ``, "1-0"},
		{"last id wins", `{"id":"a","id":"b"}`, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusedID(Entry{StreamID: "1-0", Ask: []byte(tc.ask)}); got != tc.want {
				t.Fatalf("refusedID(%.40q) = %q, want %q", tc.ask, got, tc.want)
			}
		})
	}
}

// FuzzRequestIDOf: any bytes, never a panic; for a whole JSON object, the
// id encoding/json reads.
func FuzzRequestIDOf(f *testing.F) {
	for _, s := range []string{`{"id":"q-1"}`, `{"a":[1,{"id":"x"}],"id":"q"}`, `{"id":"q"`, `{"id":`, `[`, `{"id":"\u0041"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := askbridge.RequestIDOf(data)
		var whole map[string]json.RawMessage
		if json.Unmarshal(data, &whole) != nil {
			return
		}
		var want string
		if raw, ok := whole["id"]; ok && json.Unmarshal(raw, &want) != nil {
			want = ""
		}
		if got != want {
			t.Fatalf("RequestIDOf(%q) = %q, encoding/json reads %q", data, got, want)
		}
	})
}

// TestCheckAnswersReadsValuesLikeReplies: a value given for a question
// (the web page's "Other" box) is read like a typed reply: a number in any
// script or a label in any form picks the option as declared; anything
// else stays the person's own words, as given.
func TestCheckAnswersReadsValuesLikeReplies(t *testing.T) {
	req := askbridge.Request{Questions: []askbridge.Question{{ID: "env", Header: "Env", Question: "Where?", Options: []askbridge.Option{
		{Label: "Staging (Recommended)"}, {Label: "Production"}, {Label: "สเตจจิ้ง (แนะนำ)"},
	}}}}
	for _, tc := range []struct{ in, want string }{
		{"2", "Production"},
		{"๓", "สเตจจิ้ง (แนะนำ)"},
		{"staging", "Staging (Recommended)"},
		{"PRODUCTION", "Production"},
		{"สเตจจิ้ง", "สเตจจิ้ง (แนะนำ)"},
		{"4", "4"},
		{"skip", "skip"},
		{"ข้าม", "ข้าม"},
		{"my laptop", "my laptop"},
		{"1, 2", "1, 2"},
	} {
		got, err := CheckAnswers(req, map[string][]string{"env": {tc.in}})
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if v := got["env"]; len(v) != 1 || v[0] != tc.want {
			t.Errorf("%q read as %q, want %q", tc.in, v, tc.want)
		}
	}

	// A multi-select value is split as a reply is: each part a number, a
	// label or the person's own words; a label with a comma stays whole.
	multi := askbridge.Request{Questions: []askbridge.Question{{ID: "checks", Header: "Checks", Question: "Which?", MultiSelect: true, Options: []askbridge.Option{
		{Label: "Unit"}, {Label: "Lint, vet"}, {Label: "Load"},
	}}}}
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{[]string{"1, 3"}, []string{"Unit", "Load"}},
		{[]string{"๑, ๓"}, []string{"Unit", "Load"}},
		{[]string{"1; lint, vet\nsmoke tests"}, []string{"Unit", "Lint, vet", "smoke tests"}},
		{[]string{"Lint, vet"}, []string{"Lint, vet"}},
		{[]string{"Unit", "1, 3"}, []string{"Unit", "Load"}},
		{[]string{"after the freeze"}, []string{"after the freeze"}},
	} {
		got, err := CheckAnswers(multi, map[string][]string{"checks": tc.in})
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if !slices.Equal(got["checks"], tc.want) {
			t.Errorf("%q read as %q, want %q", tc.in, got["checks"], tc.want)
		}
	}
}

// A burst of launches reuses the finisher's idle workers instead of
// starting a goroutine per question, and still runs every job, at most
// concurrency at once; the workers exit when the engine halts.
func TestFinisherReusesWorkers(t *testing.T) {
	halt, haltNow := context.WithCancel(context.Background())
	defer haltNow()
	f := newFinisher(&core{halt: halt}, finisherParams{concurrency: 4})
	f.core.log = slog.New(slog.DiscardHandler)
	var ran, running, most atomic.Int64
	launched := 0
	for i := range 200 {
		for !f.launch(func() {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(100 * time.Microsecond) // a job that takes a while, so jobs overlap
			running.Add(-1)
			ran.Add(1)
		}, fmt.Sprint("q", i)) {
			// All four slots busy: wait for one, as the leftover pass would
			// (it waits for its next tick; nothing signals a free slot).
			time.Sleep(50 * time.Microsecond)
		}
		launched++
	}
	f.edits.Wait()
	if ran.Load() != int64(launched) {
		t.Fatalf("%d of %d jobs ran", ran.Load(), launched)
	}
	if m := most.Load(); m > 4 {
		t.Errorf("%d jobs at once, at most 4", m)
	}
	// The idle workers wait for more: at most concurrency of them (plus
	// one that may be on its way out), not one per job.
	if n := finisherWorkers(); n < 1 || n > 5 {
		t.Errorf("%d workers left after 200 jobs, want 1 to 5 idle ones", n)
	}
	haltNow()
	testwait.Until(5*time.Second, func() bool { return finisherWorkers() == 0 })
	if n := finisherWorkers(); n > 0 {
		t.Errorf("%d workers after the halt", n)
	}
}

// finisherWorkers counts the goroutines running finisher.worker.
func finisherWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "engine.(*finisher).worker(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// The operator's policy: the allowlist with wildcards, plain http only to
// HTTP hosts, and host matching that ignores case and a trailing dot.
func TestCallbackPolicyCheck(t *testing.T) {
	p := CallbackPolicy{Hosts: []string{"agents.example.com", "*.hooks.example.org", "203.0.113.7"}, HTTPHosts: []string{"intranet.local"}, PrivateHosts: []string{"10.1.2.3"}}
	for _, tc := range []struct{ url, want string }{
		{"https://agents.example.com/x", ""},
		{"https://AGENTS.example.com./x", ""},
		{"https://a.hooks.example.org/x", ""},
		{"https://a.b.hooks.example.org:8443/x", ""},
		{"https://hooks.example.org/x", "ASKUSER_CALLBACK_HOSTS"},
		{"https://evilhooks.example.org/x", "ASKUSER_CALLBACK_HOSTS"},
		{"https://agents.example.com.evil.test/x", "ASKUSER_CALLBACK_HOSTS"},
		{"https://203.0.113.7/x", ""},
		{"http://agents.example.com/x", "ASKUSER_CALLBACK_HTTP_HOSTS"},
		{"http://intranet.local/x", ""},
		{"https://10.1.2.3/x", ""},
		{"http://10.1.2.3/x", "ASKUSER_CALLBACK_HTTP_HOSTS"},
	} {
		err := p.Check(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%s) = %v, want allowed", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "callback: ")):
			t.Errorf("Check(%s) = %v, want a refusal naming callback and %s", tc.url, err, tc.want)
		}
	}
}

// Non-public addresses are named; public ones are not.
func TestBlockedAddr(t *testing.T) {
	for addr, blocked := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.0.0.8": true, "172.16.3.4": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "fd00::1": true, "0.0.0.0": true, "::": true,
		"224.0.0.1": true, "100.64.0.1": true, "::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true,
		"8.8.8.8": false, "2001:4860:4860::8888": false, "203.0.113.7": false,
		// IPv6 forms that carry an IPv4 address are judged by it: NAT64,
		// IPv4-compatible, 6to4, Teredo (the client inverted); and the
		// deprecated site-local range.
		"64:ff9b::127.0.0.1": true, "64:ff9b::10.1.2.3": true, "64:ff9b::169.254.169.254": true, "64:ff9b::8.8.8.8": false,
		"::127.0.0.1": true, "::10.0.0.1": true, "::192.168.0.1": true,
		"2002:7f00:1::": true, "2002:a9fe:a9fe::1": true, "2002:808:808::1": false,
		"2001:0:4136:e378:8000:63bf:80ff:fffe": true, "2001:0:4136:e378:8000:63bf:f7f7:f7f7": false,
		"fec0::1": true,
	} {
		if got := blockedAddr(netip.MustParseAddr(addr)) != ""; got != blocked {
			t.Errorf("blockedAddr(%s) blocked = %v, want %v", addr, got, blocked)
		}
	}
}
