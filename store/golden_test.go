package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestProtocolGolden pins the public contract of redis-protocol.md: how
// request entries are read, the question hash fields, every result JSON
// exactly as pushed onto the result list, and the event fields. Run with
// -update to rewrite testdata/protocol/ after a deliberate change (which
// the protocol says needs a new version).
func TestProtocolGolden(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			protocolGolden(t, b)
		})
	}
}

// The protocol document's example request.
const exampleAsk = `{"id":"deploy-42","to":"web","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`

// The protocol document's example answer from the agent's own client.
const exampleAnswer = `{"id":"deploy-42","by":{"platform":"mcp","id":"alice","name":"Alice"},"answers":{"deploy_target":["Production"]}}`

func protocolGolden(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)

	// Request entries as agents write them, and what the bridge reads.
	type readEntry struct {
		Ask       *string `json:"ask,omitempty"`
		Cancel    string  `json:"cancel,omitempty"`
		Answer    *string `json:"answer,omitempty"`
		Malformed string  `json:"malformed,omitempty"`
	}
	type entryCase struct {
		Fields []string  `json:"fields"`
		Read   readEntry `json:"read"`
	}
	cases := []entryCase{
		{Fields: []string{"ask", exampleAsk}},
		{Fields: []string{"cancel", "deploy-42"}},
		{Fields: []string{"ask", exampleAsk, "cancel", "deploy-42"}},
		{Fields: []string{"cancel", ""}},
		{Fields: []string{"id", "deploy-42"}},
		{Fields: []string{"answer", exampleAnswer}},
		{Fields: []string{"answer", exampleAnswer, "cancel", "deploy-42"}},
	}
	for _, c := range cases {
		args := []any{"XADD", s.k.Requests(), "*"}
		for _, f := range c.Fields {
			args = append(args, f)
		}
		if err := s.rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := s.ReadRequests(ctx, 10, 0)
	if err != nil || len(entries) != len(cases) {
		t.Fatalf("read %d entries, %v", len(entries), err)
	}
	for i, e := range entries {
		cases[i].Read = readEntry{Cancel: e.Cancel, Malformed: e.Malformed}
		if e.Ask != nil {
			ask := string(e.Ask)
			cases[i].Read.Ask = &ask
		}
		if e.Answer != nil {
			answer := string(e.Answer)
			cases[i].Read.Answer = &answer
		}
	}
	golden(t, "requests.json", indentJSON(t, cases))

	// The question hash while pending and once answered.
	q := engine.NewQuestion{
		ID:        "deploy-42",
		Request:   sampleRequest("deploy-42"),
		Target:    askbridge.Target{Platform: "telegram", Chat: "42"},
		Answerers: []string{"telegram:7", "telegram:8"},
		Created:   t0,
		Deadline:  t0.Add(15 * time.Minute),
	}
	mustCreate(t, s, q)
	golden(t, "question-pending.json", hashJSON(t, s, "deploy-42"))
	res := askbridge.Answered("deploy-42", map[string][]string{"deploy_target": {"Staging (Recommended)"}},
		&askbridge.Person{Platform: "telegram", ID: "7", Name: "Ada"}, askbridge.ViaButton)
	if _, err := s.End(ctx, "deploy-42", res, t0.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	golden(t, "question-answered.json", hashJSON(t, s, "deploy-42"))
	golden(t, "result-answered.json", resultList(t, s, "deploy-42"))
	sameAsGo(t, resultList(t, s, "deploy-42"), res.Stamp(t0, t0.Add(90*time.Second)))

	// Every other way a question ends.
	ends := []struct {
		file string
		res  askbridge.Result
	}{
		{"result-multi.json", askbridge.Answered("multi", map[string][]string{"envs": {"Staging", "my own text"}, "notify": {"Yes"}},
			&askbridge.Person{Platform: "slack", ID: "U1"}, askbridge.ViaText)},
		{"result-mcp.json", answeredInAgentClient()},
		{"result-skipped.json", askbridge.NoAnswer("skip", askbridge.ReasonSkipped, "")},
		{"result-cancelled.json", askbridge.NoAnswer("cancel", askbridge.ReasonCancelled, "")},
		{"result-undeliverable.json", askbridge.NoAnswer("undeliverable", askbridge.ReasonUndeliverable, "telegram: chat not found")},
	}
	for _, e := range ends {
		mustCreate(t, s, newQ(e.res.ID, t0, 15*time.Minute))
		if _, err := s.End(ctx, e.res.ID, e.res, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		golden(t, e.file, resultList(t, s, e.res.ID))
		sameAsGo(t, resultList(t, s, e.res.ID), e.res.Stamp(t0, t0.Add(time.Minute)))
	}
	mustCreate(t, s, newQ("timeout", t0, 15*time.Minute))
	if ended, err := s.Sweep(ctx, t0.Add(15*time.Minute), 10); err != nil || len(ended) != 1 {
		t.Fatalf("sweep: %v, %v", ended, err)
	}
	golden(t, "result-timeout.json", resultList(t, s, "timeout"))
	sameAsGo(t, resultList(t, s, "timeout"), askbridge.NoAnswer("timeout", askbridge.ReasonTimeout, "").Stamp(t0, t0.Add(15*time.Minute)))

	// A refused request.
	if _, err := s.Reject(ctx, "1767322800000-0", askbridge.Refused("1767322800000-0",
		errors.New("questions[0].options must contain 2 to 4 options")), t0); err != nil {
		t.Fatal(err)
	}
	golden(t, "question-error.json", hashJSON(t, s, "1767322800000-0"))
	golden(t, "result-error.json", resultList(t, s, "1767322800000-0"))

	// The events stream: field names and order, as XRANGE shows them.
	for _, ev := range []askbridge.Event{
		{Kind: "requested", ID: "deploy-42", At: t0, Platform: "telegram", Chat: "42"},
		{Kind: "delivered", ID: "deploy-42", At: t0.Add(time.Second), Platform: "telegram", Chat: "42", Message: "1001"},
		{Kind: "answered", ID: "deploy-42", At: t0.Add(90 * time.Second), Platform: "telegram", Chat: "42", By: "telegram:7"},
		{Kind: "skipped", ID: "skip", At: t0.Add(time.Minute), Platform: "telegram", Chat: "42", By: "telegram:7"},
		{Kind: "expired", ID: "timeout", At: t0.Add(15 * time.Minute), Platform: "telegram", Chat: "42"},
		{Kind: "cancelled", ID: "cancel", At: t0.Add(time.Minute), Platform: "telegram", Chat: "42"},
		{Kind: "undeliverable", ID: "undeliverable", At: t0.Add(time.Minute), Platform: "telegram", Chat: "42", Error: "telegram: chat not found"},
		{Kind: "rejected", ID: "1767322800000-0", At: t0, Error: "questions[0].options must contain 2 to 4 options"},
	} {
		if err := s.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := s.rdb.XRange(ctx, s.k.Events(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	// One entry per line: [field, value, field, value, ...].
	events := []byte("[\n")
	for i, m := range raw {
		line, err := json.Marshal(streamFields(t, s, m))
		if err != nil {
			t.Fatal(err)
		}
		events = append(append(events, "  "...), line...)
		if i < len(raw)-1 {
			events = append(events, ',')
		}
		events = append(events, '\n')
	}
	golden(t, "events.json", append(events, "]\n"...))
}

// sameAsGo checks that the result the scripts stamped is byte for byte what
// encoding/json makes of the stamped Result.
func sameAsGo(t *testing.T, stored []byte, res askbridge.Result) {
	t.Helper()
	want, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if string(bytes.TrimSuffix(stored, []byte("\n"))) != string(want) {
		t.Errorf("stored result\n%s\ndiffers from json.Marshal\n%s", stored, want)
	}
}

// golden compares got with testdata/protocol/<name>, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "protocol", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./store -run TestProtocolGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the public protocol changed.\n got: %s\nwant: %s", path, got, want)
	}
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// hashJSON is the question hash as HGETALL returns it, keys sorted.
func hashJSON(t *testing.T, s *Store, id string) []byte {
	t.Helper()
	m, err := s.rdb.HGetAll(ctxT(t), s.k.Question(id)).Result()
	if err != nil || len(m) == 0 {
		t.Fatalf("HGETALL %s: %v, %v", id, m, err)
	}
	return indentJSON(t, m) // encoding/json sorts map keys
}

// resultList is the one result JSON on the result list, byte for byte.
func resultList(t *testing.T, s *Store, id string) []byte {
	t.Helper()
	v, err := s.rdb.LRange(ctxT(t), s.k.Result(id), 0, -1).Result()
	if err != nil || len(v) != 1 {
		t.Fatalf("result list of %s: %v, %v", id, v, err)
	}
	return []byte(v[0] + "\n")
}

// streamFields reads an entry's fields in their stored order (XMessage
// holds them in a map), as field, value, field, value...
func streamFields(t *testing.T, s *Store, m redis.XMessage) []string {
	t.Helper()
	v, err := s.rdb.Do(ctxT(t), "XRANGE", s.k.Events(), m.ID, m.ID).Slice()
	if err != nil || len(v) != 1 {
		t.Fatalf("XRANGE %s: %v, %v", m.ID, v, err)
	}
	raw := v[0].([]any)[1].([]any)
	out := make([]string, len(raw))
	for i, f := range raw {
		out[i] = f.(string)
	}
	if !slices.Contains(out, "event") {
		t.Fatalf("entry without event: %v", out)
	}
	return out
}

// answeredInAgentClient is the result of a question shown in a chat and
// answered in the agent's own client (an answer entry).
func answeredInAgentClient() askbridge.Result {
	res := askbridge.Answered("mcp", map[string][]string{"deploy_target": {"Production"}},
		&askbridge.Person{Platform: askbridge.PlatformMCP, ID: "alice", Name: "Alice"}, askbridge.ViaMCP)
	res.Place = askbridge.PlatformMCP
	return res
}
