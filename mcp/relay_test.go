package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/mcp"
)

// protocols are the protocol versions a relay test speaks: one whose
// server asks the client for the form while the call waits, and one
// whose client answers the form by calling the tool again.
var protocols = []string{"2025-06-18", "2026-07-28"}

// formClient connects a client that shows forms with handle, speaking
// version, in memory (as `askbridge mcp` serves stdio).
func formClient(t *testing.T, srv *mcp.Server, handle func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(clientImpl, &sdk.ClientOptions{ElicitationHandler: handle}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

// relayServer is a server speaking only version.
func relayServer(t *testing.T, prefix, version string, o mcp.Options) *mcp.Server {
	mcp.SpeakOnly(&o, version)
	return newServer(t, prefix, o)
}

// structured is a result's structured content as a map.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := asJSON(t, b).(map[string]any)
	return m
}

// mustAnswer checks that r answered deploy_target with want, given in
// the client when via is "mcp".
func mustAnswer(t *testing.T, r callResult, want, via string) map[string]any {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.IsError {
		t.Fatalf("tool error: %q", text(r.res))
	}
	got := structured(t, r.res)
	answers, _ := got["answers"].(map[string]any)
	inner, _ := answers["answers"].(map[string]any)
	if got["status"] != "answered" || !slices.Equal(toStrings(inner["deploy_target"]), []string{want}) || got["via"] != via {
		t.Fatalf("result %v; want deploy_target = %q via %s", got, want, via)
	}
	return got
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestRelayAnswers: a client that shows forms gets the question as a form
// (one choice among the options, an "other answer" box), as well as the
// page; its answer wins, names the client, and ends the question on the
// page too; on both protocol versions.
func TestRelayAnswers(t *testing.T) {
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := relayServer(t, prefix, v, mcp.Options{})
			var form atomic.Pointer[sdk.ElicitParams]
			cs := formClient(t, srv, func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				form.Store(req.Params)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"deploy_target": "Production"}}, nil
			})
			r := await(t, callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()}), 20*time.Second)
			got := mustAnswer(t, r, "Production", "mcp")
			by, _ := got["answeredBy"].(map[string]any)
			if by["platform"] != "mcp" || by["id"] != "test-agent" || got["place"] != "mcp" {
				t.Errorf("answeredBy %v, place %v; want the client, mcp:test-agent, at place mcp", by, got["place"])
			}
			f := form.Load()
			if f == nil {
				t.Fatal("the client was never shown the form")
			}
			schema, _ := json.Marshal(f.RequestedSchema)
			for _, want := range []string{`"deploy_target":{`, `"enum":["Staging (Recommended)","Production"]`, `"deploy_target-other":{`, `Safer default`} {
				if !strings.Contains(string(schema), want) {
					t.Errorf("form schema %s; want %s in it", schema, want)
				}
			}
			if !strings.Contains(f.Message, "Question from test-agent") || !strings.Contains(f.Message, "also asked in the chat") || !strings.Contains(f.Message, "Where should this deploy?") {
				t.Errorf("form message %q; want the agent, that it is in the chat too, and the question", f.Message)
			}
			id, _ := got["id"].(string)
			if q := waitEnded(t, prefix, id); q.Result == nil || q.Result.Via != askbridge.Via("mcp") {
				t.Errorf("the question ended %+v; want via mcp", q.Result)
			}
			if open := br.open(t); slices.Contains(open, id) {
				t.Errorf("the page still shows %s as open", id)
			}
		})
	}
}

// TestRelayChatWins: the person answers on the page while the form is
// open. The call returns the page's answer; the server withdraws the form
// (2025-06-18: the client's handler sees its request cancelled), or, where
// the client answers forms by calling again (2026-07-28), the form's late
// answer changes nothing.
func TestRelayChatWins(t *testing.T) {
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := relayServer(t, prefix, v, mcp.Options{})
			opened := make(chan struct{}, 1)
			release := make(chan struct{})
			var withdrawn atomic.Bool
			cs := formClient(t, srv, func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				opened <- struct{}{}
				select {
				case <-ctx.Done():
					withdrawn.Store(true)
					return nil, ctx.Err()
				case <-release:
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"deploy_target": "Staging (Recommended)"}}, nil
				}
			})
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
			<-opened
			id := br.waitShown(t)
			br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
			if v == "2026-07-28" {
				waitEnded(t, prefix, id)
				close(release)
			}
			got := mustAnswer(t, await(t, call, 20*time.Second), "Production", "web")
			if got["id"] != id {
				t.Errorf("result of %v; want %s", got["id"], id)
			}
			// The withdrawal goes out beside the result.
			if v == "2025-06-18" && !testwait.Until(5*time.Second, withdrawn.Load) {
				t.Error("the form was not withdrawn when the page answered")
			}
		})
	}
}

// TestRelayDecline: declining the form is not an answer: the question
// stays open on the page, where it is then answered.
func TestRelayDecline(t *testing.T) {
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := relayServer(t, prefix, v, mcp.Options{})
			declined := make(chan struct{})
			cs := formClient(t, srv, func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				defer close(declined)
				return &sdk.ElicitResult{Action: "decline"}, nil
			})
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
			<-declined
			id := br.waitShown(t)
			q, found, err := agentClient(t, prefix).Status(context.Background(), id)
			if err != nil || !found || q.Status != askbridge.StatusPending {
				t.Fatalf("after the decline the question is %v (found %v, err %v); want pending", q.Status, found, err)
			}
			br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
			mustAnswer(t, await(t, call, 20*time.Second), "Production", "web")
		})
	}
}

// TestNoFormWithoutCapability: a client that declared no elicitation gets
// no form, nor does one whose operator switched the relay off; the
// question is answered on the page.
func TestNoFormWithoutCapability(t *testing.T) {
	t.Run("no capability", func(t *testing.T) {
		prefix := testPrefix()
		br := startBridge(t, prefix)
		srv := newServer(t, prefix, mcp.Options{})
		cs := inMemory(t, srv, newProgress())
		call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
		id := br.waitShown(t)
		br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
		mustAnswer(t, await(t, call, 20*time.Second), "Production", "web")
	})
	for _, v := range protocols {
		t.Run("switched off "+v, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := relayServer(t, prefix, v, mcp.Options{NoRelay: true})
			var shown atomic.Int32
			cs := formClient(t, srv, func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				shown.Add(1)
				return &sdk.ElicitResult{Action: "decline"}, nil
			})
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
			id := br.waitShown(t)
			br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
			mustAnswer(t, await(t, call, 20*time.Second), "Production", "web")
			if n := shown.Load(); n != 0 {
				t.Errorf("the form was shown %d times with the relay off", n)
			}
		})
	}
}

// TestOnlyInTheClient: `to: "mcp"` asks only in the client. An answer
// there answers; a decline skips; a client that cannot show forms is told
// so and nothing is asked.
func TestOnlyInTheClient(t *testing.T) {
	onlyArgs := func() map[string]any { a := deployArgs(); a["to"] = "mcp"; return a }
	for _, v := range protocols {
		t.Run("answer "+v, func(t *testing.T) {
			prefix := testPrefix()
			startBridge(t, prefix)
			srv := relayServer(t, prefix, v, mcp.Options{})
			cs := formClient(t, srv, func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"deploy_target-other": "Wait for the fix first"}}, nil
			})
			got := mustAnswer(t, await(t, callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: onlyArgs()}), 20*time.Second), "Wait for the fix first", "mcp")
			if _, ok := got["place"]; ok {
				t.Errorf("place %v; want none for a question with one place", got["place"])
			}
		})
		t.Run("decline "+v, func(t *testing.T) {
			prefix := testPrefix()
			startBridge(t, prefix)
			srv := relayServer(t, prefix, v, mcp.Options{})
			cs := formClient(t, srv, func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "decline"}, nil
			})
			r := await(t, callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: onlyArgs()}), 20*time.Second)
			if r.err != nil || r.res.IsError {
				t.Fatalf("call: %v %q", r.err, text(r.res))
			}
			if got := structured(t, r.res); got["status"] != "no_answer" || got["reason"] != "skipped" {
				t.Errorf("result %v; want no_answer, skipped", got)
			}
		})
	}
	t.Run("client without forms", func(t *testing.T) {
		prefix := testPrefix()
		startBridge(t, prefix)
		cs := inMemory(t, newServer(t, prefix, mcp.Options{}), newProgress())
		r := await(t, callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: onlyArgs()}), 20*time.Second)
		if r.err != nil || !r.res.IsError || !strings.Contains(strings.Join(text(r.res), " "), "cannot show forms") {
			t.Fatalf("call: %v %q; want a tool error saying the client cannot show forms", r.err, text(r.res))
		}
		n, err := rdb(t).XLen(context.Background(), prefix+"requests").Result()
		if err != nil || n != 0 {
			t.Errorf("%d requests pushed (err %v); want none", n, err)
		}
	})
}

// TestBudget: a client whose own request timeout (3 s) is shorter than the
// question gets pending within the server's budget (1 s), not a timeout;
// wait_for_answer waits again (pending again), and returns the page's
// answer once given. Nothing is cancelled. Over both transports.
func TestBudget(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := newServer(t, prefix, mcp.Options{MaxWait: time.Second})
			cs := tr.connect(t, srv, newProgress())
			call := func(name string, args any) *sdk.CallToolResult {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.IsError {
					t.Fatalf("%s: tool error %q", name, text(res))
				}
				return res
			}
			first := structured(t, call("ask_user", deployArgs()))
			id, _ := first["id"].(string)
			if first["status"] != "pending" || id == "" {
				t.Fatalf("ask_user returned %v; want pending with the id", first)
			}
			again := structured(t, call("wait_for_answer", map[string]any{"id": id}))
			if again["status"] != "pending" || again["id"] != id {
				t.Fatalf("wait_for_answer returned %v; want pending again", again)
			}
			if shown := br.waitShown(t); shown != id {
				t.Fatalf("the page shows %s; want %s", shown, id)
			}
			br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
			var got map[string]any
			for range 5 {
				got = structured(t, call("wait_for_answer", map[string]any{"id": id, "waitSeconds": 1}))
				if got["status"] != "pending" {
					break
				}
			}
			mustAnswer(t, callResult{res: &sdk.CallToolResult{StructuredContent: got}}, "Production", "web")
			// Waiting once more returns the same result: it is kept.
			mustAnswer(t, callResult{res: call("wait_for_answer", map[string]any{"id": id})}, "Production", "web")
		})
	}
}

// TestWaitForAnswerRefuses: ids this server never gives, and unknown ones,
// are tool errors that say what to do.
func TestWaitForAnswerRefuses(t *testing.T) {
	prefix := testPrefix()
	startBridge(t, prefix)
	cs := inMemory(t, newServer(t, prefix, mcp.Options{}), newProgress())
	for _, tc := range []struct {
		args any
		want string
	}{
		{map[string]any{"id": "deploy-42"}, "the arguments must be"},
		{map[string]any{"id": client.NewID(), "extra": 1}, "the arguments must be"},
		{map[string]any{"id": client.NewID()}, "there is no question"},
	} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wait_for_answer", Arguments: tc.args})
		if err == nil && !res.IsError {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			msg = strings.Join(text(res), " ")
		}
		if !strings.Contains(msg, tc.want) && !strings.Contains(msg, "validating") {
			t.Errorf("%v: %q; want %q", tc.args, msg, tc.want)
		}
	}
}

// TestQuestionResource: a waiting call's question is a resource, listed
// while it waits, that reads as the question and its state from Redis.
func TestQuestionResource(t *testing.T) {
	prefix := testPrefix()
	br := startBridge(t, prefix)
	cs := inMemory(t, newServer(t, prefix, mcp.Options{}), newProgress())
	ctx := context.Background()
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != "askbridge://questions/{id}" {
		t.Fatalf("templates %+v, %v; want askbridge://questions/{id}", tpl, err)
	}
	call := callAsync(ctx, cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	id := br.waitShown(t)
	list, err := cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "askbridge://questions/"+id {
		t.Fatalf("resources %+v, %v; want the waiting question", list, err)
	}
	read := func() map[string]any {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "askbridge://questions/" + id})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := asJSON(t, []byte(res.Contents[0].Text)).(map[string]any)
		return m
	}
	if st := read(); st["status"] != "pending" || st["id"] != id || st["request"] == nil {
		t.Errorf("resource %v; want the pending question with its request", st)
	}
	br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
	mustAnswer(t, await(t, call, 20*time.Second), "Production", "web")
	if st := read(); st["status"] != "answered" || st["result"] == nil {
		t.Errorf("resource %v; want answered with the result", st)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "askbridge://questions/" + client.NewID()}); err == nil {
		t.Error("an unknown question read without an error")
	}
}

// TestRelayOverHTTP: over the stateless /mcp, a client on 2026-07-28 gets
// the form with the call's result and answers it by calling again, which
// any replica with the same key takes (here a second server); a client on
// 2025-06-18 cannot be sent a request mid-call there, so it gets no form
// and the page answers.
func TestRelayOverHTTP(t *testing.T) {
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			key := []byte("the same key on every replica....")
			first := relayServer(t, prefix, v, mcp.Options{StateKey: key})
			second := relayServer(t, prefix, v, mcp.Options{StateKey: key})
			// Calls alternate between the two replicas.
			var n atomic.Int32
			h1, h2 := first.Handler(), second.Handler()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1)%2 == 0 {
					h2.ServeHTTP(w, r)
					return
				}
				h1.ServeHTTP(w, r)
			}))
			t.Cleanup(hs.Close)
			var shown atomic.Int32
			cs, err := sdk.NewClient(clientImpl, &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				shown.Add(1)
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"deploy_target": "Production"}}, nil
			}}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close(); hs.CloseClientConnections() })
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
			if v == "2026-07-28" {
				mustAnswer(t, await(t, call, 20*time.Second), "Production", "mcp")
				return
			}
			id := br.waitShown(t)
			br.answer(t, id, `{"answers":{"deploy_target":["Staging (Recommended)"]}}`)
			mustAnswer(t, await(t, call, 20*time.Second), "Staging (Recommended)", "web")
			if k := shown.Load(); k != 0 {
				t.Errorf("the form was shown %d times over stateless HTTP on %s", k, v)
			}
		})
	}
}

// TestRelayRefusedNotShown: a request the bridge refuses is a tool error,
// and its form is never shown.
func TestRelayRefusedNotShown(t *testing.T) {
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			prefix := testPrefix()
			startBridge(t, prefix)
			var shown atomic.Int32
			cs := formClient(t, relayServer(t, prefix, v, mcp.Options{}), func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				shown.Add(1)
				return &sdk.ElicitResult{Action: "decline"}, nil
			})
			args := deployArgs()
			args["to"] = "nowhere"
			r := await(t, callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: args}), 20*time.Second)
			if r.err != nil || !r.res.IsError || !strings.Contains(strings.Join(text(r.res), " "), `unknown route "nowhere"`) {
				t.Fatalf("call: %v %q; want the bridge's refusal", r.err, text(r.res))
			}
			if k := shown.Load(); k != 0 {
				t.Errorf("the form of a refused request was shown %d times", k)
			}
		})
	}
}

// TestRelayQuorum: a quorum question is shown in the client only when its
// answerers name the client, which then votes once like any voter; one
// that does not name it is never relayed.
func TestRelayQuorum(t *testing.T) {
	for _, v := range protocols {
		t.Run(v, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			voted := make(chan struct{}, 1)
			cs := formClient(t, relayServer(t, prefix, v, mcp.Options{}), func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				voted <- struct{}{}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"deploy_target": "Production"}}, nil
			})
			args := deployArgs()
			args["quorum"] = 2
			args["answerers"] = []any{"mcp:test-agent", "web:web"}
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: args})
			<-voted
			id := br.waitShown(t)
			c := agentClient(t, prefix)
			// The client's vote is taken in (its voted event), and alone
			// does not end it.
			if !testwait.Until(10*time.Second, func() bool {
				evs, err := rdb(t).XRange(context.Background(), prefix+"events", "-", "+").Result()
				if err != nil {
					t.Fatal(err)
				}
				return slices.ContainsFunc(evs, func(m redis.XMessage) bool {
					return m.Values["event"] == "voted" && m.Values["by"] == "mcp:test-agent"
				})
			}) {
				t.Fatal("the client's vote was not taken in")
			}
			if q, _, _ := c.Status(context.Background(), id); q.Status != askbridge.StatusPending {
				t.Fatalf("after one vote of two the question is %s", q.Status)
			}
			br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
			r := await(t, call, 20*time.Second)
			got := structured(t, r.res)
			votes, _ := got["votes"].([]any)
			if got["status"] != "answered" || len(votes) != 2 {
				t.Fatalf("result %v; want answered with two votes", got)
			}
			first, _ := votes[0].(map[string]any)
			by, _ := first["by"].(map[string]any)
			if by["platform"] != "mcp" || by["id"] != "test-agent" {
				t.Errorf("first vote by %v; want the client", by)
			}
		})
	}
	t.Run("not named", func(t *testing.T) {
		prefix := testPrefix()
		br := startBridge(t, prefix)
		var shown atomic.Int32
		cs := formClient(t, relayServer(t, prefix, "2025-06-18", mcp.Options{}), func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			shown.Add(1)
			return &sdk.ElicitResult{Action: "decline"}, nil
		})
		args := deployArgs()
		args["quorum"] = 2
		args["answerers"] = []any{"web:web", "web:alice"}
		call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: args})
		id := br.waitShown(t)
		if err := agentClient(t, prefix).Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		await(t, call, 20*time.Second)
		if k := shown.Load(); k != 0 {
			t.Errorf("a quorum question not naming the client was shown there %d times", k)
		}
	})
}
