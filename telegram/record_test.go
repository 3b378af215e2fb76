package telegram_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/telegram"
)

// TestOneTapRecordsEachMessageOnceAndEditsItOnce follows tapped questions
// through two replicas with a Redis MONITOR trace: the engine alone records
// each message the channel posted, so every message of a question is added
// by exactly one add_message run (a one-part prompt, a prompt in several
// parts, and a reply box opened by "Other…"), and the tap costs exactly one
// editMessageText per message (the finisher's; the channel does not edit a
// message whose question the tap ended).
func TestOneTapRecordsEachMessageOnceAndEditsItOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	addMessage := e.loadScript("../store/lua/add_message.lua")
	trace := e.monitor()
	e.start("a")
	e.start("b")
	e.poller()

	longReq, err := askbridge.DecodeRequest([]byte(longRequest()))
	if err != nil {
		t.Fatal(err)
	}
	longParts := len(telegram.PromptParts(engine.BuildPlan("once-long", longReq, telegram.Capabilities)))
	if longParts < 2 {
		t.Fatalf("the long prompt takes %d message(s)", longParts)
	}
	tests := []struct {
		name, id, body string
		chat           int64
		who            telegramtest.User
		parts          int
		tap, notice    string
		status         string
		box            bool // tap "Other…" and answer in the reply box
	}{
		{name: "one part", id: "once-one", body: fmt.Sprintf(oneQuestion, "once-one", "telegram:"+strconv.FormatInt(alice.ID, 10)),
			chat: alice.ID, who: alice, parts: 1, tap: "Production", notice: en(engine.NoticeRecorded), status: "Answered: Production"},
		{name: "several parts", id: "once-long", body: fmt.Sprintf(`{"id":"once-long","to":"telegram:%d",%s`, bob.ID, strings.TrimPrefix(longRequest(), "{")),
			chat: bob.ID, who: bob, parts: longParts, tap: "Skip", notice: en(engine.NoticeSkipped), status: "Skipped"},
		{name: "reply box", id: "once-box", body: fmt.Sprintf(oneQuestion, "once-box", "telegram:"+strconv.FormatInt(carol.ID, 10)),
			chat: carol.ID, who: carol, parts: 1, tap: "Other…", notice: en(engine.NoticeOther), status: "Answered", box: true},
	}
	shown := map[string][]telegramtest.Message{}
	for _, tt := range tests {
		e.Ask(tt.body)
		var msgs []telegramtest.Message
		for n := 1; n <= tt.parts; n++ {
			msgs = append(msgs, e.prompt(tt.chat, n))
		}
		if a := e.tap(tt.chat, msgs[len(msgs)-1].ID, tt.who, tt.tap); a.Text != tt.notice {
			t.Errorf("%s: notice %+v", tt.name, a)
		}
		if tt.box {
			box := e.prompt(tt.chat, tt.parts+1)
			e.reply(tt.chat, tt.who, box.ID, "Blue-green on the canary")
			msgs = append(msgs, box)
		}
		e.Result(tt.id, 5*time.Second)
		for _, m := range msgs {
			e.finished(tt.chat, m.ID, tt.status)
		}
		shown[tt.id] = msgs
	}
	// Stopping the replicas waits for every edit they started, the
	// channel's own included; the marker then closes the trace.
	e.mu.Lock()
	replicas := slices.Collect(maps.Values(e.replicas))
	e.mu.Unlock()
	for _, r := range replicas {
		r.stop()
	}
	lines := e.endTrace(trace)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := shown[tt.id]
			key := `"` + e.prefix + "messages:{" + tt.id + `}"`
			runs := 0
			for _, l := range lines {
				if strings.Contains(l, key) && strings.Contains(strings.ToLower(l), `"evalsha" "`+addMessage+`"`) {
					runs++
				}
			}
			if runs != len(msgs) {
				t.Errorf("%d add_message runs for %d messages, want one each", runs, len(msgs))
			}
			recorded, err := e.check.Messages(context.Background(), tt.id)
			if err != nil {
				t.Fatal(err)
			}
			var want []engine.MessageRef
			for i, m := range msgs {
				ref := engine.MessageRef{Platform: "telegram", Chat: strconv.FormatInt(tt.chat, 10), Message: strconv.Itoa(m.ID), Part: i}
				if tt.box && i == len(msgs)-1 {
					ref.Part = engine.PartReplyBox
				}
				want = append(want, ref)
			}
			if !slices.Equal(recorded, want) {
				t.Errorf("recorded %+v, want %+v", recorded, want)
			}
			for i, m := range msgs {
				if n := e.message(tt.chat, m.ID).EditCalls; n != 1 {
					t.Errorf("message %d of %d: %d editMessageText calls, want 1", i+1, len(msgs), n)
				}
			}
		})
	}
}

// loadScript loads a Lua script of the store into the test Redis and
// returns its SHA1, so every run of it shows as one EVALSHA in a trace
// (no NOSCRIPT and EVAL fallback).
func (e *env) loadScript(path string) string {
	e.t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	sha, err := e.agent.ScriptLoad(context.Background(), string(src)).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return sha
}

// trace is a Redis MONITOR connection that keeps the lines naming the
// test's key prefix (the shared Redis serves every test of the package).
type trace struct {
	prefix string
	done   chan struct{}

	mu    sync.Mutex
	lines []string
}

// monitor starts a MONITOR trace of the test Redis, closed at cleanup.
func (e *env) monitor() *trace {
	e.t.Helper()
	conn, err := net.Dial("tcp", redisAddr)
	if err != nil {
		e.t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		e.t.Fatal(err)
	}
	if ok, err := r.ReadString('\n'); err != nil || ok != "+OK\r\n" {
		e.t.Fatalf("MONITOR: %q %v", ok, err)
	}
	tr := &trace{prefix: e.prefix, done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.Contains(line, tr.prefix) {
				tr.mu.Lock()
				tr.lines = append(tr.lines, line)
				tr.mu.Unlock()
			}
		}
	}()
	e.t.Cleanup(func() {
		conn.Close()
		<-tr.done
	})
	return tr
}

// endTrace sends a marker through the agent's connection and returns the
// lines traced before it: Redis feeds MONITOR in the order it runs
// commands, so every command that ran before the marker is among them.
func (e *env) endTrace(tr *trace) []string {
	e.t.Helper()
	marker := e.prefix + "end-of-trace"
	if err := e.agent.Echo(context.Background(), marker).Err(); err != nil {
		e.t.Fatal(err)
	}
	var lines []string
	e.eventually(5*time.Second, "the end of the trace", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for i, l := range tr.lines {
			if strings.Contains(l, marker) {
				lines = slices.Clone(tr.lines[:i])
				return true
			}
		}
		return false
	})
	return lines
}
