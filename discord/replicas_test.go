package discord_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/discord/internal/discordtest"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
)

// slowStore delays Get, Lookup and End (alone or marked), like a Redis
// under load.
type slowStore struct {
	enginetest.Store
	delay atomic.Int64
}

func (s *slowStore) wait(ctx context.Context) {
	select {
	case <-time.After(time.Duration(s.delay.Load())):
	case <-ctx.Done():
	}
}

func (s *slowStore) Get(ctx context.Context, id string) (engine.Record, bool, error) {
	s.wait(ctx)
	return s.Store.Get(ctx, id)
}

func (s *slowStore) Lookup(ctx context.Context, id string) (engine.Record, bool, error) {
	s.wait(ctx)
	return s.Store.Lookup(ctx, id)
}

func (s *slowStore) MarkAndEnd(ctx context.Context, id string, res askbridge.Result, now time.Time) (bool, engine.EndResult, error) {
	s.wait(ctx)
	return s.Store.MarkAndEnd(ctx, id, res, now)
}

func (s *slowStore) End(ctx context.Context, id string, res askbridge.Result, now time.Time) (engine.EndResult, error) {
	s.wait(ctx)
	return s.Store.End(ctx, id, res, now)
}

func TestPressAcknowledgedInTimeWhenRedisIsSlow(t *testing.T) {
	t.Parallel()
	var slow []*slowStore
	e := newEnv(t, envOpts{wrap: func(i int, st enginetest.Store) enginetest.Store {
		s := &slowStore{Store: st}
		slow = append(slow, s)
		return s
	}})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(oneQuestion, "slow-1"))
	p := e.shown(id)[0]
	for _, s := range slow {
		s.delay.Store(int64(2500 * time.Millisecond))
	}
	start := time.Now()
	in := e.click(e.alice, p.ID, buttonIDs(p)[1])
	if in.Failed || in.AckType != 6 || in.AckLatency >= 2*time.Second {
		t.Errorf("press acknowledged with type %d after %s (failed %v), want a deferred update well within 3s", in.AckType, in.AckLatency, in.Failed)
	}
	if time.Since(start) < 4*time.Second {
		t.Errorf("the store was not slow: answered after %s", time.Since(start))
	}
	if notice(in) != "Answer recorded." {
		t.Errorf("follow-up notice %q", notice(in))
	}
	r := e.Result(id, 10*time.Second)
	if r.Status != askbridge.StatusAnswered || answers(r)["deploy_target"][0] != "Production" {
		t.Errorf("result %+v", r)
	}
	for _, s := range slow {
		s.delay.Store(0)
	}
	e.message(p.ID, "finished", ended("Answered: Production"))
}

// deadStore fails every call once killed, like a replica cut off or gone.
type deadStore struct {
	enginetest.Store
	dead atomic.Bool
}

var errDead = errors.New("replica is dead")

func (s *deadStore) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (engine.Lease, bool, error) {
	if s.dead.Load() {
		return engine.Lease{}, false, errDead
	}
	return s.Store.AcquireLease(ctx, name, holder, ttl)
}

func (s *deadStore) RenewLease(ctx context.Context, l engine.Lease, ttl time.Duration) (bool, error) {
	if s.dead.Load() {
		return false, errDead
	}
	return s.Store.RenewLease(ctx, l, ttl)
}

func (s *deadStore) ReleaseLease(ctx context.Context, l engine.Lease) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Store.ReleaseLease(ctx, l)
}

func TestGatewayTakeover(t *testing.T) {
	t.Parallel()
	stores := map[int]*deadStore{}
	e := newEnv(t, envOpts{wrap: func(i int, st enginetest.Store) enginetest.Store {
		d := &deadStore{Store: st}
		stores[i] = d
		return d
	}})
	holder := e.waitGateway()
	var idx int
	for i, r := range e.reps {
		if r == holder {
			idx = i
		}
	}
	// Kill the holder: its lease is never released, its connection drops.
	killed := time.Now()
	stores[idx].dead.Store(true)
	holder.stop()
	e.fake.DropSessions()
	next := e.waitGateway()
	if next == holder {
		t.Fatal("the dead replica still holds the gateway")
	}
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("takeover took %s (lease TTL 1s)", d)
	}
	id := e.Ask(fmt.Sprintf(oneQuestion, "takeover-1"))
	p := e.shown(id)[0]
	in := e.click(e.alice, p.ID, buttonIDs(p)[0])
	if notice(in) != "Answer recorded." {
		t.Errorf("notice %q", notice(in))
	}
	if r := e.Result(id, 5*time.Second); r.Status != askbridge.StatusAnswered {
		t.Errorf("result %+v", r)
	}
	if n := e.fake.Sessions(); n != 1 {
		t.Errorf("%d gateway sessions, want 1", n)
	}
}

// TestEventSeenTwiceHandledOnce runs a third channel whose gateway lease has
// another name, so two gateway sessions on one token receive every event
// (as during a hand-over): each press and message is still handled once.
func TestEventSeenTwiceHandledOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{replicas: 1})
	e.waitGateway()
	extra, err := discord.New(discord.Config{
		Token: e.fake.Token(), APIURL: e.fake.URL, AppID: "another-lease", Replica: "extra",
		LeaseTTL: time.Second, StandbyPoll: 100 * time.Millisecond, RetryMin: 50 * time.Millisecond,
	}, e.reps[0].store, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The extra channel hands events to the same engine, through the
	// replica's recording inbox.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = extra.Run(ctx, e.reps[0].inbox) }()
	t.Cleanup(func() { cancel(); <-done })
	e.eventually(5*time.Second, "two gateway sessions", func() bool { return e.fake.Sessions() == 2 })

	pressed := e.Ask(fmt.Sprintf(oneQuestion, "twice-1"))
	p := e.shown(pressed)[0]
	in := e.click(e.alice, p.ID, buttonIDs(p)[0])
	e.Result(pressed, 5*time.Second)
	// Both sessions handed the press over; the engine told one of them it
	// is a duplicate, and that one answers nothing.
	e.handled(in.ID, 2)
	in, _ = e.fake.Interaction(in.ID)
	if in.Calls != 1 || len(in.Responses) != 1 {
		t.Errorf("the press was answered %d times with %d messages, want once", in.Calls, len(in.Responses))
	}

	texted := e.Ask(`{"id":"twice-2","questions":[{"id":"a","header":"A","question":"A?","options":[{"label":"X"},{"label":"Y"}]},{"id":"b","header":"B","question":"B?","options":[{"label":"X"},{"label":"Y"}]}]}`)
	p = e.shown(texted)[0]
	msg, err := e.fake.Reply(e.alice, e.room, p.ID, "1: x")
	if err != nil {
		t.Fatal(err)
	}
	e.replyTo(e.room, msg)
	_, outs := e.handled(msg, 2)
	answering := 0
	for _, o := range outs {
		if o.Respond != "" {
			answering++
		}
	}
	if answering != 1 {
		t.Errorf("the engine answered the message %d times, want once: %+v", answering, outs)
	}
	n := 0
	for _, m := range e.fake.Messages(e.room) {
		if m.ReplyTo == msg {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d corrections for one message, want 1", n)
	}
	e.NoResult(texted)
}

func TestReconnectResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{replicas: 1})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(oneQuestion, "resume-1"))
	p := e.shown(id)[0]
	e.fake.DropSessions()
	// Pressed while the bot is away: the event waits in the session and
	// comes with the RESUME.
	iid, err := e.fake.Click(e.alice, p.ID, buttonIDs(p)[1])
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Result(id, 5*time.Second); answers(r)["deploy_target"][0] != "Production" {
		t.Errorf("result %+v", r)
	}
	_, resumes, _ := e.fake.GatewayStats()
	if resumes == 0 {
		t.Error("the gateway was not resumed")
	}
	in, _ := e.fake.Interaction(iid)
	if in.Failed {
		t.Errorf("the press failed: acknowledged after %s", in.AckLatency)
	}
	// Discord asks for a reconnect (op 7): the session is resumed again.
	e.fake.RequestReconnect()
	e.eventually(10*time.Second, "a second resume", func() bool {
		_, n, _ := e.fake.GatewayStats()
		return n >= resumes+1 && e.fake.Sessions() == 1
	})
	next := e.Ask(fmt.Sprintf(oneQuestion, "resume-2"))
	p = e.shown(next)[0]
	e.click(e.alice, p.ID, buttonIDs(p)[0])
	e.Result(next, 5*time.Second)
}

func TestBadCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{replicas: 1})
	e.waitGateway()
	ch := e.reps[0].ch
	token := e.fake.Token()
	// The token is revoked: the next connect is refused with 4004.
	e.fake.SetToken("a-new-token")
	e.fake.CloseSessions(4000)
	e.eventually(10*time.Second, "bad credentials", func() bool { return ch.State() == engine.StateBadCredentials })
	_, _, codes := e.fake.GatewayStats()
	if !containsInt(codes, 4004) {
		t.Errorf("close codes %v, want 4004", codes)
	}
	// The process goes on; with the token fixed on Discord's side, the
	// channel comes back by itself.
	e.fake.SetToken(token)
	e.eventually(10*time.Second, "connected again", func() bool { return ch.State() == engine.StateConnected })

	// A token Discord never accepted: REST says 401 at once.
	bad, err := discord.New(discord.Config{Token: "wrong", APIURL: e.fake.URL, Replica: "bad", BadCredentialsRetry: time.Hour}, e.reps[0].store, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = bad.Run(ctx, e.reps[0].engine) }()
	e.eventually(5*time.Second, "bad credentials", func() bool { return bad.State() == engine.StateBadCredentials })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestDirectMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	id := e.Ask(fmt.Sprintf(`{"id":"dm-1","to":"discord:@%s","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`, e.alice))
	var dm string
	e.eventually(5*time.Second, "a DM channel", func() bool {
		var ok bool
		dm, ok = e.fake.DMChannel(e.alice)
		return ok
	})
	p := e.shown(id)[0]
	if _, err := e.fake.Post(e.alice, dm, "no"); err != nil {
		t.Fatal(err)
	}
	r := e.Result(id, 5*time.Second)
	if answers(r)["a"][0] != "No" || r.AnsweredBy.ID != e.alice {
		t.Errorf("result %+v", r)
	}
	e.message(p.ID, "answered", ended("Answered: No"))
}

func TestUndeliverable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	denied := e.fake.AddChannel()
	e.fake.DenyChannel(denied)
	closed := e.fake.AddUser("closed")
	e.fake.CloseDMs(closed)
	cases := []struct{ to, want string }{
		{"discord:999999999999", "Unknown Channel (code 10003)"},
		{"discord:" + denied, "Missing Access (code 50001)"},
		{"discord:@" + closed, "Cannot send messages to this user (code 50007)"},
		{"discord:@424242424242", "Unknown User (code 10013)"},
	}
	for i, c := range cases {
		id := e.Ask(fmt.Sprintf(`{"id":"undeliverable-%d","to":%q,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"No"}]}]}`, i, c.to))
		r := e.Result(id, 5*time.Second)
		if r.Reason != askbridge.ReasonUndeliverable || !strings.Contains(r.Error, c.want) {
			t.Errorf("%s: result %+v, want undeliverable with %q", c.to, r, c.want)
		}
	}
}

func TestLongPromptSplit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	e.waitGateway()
	long := strings.Repeat("Why does this matter so much? ", 16)
	desc := strings.Repeat("d", 190)
	var qs []string
	for i := range 3 {
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","header":"H%d","question":%q,"options":[{"label":"A","description":%q},{"label":"B","description":%q},{"label":"C","description":%q},{"label":"D","description":%q}]}`, i, i, long, desc, desc, desc, desc))
	}
	id := e.Ask(`{"id":"long-1","questions":[` + strings.Join(qs, ",") + `]}`)
	ps := e.shownWhole(id)
	if len(ps) < 2 {
		t.Fatalf("%d parts, want a prompt of several", len(ps))
	}
	for i, p := range ps {
		if discordtest.MaxContent < len([]rune(p.Content)) {
			t.Errorf("part %d is %d characters", i, len([]rune(p.Content)))
		}
		if (len(p.Components) > 0) != (i == len(ps)-1) {
			t.Errorf("part %d of %d has %d rows; only the last has buttons", i, len(ps), len(p.Components))
		}
	}
	e.Cancel(id)
	e.Result(id, 5*time.Second)
	for _, p := range ps {
		m := e.message(p.ID, "cancelled", ended("Cancelled"))
		if !kept(m.Content, p.Content) {
			t.Errorf("part %s lost its text:\n%s\nwas\n%s", p.ID, m.Content, p.Content)
		}
	}
}

func TestBurstUnderRateLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("burst under rate limits: full tier (go test without -short)")
	}
	t.Parallel()
	e := newEnv(t, envOpts{budget: 50 * time.Second, fake: discordtest.Options{
		// Discord allows about 5 messages per 5s per channel and 50
		// requests per second; the same proportions, 25 times faster.
		Limits: map[string]discordtest.Limit{"POST /channels/{id}/messages": {Count: 5, Window: 200 * time.Millisecond}},
		Global: discordtest.Limit{Count: 50, Window: 40 * time.Millisecond},
	}})
	e.waitGateway()
	const n = 300
	rooms := []string{e.room, e.fake.AddChannel(), e.fake.AddChannel()}
	ids := make([]string, n)
	for i := range n {
		ids[i] = e.Ask(fmt.Sprintf(`{"id":"burst-%d","to":"discord:%s","questions":[{"id":"a","header":"H","question":"Q%d?","options":[{"label":"Yes"},{"label":"No"}]}]}`, i, rooms[i%len(rooms)], i))
	}
	var got int
	e.eventually(45*time.Second, fmt.Sprintf("%d prompts", n), func() bool {
		got = 0
		for _, r := range rooms {
			got += len(e.botMessages(r))
		}
		return got >= n
	})
	seen := map[string]int{}
	for _, r := range rooms {
		for _, m := range e.botMessages(r) {
			seen[buttonIDs(m)[0][:19]]++
		}
	}
	for _, id := range ids {
		if c := seen[askbridge.EncodePayload(id, askbridge.Choice{Kind: askbridge.ControlOption})[:19]]; c != 1 {
			t.Errorf("%s shown %d times", id, c)
		}
		e.NoResult(id)
	}
	limited := 0
	for _, r := range e.fake.Requests() {
		if r.Status == 429 {
			limited++
		}
	}
	t.Logf("%d prompts, %d requests refused with 429", got, limited)
}

// noGateway is a network path on which Discord's gateway cannot be reached.
type noGateway struct{}

func (noGateway) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/gateway") {
		return nil, errors.New("no route to the gateway")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayHandedOverWhenItKeepsFailing: the lease holder cannot reach
// the gateway; after a few failed connects it hands the lease over and a
// replica that can takes the gateway.
func TestGatewayHandedOverWhenItKeepsFailing(t *testing.T) {
	t.Parallel()
	o := envOpts{replicas: 1, client: func(i int) *http.Client {
		if i == 0 {
			return &http.Client{Transport: noGateway{}}
		}
		return nil
	}}
	e := newEnv(t, o)
	e.eventually(5*time.Second, "the broken replica retrying", func() bool { return e.reps[0].ch.State() == engine.StateRetrying })
	e.start(1, o)
	e.eventually(15*time.Second, "the working replica connected", func() bool {
		return e.reps[1].ch.State() == engine.StateConnected && e.fake.Sessions() == 1
	})
	id := e.Ask(fmt.Sprintf(oneQuestion, "handover-1"))
	p := e.shown(id)[0]
	e.click(e.alice, p.ID, buttonIDs(p)[0])
	if r := e.Result(id, 5*time.Second); r.Status != askbridge.StatusAnswered {
		t.Errorf("result %+v", r)
	}
}

// TestHeartbeatsAreAcknowledged: with a short heartbeat interval the session
// stays up (discordgo reconnects after five unacknowledged intervals).
func TestHeartbeatsAreAcknowledged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{replicas: 1, fake: discordtest.Options{HeartbeatInterval: 100 * time.Millisecond}})
	e.waitGateway()
	// Ten intervals: twice what discordgo waits for an acknowledgement
	// before it gives a session up.
	e.eventually(10*time.Second, "10 heartbeats", func() bool { return e.fake.Heartbeats() >= 10 })
	identifies, resumes, _ := e.fake.GatewayStats()
	if identifies != 1 || resumes != 0 || e.reps[0].ch.State() != engine.StateConnected {
		t.Errorf("%d identifies, %d resumes, state %s: the session did not stay up", identifies, resumes, e.reps[0].ch.State())
	}
}
