package matrix_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/matrix"
	"github.com/askbridge/askbridge/store"
)

// env is a room on the shared Dendrite with the bot and two people in it,
// one Redis key prefix, an agent, and the bridge replicas serving the room.
type env struct {
	*platformtest.Agent
	t          *testing.T
	prefix     string
	room       id.RoomID
	bot        id.UserID
	token      string
	alice, bob *mautrix.Client
	tl         *dendritetest.Timeline // what alice sees
	clock      *platformtest.Clock
	// url is the homeserver the replicas call: the server's, or a
	// dendritetest.Proxy's in front of it.
	url string
	// srv is the test's homeserver.
	srv *dendritetest.Server
	// autoJoin is the replicas' Config.AutoJoin.
	autoJoin string

	mu       sync.Mutex
	replicas []*replica
}

type replica struct {
	name   string
	ch     *matrix.Channel
	cancel context.CancelFunc
	done   chan struct{}
}

// newEnv registers the bot, alice and bob under names of the test's own
// (tag), puts them in a room, and starts no replica yet.
func newEnv(t *testing.T, tag string) *env {
	t.Helper()
	return newEnvOn(t, dendritetest.Start(t), tag)
}

// newEnvOn is newEnv on homeserver srv.
func newEnvOn(t *testing.T, srv *dendritetest.Server, tag string) *env {
	t.Helper()
	bot, token := srv.Register(t, tag+"-bot")
	alice, _ := srv.Register(t, tag+"-alice")
	bob, _ := srv.Register(t, tag+"-bob")
	room := srv.CreateRoom(t, bot, alice, bob)
	srv.Join(t, alice, room)
	srv.Join(t, bob, room)
	agent := redis.NewClient(&redis.Options{Addr: redisAddr})
	e := &env{
		t: t, prefix: fmt.Sprintf("mxe2e%d:", prefixSeq.Add(1)), room: room, bot: bot, token: token,
		alice: srv.Client(t, alice), bob: srv.Client(t, bob), clock: platformtest.NewClock(), url: srv.URL, srv: srv,
	}
	e.Agent = platformtest.NewAgent(t, agent, e.prefix)
	e.tl = dendritetest.NewTimeline(t, e.alice, room)
	t.Cleanup(func() {
		e.mu.Lock()
		rs := e.replicas
		e.mu.Unlock()
		for _, r := range rs {
			r.stop()
		}
		agent.Close()
	})
	return e
}

// start runs a bridge replica: an engine and a Matrix channel.
func (e *env) start(name string) *replica {
	e.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	st := store.New(rdb, store.Options{Prefix: e.prefix, Consumer: name, ClaimIdle: time.Minute})
	log := slog.New(slog.NewTextHandler(platformtest.LogWriter{T: e.t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", name)
	ch, err := matrix.New(matrix.Config{
		Homeserver: e.url, User: e.bot.String(), Token: e.token, Replica: name, AutoJoin: e.autoJoin,
		SyncTimeout: 2 * time.Second, LeaseTTL: 1500 * time.Millisecond, RenewEvery: 300 * time.Millisecond,
	}, st, log)
	if err != nil {
		e.t.Fatal(err)
	}
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Channels: []engine.Channel{ch}, Logger: log, Replica: name, Clock: e.clock,
		Resolve:    platformtest.Resolver(engine.Route{Target: askbridge.Target{Platform: matrix.Platform, Chat: e.room.String()}}),
		SweepEvery: 50 * time.Millisecond, SendBudget: 30 * time.Second, ReadBlock: 100 * time.Millisecond,
	})
	engineCtx, stopEngine := context.WithCancel(context.Background())
	channelCtx, stopChannel := context.WithCancel(engineCtx)
	r := &replica{name: name, ch: ch, cancel: stopChannel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(engineCtx) })
	wg.Go(func() { _ = ch.Run(channelCtx, eng); stopEngine() })
	go func() { wg.Wait(); rdb.Close(); close(r.done) }()
	e.mu.Lock()
	e.replicas = append(e.replicas, r)
	e.mu.Unlock()
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// syncing waits until r syncs.
func (e *env) syncing(r *replica) {
	e.t.Helper()
	testwait.For(e.t, 10*time.Second, r.name+" syncing", func() bool { return r.ch.State() == engine.StateConnected })
}

// ask pushes a request for the room; extra is JSON fields to add
// ("\"answerers\":[…],").
func (e *env) ask(id, extra, questions string) string {
	return e.Ask(fmt.Sprintf(`{"id":%q,"to":%q,%s"questions":%s}`, id, "matrix:"+e.room.String(), extra, questions))
}

const (
	pollQuestions  = `[{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]`
	multiQuestions = `[{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"},{"label":"Lint"}]}]`
	twoQuestions   = `[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"window","header":"When","question":"When?","options":[{"label":"Now"},{"label":"Tonight"}]}]`
)

// next waits for the bot's next event that match accepts.
func (e *env) next(match func(*event.Event) bool) *event.Event {
	e.t.Helper()
	return e.tl.Next(e.t, func(ev *event.Event) bool { return ev.Sender == e.bot && match(ev) })
}

func ofType(typ string) func(*event.Event) bool {
	return func(ev *event.Event) bool { return ev.Type.Type == typ }
}

// answers is the answer ids of a poll event.
func answers(ev *event.Event) []string {
	var out []string
	poll, _ := ev.Content.Raw["org.matrix.msc3381.poll.start"].(map[string]any)
	list, _ := poll["answers"].([]any)
	for _, a := range list {
		out = append(out, a.(map[string]any)["id"].(string))
	}
	return out
}

// vote has cli answer poll with answer id.
func (e *env) vote(cli *mautrix.Client, poll id.EventID, answer string) id.EventID {
	e.t.Helper()
	return dendritetest.Send(e.t, cli, e.room, event.Type{Type: "org.matrix.msc3381.poll.response", Class: event.MessageEventType}, map[string]any{
		"m.relates_to":                     map[string]any{"rel_type": "m.reference", "event_id": poll},
		"org.matrix.msc3381.poll.response": map[string]any{"answers": []string{answer}},
	})
}

// reply has cli reply text to prompt, in its thread when thread is set.
func (e *env) reply(cli *mautrix.Client, prompt id.EventID, text string, thread bool) id.EventID {
	e.t.Helper()
	rel := map[string]any{"m.in_reply_to": map[string]any{"event_id": prompt}}
	if thread {
		rel = map[string]any{"rel_type": "m.thread", "event_id": prompt, "is_falling_back": true, "m.in_reply_to": map[string]any{"event_id": prompt}}
	}
	return dendritetest.Send(e.t, cli, e.room, event.EventMessage, map[string]any{"msgtype": "m.text", "body": text, "m.relates_to": rel})
}

// notice waits for the bot's next notice in the thread of prompt and
// returns its text.
func (e *env) notice(prompt id.EventID) string {
	e.t.Helper()
	ev := e.next(func(ev *event.Event) bool {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		return ev.Content.Raw["msgtype"] == "m.notice" && rel["event_id"] == prompt.String()
	})
	return ev.Content.Raw["body"].(string)
}

// noticeSaying waits for the bot's notice saying text in the thread of
// prompt, skipping other events.
func (e *env) noticeSaying(prompt id.EventID, text string) {
	e.t.Helper()
	e.next(func(ev *event.Event) bool {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		return ev.Content.Raw["msgtype"] == "m.notice" && rel["event_id"] == prompt.String() && ev.Content.Raw["body"] == text
	})
}

// marker has bob post a message and returns its id.
func (e *env) marker() id.EventID {
	e.t.Helper()
	return dendritetest.Send(e.t, e.bob, e.room, event.EventMessage, map[string]any{"msgtype": "m.text", "body": "marker"})
}

// botEvents is the bot's message events up to id last.
func (e *env) botEvents(last id.EventID) []*event.Event {
	e.t.Helper()
	var out []*event.Event
	for _, ev := range e.tl.Upto(e.t, last) {
		if ev.Sender == e.bot && ev.StateKey == nil {
			out = append(out, ev)
		}
	}
	return out
}

// react has cli react to event target with key (an m.annotation).
func (e *env) react(cli *mautrix.Client, target id.EventID, key string) id.EventID {
	e.t.Helper()
	return dendritetest.Send(e.t, cli, e.room, event.EventReaction, map[string]any{
		"m.relates_to": map[string]any{"rel_type": "m.annotation", "event_id": target, "key": key},
	})
}

// events is what the agent's events stream says of question id.
func (e *env) events(id string) []askbridge.Event {
	e.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	evs, _, err := store.New(rdb, store.Options{Prefix: e.prefix}).Events(context.Background(), "0", 10000, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []askbridge.Event
	for _, ev := range evs {
		if ev.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

// ofKind is the events of evs of kind k.
func ofKind(evs []askbridge.Event, k askbridge.EventKind) []askbridge.Event {
	var out []askbridge.Event
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func answered(res askbridge.Result, question string, labels ...string) bool {
	if res.Answers == nil {
		return false
	}
	got := res.Answers.Answers[question]
	return res.Outcome() == askbridge.OutcomeAnswered && strings.Join(got, "|") == strings.Join(labels, "|")
}
