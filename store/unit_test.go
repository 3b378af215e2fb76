package store

import (
	"context"
	"encoding/json"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redistest"
)

// crc16 is the CRC16-CCITT (XMODEM) Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// slot is a key's Redis Cluster slot, honouring the first {hash tag}.
func slot(key string) uint16 {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return crc16([]byte(key)) % 16384
}

func TestSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16 = %#x, want 0x31c3", got)
	}
	if slot("{user1000}.following") != slot("{user1000}.followers") || slot("foo{}{bar}") != crc16([]byte("foo{}{bar}"))%16384 {
		t.Fatal("hash tags")
	}
}

// TestScriptKeysShareSlot: the KEYS of each script share one slot for any
// id or lease name, with the default prefix and another one.
func TestScriptKeysShareSlot(t *testing.T) {
	for _, prefix := range []string{DefaultPrefix, "prod:eu:"} {
		k := newKeys(prefix)
		for _, id := range []string{"deploy-42", "1767322800000-0", "a.b:c_d", "x"} {
			groups := map[string][]string{
				"create":          {k.Question(id)},
				"end":             {k.Question(id), k.Result(id), k.messages(id)},
				"reject":          {k.Question(id), k.Result(id)},
				"add_message":     {k.Question(id), k.messages(id)},
				"lease":           {k.lease(id), k.fence(id)},
				"cursor_set":      {k.lease(id), k.cursor(id)},
				"text_cursor_set": {k.lease(id), k.textCursor(id)},
				"send_clear":      {k.Question(id), k.sent(id, "email:0"), k.sent(id, "end:1")},
				// A per-question lease's keys are in the question's slot.
				"deliver": {k.Question(id), k.lease(QuestionLease(LeaseDeliver, id)), k.fence(QuestionLease(LeaseDeliver, id)), k.cursor(QuestionLease(LeaseDeliver, id))},
				"finish":  {k.Question(id), k.lease(QuestionLease(LeaseFinish, id)), k.fence(QuestionLease(LeaseFinish, id)), k.cursor(QuestionLease(LeaseFinish, id))},
			}
			for name, ks := range groups {
				for _, key := range ks[1:] {
					if slot(key) != slot(ks[0]) {
						t.Errorf("%s: %s and %s are in slots %d and %d", name, ks[0], key, slot(ks[0]), slot(key))
					}
				}
			}
		}
	}
}

// TestLeaseKeys pins the lease names the engine builds (intake.go and
// finisher.go write "deliver:"+id and "finish:"+id: the root package cannot
// import store) and the keys of per-question and other leases.
func TestLeaseKeys(t *testing.T) {
	if got := QuestionLease(LeaseDeliver, "deploy-42"); got != "deliver:deploy-42" {
		t.Errorf("delivery lease name %q", got)
	}
	if got := QuestionLease(LeaseFinish, "a.b:c_d"); got != "finish:a.b:c_d" {
		t.Errorf("finishing lease name %q", got)
	}
	k := newKeys(DefaultPrefix)
	for got, want := range map[string]string{
		k.lease("deliver:deploy-42"):  "askuser:lease:deliver:{deploy-42}",
		k.fence("deliver:deploy-42"):  "askuser:lease:deliver:{deploy-42}:fence",
		k.cursor("deliver:deploy-42"): "askuser:cursor:deliver:{deploy-42}",
		k.lease("finish:a.b:c_d"):     "askuser:lease:finish:{a.b:c_d}",
		k.fence("finish:a.b:c_d"):     "askuser:lease:finish:{a.b:c_d}:fence",
		// Leases that are not per-question keep their keys.
		k.lease("telegram:poll:123"):         "askuser:lease:{telegram:poll:123}",
		k.fence("telegram:poll:123"):         "askuser:lease:{telegram:poll:123}:fence",
		k.cursor("telegram:poll:123"):        "askuser:cursor:{telegram:poll:123}",
		k.lease("discord:gateway:42"):        "askuser:lease:{discord:gateway:42}",
		k.lease("poller"):                    "askuser:lease:{poller}",
		k.lease("deliver:"):                  "askuser:lease:{deliver:}",
		k.lease("deliverx:deploy-42"):        "askuser:lease:{deliverx:deploy-42}",
		k.lease("telegram:deliver:deploy"):   "askuser:lease:{telegram:deliver:deploy}",
		k.fence("discord:gateway:42"):        "askuser:lease:{discord:gateway:42}:fence",
		k.cursor("discord:gateway:42"):       "askuser:cursor:{discord:gateway:42}",
		k.lease(QuestionLease("other", "x")): "askuser:lease:{other:x}",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}

// TestPublicKeys pins the key names the protocol publishes.
func TestPublicKeys(t *testing.T) {
	k := newKeys(DefaultPrefix)
	for got, want := range map[string]string{
		k.Requests():            "askuser:requests",
		k.Events():              "askuser:events",
		k.Result("deploy-42"):   "askuser:result:{deploy-42}",
		k.Question("deploy-42"): "askuser:question:{deploy-42}",
	} {
		if got != want {
			t.Errorf("key %q, want %q", got, want)
		}
	}
}

// TestLuaHeaders holds every script to STYLE.md: a header naming each KEYS
// and ARGV it uses and its return values, keys only through KEYS, and "now"
// passed in (no TIME).
func TestLuaHeaders(t *testing.T) {
	files, err := fs.Glob(luaFS, "lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	used := regexp.MustCompile(`(KEYS|ARGV)\[(\d+)\]`)
	for _, f := range files {
		src, err := fs.ReadFile(luaFS, f)
		if err != nil {
			t.Fatal(err)
		}
		var header, body []string
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(line, "--") && len(body) == 0 {
				header = append(header, line)
			} else {
				body = append(body, line)
			}
		}
		h := strings.Join(header, "\n")
		b := strings.Join(body, "\n")
		if !strings.Contains(h, "Returns") {
			t.Errorf("%s: header does not say what it returns", f)
		}
		for _, m := range used.FindAllStringSubmatch(b, -1) {
			if !strings.Contains(h, "-- "+m[1]+"["+m[2]+"]") && !(m[1] == "ARGV" && strings.Contains(h, "-- ARGV["+m[2]+"..]")) {
				t.Errorf("%s: %s[%s] is used but not in the header", f, m[1], m[2])
			}
		}
		if strings.Contains(b, "'TIME'") || strings.Contains(b, "prefix") {
			t.Errorf("%s: reads the server clock or builds key names", f)
		}
	}
}

func TestToOutcome(t *testing.T) {
	for code, want := range map[int64]outcome{1: outDone, 0: outKept, -1: outMissing, -2: outFull} {
		if got, err := toOutcome(code); err != nil || got != want {
			t.Errorf("toOutcome(%d) = %v, %v", code, got, err)
		}
	}
	if _, err := toOutcome(7); err == nil {
		t.Error("unknown code accepted")
	}
	if _, _, err := reply("text"); err == nil {
		t.Error("a string reply accepted")
	}
}

func TestOptions(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Prefix != "askuser:" || o.Group != "bridge" || o.Consumer == "" || o.ClaimIdle != 30*time.Second ||
		o.Retention != 24*time.Hour || o.EventsMaxLen != 100_000 || o.MaxLifetime != time.Hour || o.Logger == nil || o.Clock == nil {
		t.Fatalf("defaults %+v", o)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Options{{Prefix: "a{b}:"}, {ClaimIdle: -1}, {Retention: -1}, {EventsMaxLen: -1}, {MaxLifetime: -1}, {MaxMessages: -1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestToEntry(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   engine.Entry
	}{
		{"ask", map[string]any{"ask": "{}"}, engine.Entry{StreamID: "1-0", Ask: []byte("{}")}},
		{"empty ask is an ask", map[string]any{"ask": ""}, engine.Entry{StreamID: "1-0", Ask: []byte{}}},
		{"cancel", map[string]any{"cancel": "q"}, engine.Entry{StreamID: "1-0", Cancel: "q"}},
		{"extra fields are ignored", map[string]any{"cancel": "q", "trace": "t"}, engine.Entry{StreamID: "1-0", Cancel: "q"}},
		{"answer", map[string]any{"answer": `{"id":"q"}`}, engine.Entry{StreamID: "1-0", Answer: []byte(`{"id":"q"}`)}},
		{"empty answer is an answer", map[string]any{"answer": ""}, engine.Entry{StreamID: "1-0", Answer: []byte{}}},
		{"both", map[string]any{"ask": "{}", "cancel": "q"}, engine.Entry{StreamID: "1-0", Malformed: "entry has more than one of the fields ask, cancel, answer and revoke: ask, cancel"}},
		{"an answer and a cancel", map[string]any{"answer": "{}", "cancel": "q"}, engine.Entry{StreamID: "1-0", Malformed: "entry has more than one of the fields ask, cancel, answer and revoke: cancel, answer"}},
		{"all three", map[string]any{"answer": "{}", "cancel": "q", "ask": "{}"}, engine.Entry{StreamID: "1-0", Malformed: "entry has more than one of the fields ask, cancel, answer and revoke: ask, cancel, answer"}},
		{"a revoke", map[string]any{"revoke": `{"key":"k"}`}, engine.Entry{StreamID: "1-0", Revoke: []byte(`{"key":"k"}`)}},
		{"neither", map[string]any{"x": "y"}, engine.Entry{StreamID: "1-0", Malformed: "entry has none of the fields ask, cancel, answer and revoke"}},
		{"deleted", nil, engine.Entry{StreamID: "1-0", Malformed: "entry was deleted from the stream"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := toEntry(redis.XMessage{ID: "1-0", Values: tc.values})
			if got.StreamID != tc.want.StreamID || !slices.Equal(got.Ask, tc.want.Ask) || (got.Ask == nil) != (tc.want.Ask == nil) ||
				!slices.Equal(got.Answer, tc.want.Answer) || (got.Answer == nil) != (tc.want.Answer == nil) ||
				!slices.Equal(got.Revoke, tc.want.Revoke) ||
				got.Cancel != tc.want.Cancel || got.Malformed != tc.want.Malformed {
				t.Fatalf("toEntry = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzEntryOf: an entry, whatever its fields, is exactly one of an ask, a
// cancel, an answer, an oversize entry or a malformed one.
func FuzzEntryOf(f *testing.F) {
	f.Add("ask", "{}", "", "", 10)
	f.Add("answer", `{"id":"q"}`, "cancel", "q", 10)
	f.Add("cancel", "", "trace", "t", 10)
	f.Add("answer", "x", "note", "", askbridge.MaxEntryBytes+1)
	f.Fuzz(func(t *testing.T, f1, v1, f2, v2 string, size int) {
		e := entryOf("1-0", size, map[string]any{f1: v1, f2: v2})
		kinds := 0
		for _, is := range []bool{e.Ask != nil && e.Oversize == 0, e.Cancel != "", e.Answer != nil && e.Oversize == 0, e.Oversize > 0, e.Malformed != ""} {
			if is {
				kinds++
			}
		}
		if kinds != 1 || e.StreamID != "1-0" {
			t.Fatalf("entry of %q=%q, %q=%q (%d bytes) is %+v", f1, v1, f2, v2, size, e)
		}
	})
}

// TestScriptCacheFlushed: a server that lost its script cache (restart,
// failover, SCRIPT FLUSH) answers NOSCRIPT; single calls and pipelined
// calls alike are sent again in full, and each runs once.
func TestScriptCacheFlushed(t *testing.T) {
	addr := backendEmbedded.addrs[0]
	if redistest.Installed() {
		srv, err := redistest.StartServer() // its own: SCRIPT FLUSH hits every test on a shared one
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		addr = srv.Addr
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	s := New(c, Options{Prefix: testPrefix()})
	ctx := ctxT(t)
	flush := func() {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	mustCreate(t, s, newQ("f1", t0, time.Second)) // pipelined create script
	mustCreate(t, s, newQ("f2", t0, time.Second))
	flush()
	if _, err := s.AddMessage(ctx, "f1", engine.MessageRef{Platform: "web", Message: "1"}); err != nil {
		t.Fatal(err)
	}
	flush()
	ended, err := s.Sweep(ctx, t0.Add(time.Second), 10) // pipelined end scripts
	if err != nil || len(ended) != 2 {
		t.Fatalf("sweep after a flush: %v, %v", ended, err)
	}
	for _, id := range []string{"f1", "f2"} {
		if n := c.LLen(ctx, s.k.Result(id)).Val(); n != 1 {
			t.Fatalf("%s: %d results", id, n)
		}
	}
	flush()
	if r, err := s.End(ctx, "f1", answered("f1"), t0); err != nil || r.Won || !r.Found {
		t.Fatalf("End after a flush: %+v, %v", r, err)
	}
}

// TestRefIdentity pins what the add-message script relies on: the JSON of a
// ref is its identity followed by "}" (part 0) or by "," and the part.
func TestRefIdentity(t *testing.T) {
	for _, ref := range []engine.MessageRef{
		{Platform: "telegram", Chat: "-100123", Message: "42"},
		{Platform: "slack", Chat: "C1", Message: "1712345678.000100", Part: 3},
		{Platform: "discord", Chat: "9", Message: `a"b,}<&>`, Part: engine.PartReplyBox},
		{Platform: "web", Message: "q-1"},
	} {
		ident, err := refIdentity(ref)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ref)
		if err != nil {
			t.Fatal(err)
		}
		want := ident + "}"
		if ref.Part != 0 {
			want = ident + `,"part":` + strconv.Itoa(ref.Part) + "}"
		}
		if string(b) != want {
			t.Errorf("JSON of %+v is %s, want %s", ref, b, want)
		}
		other := ref
		other.Part = 5
		if oi, _ := refIdentity(other); oi != ident {
			t.Errorf("identity of %+v depends on the part: %s, %s", ref, oi, ident)
		}
	}
}

// TestReadRequestsIdle: an idle reader runs the read script once, then
// only blocks: a read that blocked for nothing is followed by another
// blocking read, until an entry comes (then the script reads again) or a
// claim scan is due.
func TestReadRequestsIdle(t *testing.T) {
	var names []string
	hook := &namedHook{names: &names}
	c := backendSingle.client(t)
	c.AddHook(hook)
	s := New(c, Options{Prefix: testPrefix(), Consumer: "idle"})
	ctx := ctxT(t)
	for range 3 {
		if entries, err := s.ReadRequests(ctx, 10, 20*time.Millisecond); err != nil || len(entries) != 0 {
			t.Fatalf("read %v, %v", entries, err)
		}
	}
	want := []string{"xgroup", "evalsha", "xreadgroup", "xreadgroup", "xreadgroup"}
	if !slices.Equal(scriptsAsOne(names), want) {
		t.Fatalf("idle reads sent %v, want %v", names, want)
	}
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"cancel", "x"}}).Err(); err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	if entries, err := s.ReadRequests(ctx, 10, 20*time.Millisecond); err != nil || len(entries) != 1 {
		t.Fatalf("read %v, %v", entries, err)
	}
	if entries, err := s.ReadRequests(ctx, 10, 20*time.Millisecond); err != nil || len(entries) != 0 {
		t.Fatalf("read %v, %v", entries, err)
	}
	// The blocking read that took the entry, then the script and a block.
	want = []string{"xreadgroup", "evalsha", "xreadgroup"}
	if !slices.Equal(scriptsAsOne(names), want) {
		t.Fatalf("reads after an entry sent %v, want %v", names, want)
	}
}

// namedHook records the name of each command a client sends.
type namedHook struct{ names *[]string }

func (h *namedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *namedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n != "hello" && n != "client" {
			*h.names = append(*h.names, n)
		}
		return next(ctx, cmd)
	}
}

func (h *namedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// scriptsAsOne names every way of running a script evalsha (a first run
// may be EVALSHA, then EVAL after NOSCRIPT).
func scriptsAsOne(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "eval" {
			if len(out) > 0 && out[len(out)-1] == "evalsha" {
				continue
			}
			n = "evalsha"
		}
		out = append(out, n)
	}
	return out
}
