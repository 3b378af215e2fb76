package slack_test

// End-to-end tests of a question shown in several places at once
// (ask-user.md §5): two bridge replicas, each with a Telegram, a Slack and
// a web channel, on one Redis, one fake Telegram and one fake Slack.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
	"github.com/askbridge/askbridge/web"
)

const (
	// placesGroup is the Telegram group the fake knows; placesNoChat is
	// one it does not, so a send there gets 400 "chat not found".
	placesGroup  int64 = -100500
	placesNoChat int64 = -100999
	// placesWithin bounds every wait of these tests: long enough for a
	// slow shared machine, short enough to fail rather than hang.
	placesWithin = 20 * time.Second
)

// placesQuestion is a one-question request shown in the places of `to`
// (a JSON list); its first option is Staging, its second Production.
const placesQuestion = `{"id":%q,"agent":"deploy-bot","to":%s,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]}`

// placesEnv is two bridge replicas that each run a Telegram, a Slack and a
// web channel, sharing one Redis key prefix, one fake Telegram and one
// fake Slack (socket mode), and an agent pushing requests.
type placesEnv struct {
	t        *testing.T
	prefix   string
	telegram *telegramtest.Server
	slack    *slacktest.Server
	agent    agenttest.Agent
	// store reads what the replicas recorded, as a test sees it.
	store *store.Store
	// stops stop the replicas and wait until each has returned.
	stops []func()
}

// newPlacesEnv starts the fakes and two replicas, and waits until both
// replicas' Slack sockets are open.
func newPlacesEnv(t *testing.T) *placesEnv {
	t.Helper()
	tg := telegramtest.New(telegramtest.Options{})
	t.Cleanup(tg.Close)
	tg.AddChat(placesGroup, "supergroup", "Ops")
	sl := slacktest.New(slacktest.Options{BotToken: botToken, AppToken: appToken, SigningSecret: signingSecret,
		AckTimeout: 3 * time.Second, PingEvery: 50 * time.Millisecond})
	t.Cleanup(sl.Close)
	sl.AddChannel(opsChannel)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	e := &placesEnv{t: t, prefix: fmt.Sprintf("slackplaces%d:", prefixSeq.Add(1)), telegram: tg, slack: sl}
	e.agent = agenttest.Agent{RDB: rdb, Prefix: e.prefix}
	e.store = store.New(rdb, store.Options{Prefix: e.prefix, Consumer: "reader"})
	for i := range 2 {
		e.startReplica(fmt.Sprintf("replica-%d", i+1))
	}
	e.wait("both Slack sockets open", func() bool { return sl.Connections() == 2 })
	return e
}

// resolvePlace maps "telegram:<id>", "slack:<id>" and "web" to their
// targets.
func resolvePlace(to string) (engine.Route, error) {
	if to == web.Platform {
		return engine.Route{Target: askbridge.Target{Platform: web.Platform}}, nil
	}
	p, c, ok := strings.Cut(to, ":")
	if ok && c != "" && (p == telegram.Platform || p == slack.Platform) {
		return engine.Route{Target: askbridge.Target{Platform: p, Chat: c}}, nil
	}
	return engine.Route{}, fmt.Errorf("to: unknown route %q", to)
}

// startReplica runs one replica: an engine with a Telegram, a Slack and a
// web channel. It stops as the bridge does, the channels first, then the
// engine, which waits for the edits under way.
func (e *placesEnv) startReplica(name string) {
	t := e.t
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	st := store.New(rdb, store.Options{Prefix: e.prefix, Consumer: name})
	log := slog.New(slog.NewTextHandler(platformtest.LogWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", name)

	// A transport of its own, so its idle connections can be closed
	// before the package checks for goroutines left behind.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	tg, err := telegram.New(telegram.Config{
		Token: e.telegram.Token, APIURL: e.telegram.URL, Replica: name,
		PollTimeout: 2 * time.Second, LeaseTTL: 1500 * time.Millisecond, RenewEvery: 300 * time.Millisecond,
		ChatPace: 20 * time.Millisecond, GlobalPace: time.Millisecond,
		HTTPClient: &http.Client{Timeout: 20 * time.Second, Transport: transport},
	}, st, log)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := slack.New(slack.Config{BotToken: botToken, AppToken: appToken, SigningSecret: signingSecret,
		APIURL: e.slack.APIURL(), PingInterval: time.Second, RetryMin: 50 * time.Millisecond, RetryMax: time.Second}, st, log)
	if err != nil {
		t.Fatal(err)
	}
	page := web.NewChannel(st, nil)
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolvePlace, Channels: []engine.Channel{tg, sl, page}, Logger: log,
		Replica: name, SweepEvery: 20 * time.Millisecond, SendBudget: 10 * time.Second,
		// Stopping a replica waits out the read of the requests stream in
		// progress: a short one keeps each test's teardown short.
		ReadBlock: 100 * time.Millisecond,
	})

	engineCtx, stopEngine := context.WithCancel(context.Background())
	channelCtx, stopChannels := context.WithCancel(engineCtx)
	var engines, channels sync.WaitGroup
	engines.Go(func() { _ = eng.Run(engineCtx) })
	for _, ch := range []engine.Channel{tg, sl, page} {
		channels.Go(func() { _ = ch.Run(channelCtx, eng) })
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopChannels()
			channels.Wait()
			stopEngine()
			engines.Wait()
		})
	}
	t.Cleanup(stop)
	e.stops = append(e.stops, stop)
}

// wait polls cond until it holds, failing the test after placesWithin.
func (e *placesEnv) wait(what string, cond func() bool) {
	e.t.Helper()
	testwait.For(e.t, placesWithin, what, cond)
}

// settle waits until the fake Slack has no envelope unacknowledged, then
// stops both replicas: afterwards nothing changes any more, so a test may
// count what happened.
func (e *placesEnv) settle() {
	e.t.Helper()
	e.wait("every Slack envelope acknowledged", func() bool { return e.slack.Unacked() == 0 })
	for _, stop := range e.stops {
		stop()
	}
}

// recorded waits until the store has recorded a prompt of question id in
// each of the places (indexes into its `to`) and returns the prompts
// recorded by place.
func (e *placesEnv) recorded(id string, places ...int) map[int][]engine.MessageRef {
	e.t.Helper()
	var byPlace map[int][]engine.MessageRef
	e.wait(fmt.Sprintf("prompts of %s recorded in places %v", id, places), func() bool {
		refs, err := e.store.Messages(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		byPlace = map[int][]engine.MessageRef{}
		for _, r := range refs {
			if r.IsPrompt() {
				byPlace[r.Place] = append(byPlace[r.Place], r)
			}
		}
		for _, k := range places {
			if len(byPlace[k]) == 0 {
				return false
			}
		}
		return true
	})
	return byPlace
}

// slackPrompts lists the bot's messages in channel that show question id.
func (e *placesEnv) slackPrompts(channel, id string) []slacktest.Message {
	digest := askbridge.QuestionDigest(id)
	var out []slacktest.Message
	for _, m := range e.slack.Messages(channel) {
		if m.BotID == slacktest.BotID && m.ThreadTS == "" && strings.Contains(string(m.Blocks), digest) {
			out = append(out, m)
		}
	}
	return out
}

// slackTopLevel lists the bot's messages in channel outside threads: once
// a question has ended its prompt no longer carries its digest (the
// buttons are gone), so a test with one question counts these.
func (e *placesEnv) slackTopLevel(channel string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range e.slack.Messages(channel) {
		if m.BotID == slacktest.BotID && m.ThreadTS == "" {
			out = append(out, m)
		}
	}
	return out
}

// slackPrompt waits for the prompt of question id in channel.
func (e *placesEnv) slackPrompt(channel, id string) slacktest.Message {
	e.t.Helper()
	e.wait("the Slack prompt of "+id, func() bool { return len(e.slackPrompts(channel, id)) > 0 })
	return e.slackPrompts(channel, id)[0]
}

// telegramMessage reads message msg of chat as it now stands.
func (e *placesEnv) telegramMessage(chat int64, msg int) (telegramtest.Message, bool) {
	for _, m := range e.telegram.Messages(chat) {
		if m.ID == msg {
			return m, true
		}
	}
	return telegramtest.Message{}, false
}

// history returns the web page's timeline entries of question id.
func (e *placesEnv) history(id string) []web.HistoryEntry {
	e.t.Helper()
	raw, err := e.store.History(context.Background(), 100)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []web.HistoryEntry
	for _, b := range raw {
		var h web.HistoryEntry
		if err := json.Unmarshal(b, &h); err != nil {
			e.t.Fatalf("timeline entry %s: %v", b, err)
		}
		if h.ID == id {
			out = append(out, h)
		}
	}
	return out
}

// events reads every event the replicas published about question id.
func (e *placesEnv) events(id string) []askbridge.Event {
	e.t.Helper()
	var out []askbridge.Event
	after := "0"
	for {
		evs, next, err := e.store.Events(context.Background(), after, 100, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.ID == id {
				out = append(out, ev)
			}
		}
		if len(evs) == 0 {
			return out
		}
		after = next
	}
}

// undeliverableEvents keeps the undeliverable events of evs.
func undeliverableEvents(evs []askbridge.Event) []askbridge.Event {
	var out []askbridge.Event
	for _, ev := range evs {
		if ev.Kind == askbridge.EventUndeliverable {
			out = append(out, ev)
		}
	}
	return out
}

// checkAnsweredOnSlack checks the result of a question Bob answered with
// Production on the Slack channel, one of its several places.
func checkAnsweredOnSlack(t *testing.T, r askbridge.Result) {
	t.Helper()
	if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaButton || answers(r) != "map[deploy_target:[Production]]" {
		t.Errorf("result %+v %s; want answered Production by button", r, answers(r))
	}
	if want := "slack:" + opsChannel; r.Place != want {
		t.Errorf("result place %q, want %q", r.Place, want)
	}
	if r.AnsweredBy == nil || *r.AnsweredBy != (askbridge.Person{Platform: slack.Platform, ID: bob.ID, Name: bob.Name}) {
		t.Errorf("answered by %+v, want Bob on Slack", r.AnsweredBy)
	}
}

// waitSlackEnded waits until Slack message ts of channel shows no button
// and ends, in its text and in a context block, with status.
func (e *placesEnv) waitSlackEnded(channel, ts, status string) slacktest.Message {
	e.t.Helper()
	var m slacktest.Message
	e.wait(fmt.Sprintf("Slack message %s to end with %q", ts, status), func() bool {
		m, _ = e.slack.Message(channel, ts)
		return len(slacktest.Buttons(m.Blocks)) == 0 && strings.HasSuffix(m.Text, "\n\n"+status) &&
			strings.Contains(string(m.Blocks), `"askbridge_status"`) && strings.Contains(string(m.Blocks), jsonString(status))
	})
	return m
}

// A question shown on Telegram, Slack and the web page at once, by two
// replicas, is posted once in each place; Bob answers it on Slack; the
// agent gets one result naming Slack as the place, and every message in
// every place then shows who answered and where. A place that cannot be
// reached is reported as an undeliverable event naming it while the
// question stays open in the other place, where it is then answered.
func TestSeveralPlacesAcrossPlatforms(t *testing.T) {
	t.Run("answered on Slack", func(t *testing.T) {
		e := newPlacesEnv(t)
		group := strconv.FormatInt(placesGroup, 10)
		id := e.agent.Ask(t, fmt.Sprintf(placesQuestion, "places-all", `["telegram:`+group+`","slack:`+opsChannel+`","web"]`))

		// Shown in all three places at once, each recorded for its place.
		byPlace := e.recorded(id, 0, 1, 2)
		want := []askbridge.Target{{Platform: telegram.Platform, Chat: group}, {Platform: slack.Platform, Chat: opsChannel}, {Platform: web.Platform, Chat: "web"}}
		for k, w := range want {
			for _, r := range byPlace[k] {
				if r.Platform != w.Platform || r.Chat != w.Chat {
					t.Errorf("place %d: recorded %+v, want a message in %s", k, r, w)
				}
			}
		}
		if page := byPlace[2]; len(page) != 1 || page[0].Message != id {
			t.Errorf("the page's place recorded %+v, want one message %q (open on the page)", page, id)
		}
		var tgPrompt telegramtest.Message
		e.wait("the Telegram prompt", func() bool {
			msgs := e.telegram.BotMessages(placesGroup)
			if len(msgs) == 0 {
				return false
			}
			tgPrompt = msgs[0]
			return true
		})
		if strconv.Itoa(tgPrompt.ID) != byPlace[0][0].Message || len(tgPrompt.Keyboard) == 0 {
			t.Fatalf("Telegram prompt %d with keyboard %v; recorded %+v", tgPrompt.ID, tgPrompt.Keyboard, byPlace[0])
		}
		slPrompt := e.slackPrompt(opsChannel, id)
		if slPrompt.TS != byPlace[1][0].Message || !slices.Contains(slacktest.Buttons(slPrompt.Blocks), "Production") {
			t.Fatalf("Slack prompt %s with buttons %v; recorded %+v", slPrompt.TS, slacktest.Buttons(slPrompt.Blocks), byPlace[1])
		}

		if _, err := e.slack.Press(bob, opsChannel, slPrompt.TS, "Production"); err != nil {
			t.Fatal(err)
		}
		checkAnsweredOnSlack(t, e.agent.Result(t, id, placesWithin))

		// Every message in every place names who answered, and where.
		status := "Answered by " + bob.Name + " in slack:" + opsChannel + ": Production"
		var tgEnded telegramtest.Message
		e.wait(fmt.Sprintf("Telegram message %d to end with %q", tgPrompt.ID, status), func() bool {
			tgEnded, _ = e.telegramMessage(placesGroup, tgPrompt.ID)
			return strings.HasSuffix(tgEnded.Text, "\n\n"+status) && len(tgEnded.Keyboard) == 0
		})
		if !strings.Contains(tgEnded.Text, "Where should this deploy?") {
			t.Errorf("the Telegram message lost its question: %q", tgEnded.Text)
		}
		slEnded := e.waitSlackEnded(opsChannel, slPrompt.TS, status)
		if !strings.Contains(slEnded.Text, "Where should this deploy?") {
			t.Errorf("the Slack message lost its question: %q", slEnded.Text)
		}
		e.wait("the page's timeline entry", func() bool { return len(e.history(id)) > 0 })
		e.wait("Bob's notice on Slack", func() bool {
			return slices.ContainsFunc(e.slack.Ephemerals(bob.ID), func(m slacktest.Ephemeral) bool {
				return m.Text == engine.NoticeRecorded.Text("en")
			})
		})

		// Once nothing moves any more: one result, one prompt per place,
		// one edit of each, one timeline entry.
		e.settle()
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Errorf("%d more results pushed, want exactly one", n)
		}
		if msgs := e.telegram.BotMessages(placesGroup); len(msgs) != 1 {
			t.Errorf("Telegram holds %d bot messages, want the one prompt", len(msgs))
		} else if msgs[0].Edits != 1 {
			t.Errorf("the Telegram prompt was changed %d times, want once", msgs[0].Edits)
		}
		if prompts := e.slackTopLevel(opsChannel); len(prompts) != 1 || prompts[0].TS != slPrompt.TS {
			t.Errorf("Slack holds %d bot messages, want the one prompt %s", len(prompts), slPrompt.TS)
		} else if prompts[0].Updates != 1 {
			t.Errorf("the Slack prompt was updated %d times, want once", prompts[0].Updates)
		}
		refs, err := e.store.Messages(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		perPlace := map[int]int{}
		for _, r := range refs {
			perPlace[r.Place]++
		}
		if len(refs) != 3 || perPlace[0] != 1 || perPlace[1] != 1 || perPlace[2] != 1 {
			t.Errorf("recorded messages %+v, want one prompt in each of the three places", refs)
		}
		entries := e.history(id)
		if len(entries) != 1 {
			t.Fatalf("the page's timeline holds %d entries of %s, want one: %+v", len(entries), id, entries)
		}
		if h := entries[0]; h.Status != status || h.Outcome != string(askbridge.OutcomeAnswered) || h.By != bob.Name ||
			len(h.Sections) != 1 || !slices.Equal(h.Sections[0].Answer, []string{"Production"}) {
			t.Errorf("timeline entry %+v, want answered Production by %s with status %q", h, bob.Name, status)
		}
		if evs := undeliverableEvents(e.events(id)); len(evs) != 0 {
			t.Errorf("undeliverable events %+v for a question every place showed", evs)
		}
	})

	t.Run("one place undeliverable", func(t *testing.T) {
		e := newPlacesEnv(t)
		lost := "telegram:" + strconv.FormatInt(placesNoChat, 10)
		id := e.agent.Ask(t, fmt.Sprintf(placesQuestion, "places-lost", `["`+lost+`","slack:`+opsChannel+`"]`))

		// Telegram answers 400 chat not found: the place is reported,
		// naming it, and the question stays open on Slack.
		var lostEvents []askbridge.Event
		e.wait("an undeliverable event naming "+lost, func() bool {
			lostEvents = undeliverableEvents(e.events(id))
			return len(lostEvents) > 0
		})
		ev := lostEvents[0]
		if ev.To != lost || ev.Platform != telegram.Platform || ev.Chat != strconv.FormatInt(placesNoChat, 10) ||
			!strings.Contains(ev.Error, telegramtest.ErrChatNotFound) || ev.At.IsZero() {
			t.Errorf("undeliverable event %+v; want it dated, naming %s, with Telegram's words %q", ev, lost, telegramtest.ErrChatNotFound)
		}
		slPrompt := e.slackPrompt(opsChannel, id)
		byPlace := e.recorded(id, 1)
		if len(byPlace[0]) != 0 || byPlace[1][0].Message != slPrompt.TS {
			t.Errorf("recorded %+v; want the Slack prompt %s alone", byPlace, slPrompt.TS)
		}
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Fatalf("%d results pushed while Slack was still open", n)
		}
		if rec, found, err := e.store.Get(context.Background(), id); err != nil || !found || rec.Status != askbridge.StatusPending {
			t.Fatalf("question %s: status %q (found %v, %v), want still pending", id, rec.Status, found, err)
		}

		if _, err := e.slack.Press(bob, opsChannel, slPrompt.TS, "Production"); err != nil {
			t.Fatal(err)
		}
		checkAnsweredOnSlack(t, e.agent.Result(t, id, placesWithin))
		e.waitSlackEnded(opsChannel, slPrompt.TS, "Answered by "+bob.Name+" in slack:"+opsChannel+": Production")

		e.settle()
		if n := e.agent.ResultCount(t, id); n != 0 {
			t.Errorf("%d more results pushed, want exactly one", n)
		}
		if evs := undeliverableEvents(e.events(id)); len(evs) != 1 {
			t.Errorf("undeliverable events %+v, want one for %s", evs, lost)
		}
		if got := e.telegram.Stats().Sent; got != 0 {
			t.Errorf("Telegram took %d messages, want none", got)
		}
		if prompts := e.slackTopLevel(opsChannel); len(prompts) != 1 || prompts[0].TS != slPrompt.TS {
			t.Errorf("Slack holds %d bot messages, want the one prompt %s", len(prompts), slPrompt.TS)
		}
	})
}
