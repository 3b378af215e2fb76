package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/store"
)

// alice is the person who answers.
var alice = telegramtest.User{ID: 1001, FirstName: "Alice", Username: "alice"}

// envOpts shape one scenario's world.
type envOpts struct {
	// redis is the address of a Redis the scenario started itself (empty:
	// a fresh redis-server of its own).
	redis string
	// proxy puts a tcpProxy between the replicas and Redis.
	proxy bool
	// chats is how many group chats the questions are spread over.
	chats int
	// sendBudget bounds one delivery (default 10 s).
	sendBudget time.Duration
}

// env is one scenario's world: Redis, the fake Telegram behind its front,
// an agent, people, and the replica processes.
type env struct {
	t      *testing.T
	fake   *telegramtest.Server
	front  *front
	proxy  *tcpProxy
	redis  string // what the test itself talks to
	rdb    *redis.Client
	check  *store.Store
	prefix string
	chats  []int64
	base   replicaConfig
	dir    string

	mu    sync.Mutex
	procs map[string]*proc // the running process of each replica
	all   []*proc
	gen   map[string]int
	// tappers are the people tapping, if any.
	tappers *people
}

var prefixSeq atomic.Int64

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	if o.chats == 0 {
		o.chats = 10
	}
	if o.sendBudget == 0 {
		o.sendBudget = 10 * time.Second
	}
	e := &env{t: t, dir: t.TempDir(), procs: map[string]*proc{}, gen: map[string]int{}}
	if d := os.Getenv("ASKBRIDGE_CHAOS_LOGS"); d != "" {
		// Keep the replicas' logs for a look after the run.
		e.dir = filepath.Join(d, t.Name())
		if err := os.MkdirAll(e.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.prefix = fmt.Sprintf("chaos%d:", prefixSeq.Add(1))
	e.redis = o.redis
	if e.redis == "" {
		srv, err := redistest.StartServer()
		if err != nil {
			// The suite runs replicas as processes on a real server; there
			// is nothing to fall back to.
			t.Fatalf("the chaos suite needs redis-server on the PATH: %v", err)
		}
		t.Cleanup(srv.Close)
		e.redis = srv.Addr
	}
	replicaRedis := e.redis
	if o.proxy {
		p, err := newProxy(e.redis)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		e.proxy = p
		replicaRedis = p.Addr()
	}
	e.fake = telegramtest.New(telegramtest.Options{})
	t.Cleanup(e.fake.Close)
	e.front = newFront(e.fake.URL)
	t.Cleanup(e.front.Close)
	for i := range o.chats {
		id := int64(-7000 - i)
		e.fake.AddChat(id, "group", fmt.Sprint("Team ", i))
		e.chats = append(e.chats, id)
	}
	e.rdb = redis.NewClient(&redis.Options{Addr: e.redis})
	t.Cleanup(func() { e.rdb.Close() })
	e.check = store.New(e.rdb, store.Options{Prefix: e.prefix, Consumer: "check"})
	level := slog.LevelWarn
	if os.Getenv("ASKBRIDGE_CHAOS_VERBOSE") == "1" {
		level = slog.LevelDebug
	}
	e.base = replicaConfig{
		Redis: replicaRedis, Prefix: e.prefix, TelegramURL: e.front.URL(), Token: e.fake.Token,
		ClaimIdle: 2 * time.Second, SendBudget: o.sendBudget,
		PollTimeout: 2 * time.Second, LeaseTTL: 1500 * time.Millisecond, RenewEvery: 300 * time.Millisecond,
		LogLevel: level,
	}
	// Registered last, so it runs first: the replicas stop before what
	// they use goes away.
	t.Cleanup(e.shutdown)
	return e
}

// shutdown stops every replica gracefully and reports one that did not
// stop cleanly (a data race found in a replica shows here too); when the
// test failed, it shows the end of every replica's log.
func (e *env) shutdown() {
	e.mu.Lock()
	procs := slices.Clone(e.all)
	e.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.stop(30 * time.Second) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			e.t.Error(err)
		}
	}
	if e.t.Failed() {
		for _, p := range procs {
			e.t.Logf("--- log of replica %s (last lines) ---\n%s", p.name, p.tail(40))
		}
	}
}

// start runs a new process of replica name (a restart when one ran
// before: a new process, with a new name, as a rescheduled container).
func (e *env) start(name string) *proc {
	e.t.Helper()
	p, err := e.spawn(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// spawn is start for any goroutine: it returns the error.
func (e *env) spawn(name string) (*proc, error) {
	e.mu.Lock()
	e.gen[name]++
	cfg := e.base
	cfg.Name = fmt.Sprintf("%s.%d", name, e.gen[name])
	e.mu.Unlock()
	p, err := spawn(cfg, e.dir)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.procs[name] = p
	e.all = append(e.all, p)
	e.mu.Unlock()
	return p, nil
}

// pace calls f(0), …, f(n-1), one at each tick of a ticker every span/n,
// and returns at the tick after the last: requests, taps and replies
// spread over span of real time, as agents and people spread theirs. The
// scenarios run in real time because the replicas are processes of their
// own on the real clock, which no simulated clock reaches.
func pace(span time.Duration, n int, f func(i int)) {
	tick := time.NewTicker(span / time.Duration(n))
	defer tick.Stop()
	for i := range n {
		f(i)
		<-tick.C
	}
}

// killer SIGKILLs a replica every interval and starts it again, until
// halted: pick names the replica to kill (its base name) given how many
// were killed so far.
type killer struct {
	stop  chan struct{}
	done  chan struct{}
	kills atomic.Int64
}

func (e *env) killEvery(interval time.Duration, pick func(kills int) string) *killer {
	k := &killer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-tick.C:
			}
			name := pick(int(k.kills.Load()))
			e.replica(name).kill()
			k.kills.Add(1)
			if _, err := e.spawn(name); err != nil {
				e.t.Error(err)
				return
			}
		}
	}()
	e.t.Cleanup(func() { k.halt() })
	return k
}

// halt stops the killing and returns how many kills there were. Safe to
// repeat.
func (k *killer) halt() int {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
	return int(k.kills.Load())
}

// replica returns the running process of replica name.
func (e *env) replica(name string) *proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.procs[name]
}

// byProcName finds the replica (its base name) whose process is named n.
func (e *env) byProcName(n string) (string, *proc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, p := range e.procs {
		if p.name == n {
			return name, p
		}
	}
	return "", nil
}

// poller returns the process name holding the poller lease, "" for none.
func (e *env) poller() string {
	key := fmt.Sprintf("%slease:{telegram:poll:%d}", e.prefix, e.fake.Bot.ID)
	h, err := e.rdb.HGet(context.Background(), key, "holder").Result()
	if err != nil {
		return ""
	}
	// The holder is the replica's name and a nonce of its hold.
	name, _, _ := strings.Cut(h, "#")
	return name
}

// waitPoller waits until a replica other than not (a process name) holds
// the poller lease and returns its process name.
func (e *env) waitPoller(not string) string {
	e.t.Helper()
	var h string
	e.eventually(20*time.Second, "a poller", func() bool {
		h = e.poller()
		return h != "" && h != not
	})
	return h
}

// eventually polls cond until it holds or within passes.
func (e *env) eventually(within time.Duration, what string, cond func() bool) {
	e.t.Helper()
	testwait.For(e.t, within, what, cond)
}

func (e *env) agent() agenttest.Agent { return agenttest.Agent{RDB: e.rdb, Prefix: e.prefix} }

// qid names question n.
func qid(n int) string { return fmt.Sprint("q-", n) }

const question = `{"id":%q,"to":"telegram:%d","timeoutSeconds":%d,"questions":[{"id":"pick","header":"Pick","question":"Question %d?","options":[{"label":"Left"},{"label":"Right"}]}]}`

// ask pushes question n to chat, as an agent does.
func (e *env) ask(n int, chat int64, timeoutSeconds int) string {
	e.t.Helper()
	return e.agent().Ask(e.t, fmt.Sprintf(question, qid(n), chat, timeoutSeconds, n))
}

// choice is what the person picks for question n.
func choice(n int) string { return []string{"Left", "Right"}[n%2] }

// chatOf is where question n is asked.
func (e *env) chatOf(n int) int64 { return e.chats[n%len(e.chats)] }

var questionRe = regexp.MustCompile(`Question (\d+)\?`)

// prompts returns every bot message showing a question, by question.
func (e *env) prompts() map[int][]telegramtest.Message {
	out := map[int][]telegramtest.Message{}
	for _, c := range e.chats {
		for _, m := range e.fake.BotMessages(c) {
			if g := questionRe.FindStringSubmatch(m.Text); g != nil {
				n, _ := strconv.Atoi(g[1])
				out[n] = append(out[n], m)
			}
		}
	}
	return out
}

// recorded reports whether the bridge has recorded message m (a person
// cannot tap a prompt before; a test can).
func (e *env) recorded(m telegramtest.Message) bool {
	ref := engine.MessageRef{Platform: "telegram", Chat: strconv.FormatInt(m.ChatID, 10), Message: strconv.Itoa(m.ID)}
	_, found, err := e.check.QuestionByMessage(context.Background(), ref)
	return err == nil && found
}

// anyRecorded reports whether the bridge has recorded any of ms.
func (e *env) anyRecorded(ms []telegramtest.Message) bool {
	for _, m := range ms {
		if e.recorded(m) {
			return true
		}
	}
	return false
}

// prompt waits until question n is shown and recorded and returns it.
func (e *env) prompt(n int) telegramtest.Message {
	e.t.Helper()
	var m telegramtest.Message
	e.eventually(20*time.Second, fmt.Sprintf("question %d shown", n), func() bool {
		ps := e.prompts()[n]
		if len(ps) == 0 || !e.recorded(ps[0]) {
			return false
		}
		m = ps[0]
		return true
	})
	return m
}

// tap presses label under m as alice and returns the callback query id.
func (e *env) tap(m telegramtest.Message, label string) string {
	e.t.Helper()
	q, err := e.fake.Tap(m.ChatID, m.ID, alice, label)
	if err != nil {
		e.t.Fatal(err)
	}
	return q
}

// notice waits for the answer to a callback query.
func (e *env) notice(query string, within time.Duration) telegramtest.Answer {
	e.t.Helper()
	var a telegramtest.Answer
	e.eventually(within, "the answer to callback query "+query, func() bool {
		var ok bool
		a, ok = e.fake.Answer(query)
		return ok
	})
	return a
}

// results returns how many results wait for question id, and the first.
func (e *env) results(id string) (int64, askbridge.Result, error) {
	ctx := context.Background()
	n, err := e.rdb.LLen(ctx, e.prefix+"result:{"+id+"}").Result()
	if err != nil || n == 0 {
		return n, askbridge.Result{}, err
	}
	raw, err := e.rdb.LIndex(ctx, e.prefix+"result:{"+id+"}", 0).Result()
	if err != nil {
		return n, askbridge.Result{}, err
	}
	var r askbridge.Result
	err = json.Unmarshal([]byte(raw), &r)
	return n, r, err
}

// ended waits until every question in ns has its result.
func (e *env) ended(ns []int, within time.Duration) {
	e.t.Helper()
	left := slices.Clone(ns)
	if !testwait.Until(within, func() bool {
		left = slices.DeleteFunc(left, func(n int) bool {
			c, _, err := e.results(qid(n))
			return err == nil && c > 0
		})
		return len(left) == 0
	}) {
		for _, n := range head(left, 5) {
			e.t.Log(e.describe(n))
		}
		e.t.Fatalf("after %s, %d questions have no result: %v", within, len(left), head(left, 20))
	}
}

// describe tells what became of question n, for a failure message.
func (e *env) describe(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "question %d:", n)
	rec, found, err := e.check.Get(context.Background(), qid(n))
	fmt.Fprintf(&b, " stored %v (status %q, err %v);", found, rec.Status, err)
	refs, err := e.check.Messages(context.Background(), qid(n))
	fmt.Fprintf(&b, " recorded messages %v (%v);", refs, err)
	for _, m := range e.prompts()[n] {
		fmt.Fprintf(&b, " shown as %d in chat %d (buttons %d, recorded %v);", m.ID, m.ChatID, len(m.Keyboard), e.recorded(m))
	}
	e.mu.Lock()
	p := e.tappers
	e.mu.Unlock()
	if p != nil {
		p.mu.Lock()
		qs := slices.Clone(p.queries[n])
		p.mu.Unlock()
		for _, q := range qs {
			a, ok := e.fake.Answer(q)
			fmt.Fprintf(&b, " tap %s answered %v %q;", q, ok, a.Text)
		}
	}
	for _, p := range e.procsSnapshot() {
		for _, l := range p.grep(qid(n) + " ") {
			fmt.Fprintf(&b, "\n  %s: %s", p.name, l)
		}
	}
	return b.String()
}

func (e *env) procsSnapshot() []*proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.all)
}

// answered checks that question n has exactly one result, answered with
// the person's choice.
func (e *env) answered(n int) {
	e.t.Helper()
	c, r, err := e.results(qid(n))
	switch {
	case err != nil:
		e.t.Errorf("question %d: %v", n, err)
	case c != 1:
		e.t.Errorf("question %d: %d results, want exactly 1", n, c)
	case r.Status != askbridge.StatusAnswered || r.Answers == nil || len(r.Answers.Answers["pick"]) != 1 || r.Answers.Answers["pick"][0] != choice(n):
		e.t.Errorf("question %d: result %+v, want answered %q", n, r, choice(n))
	}
}

// shownOnce checks that each question in ns was posted exactly once.
func (e *env) shownOnce(ns []int) {
	e.t.Helper()
	e.shownAtMost(ns, 0)
}

// shownAtMost checks that every question of ns was shown, and that at most
// twice questions were shown twice and none more often. A replica killed
// in the instant between the platform taking a prompt and the bridge
// recording it leaves a copy the next replica cannot know of (the Bot API
// has no idempotency key), so it posts the prompt again; the first copy is
// adopted when tapped and finished with the rest (noLiveButtons checks).
func (e *env) shownAtMost(ns []int, twice int) {
	e.t.Helper()
	ps := e.prompts()
	doubled := 0
	for _, n := range ns {
		got := len(ps[n])
		if got == 2 && doubled < twice {
			doubled++
			e.t.Logf("question %d shown twice (a replica was killed between posting and recording it)", n)
			continue
		}
		if got != 1 {
			var ids []string
			for _, m := range ps[n] {
				ids = append(ids, fmt.Sprintf("%d in chat %d (recorded %v)", m.ID, m.ChatID, e.recorded(m)))
			}
			e.t.Errorf("question %d shown %d times, want once: %s", n, got, strings.Join(ids, ", "))
		}
	}
}

// noLiveButtons waits until no bot message in any chat has buttons.
func (e *env) noLiveButtons(within time.Duration) {
	e.t.Helper()
	var live []string
	if !testwait.Until(within, func() bool {
		live = nil
		for _, c := range e.chats {
			for _, m := range e.fake.BotMessages(c) {
				if len(m.Keyboard) > 0 {
					live = append(live, fmt.Sprintf("%d/%d %q", c, m.ID, m.Text))
				}
			}
		}
		return len(live) == 0
	}) {
		e.t.Errorf("after %s, %d messages still have buttons: %v", within, len(live), head(live, 10))
	}
}

// stopAll stops every replica gracefully: after it nothing can push
// another result, so counts read then are final.
func (e *env) stopAll() {
	e.t.Helper()
	e.mu.Lock()
	procs := slices.Clone(e.all)
	e.mu.Unlock()
	for _, p := range procs {
		if err := p.stop(30 * time.Second); err != nil {
			e.t.Error(err)
		}
	}
}

func head[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// people tap every question as it appears: the first copy of its prompt,
// once the bridge has recorded it, with the question's choice. A tap told
// to try again is tapped again, as a person would.
type people struct {
	e    *env
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	queries map[int][]string // question → its taps' callback query ids
	retried int
}

func (e *env) people() *people {
	p := &people{e: e, stop: make(chan struct{}), done: make(chan struct{}), queries: map[int][]string{}}
	e.mu.Lock()
	e.tappers = p
	e.mu.Unlock()
	go p.run()
	e.t.Cleanup(p.halt)
	return p
}

func (p *people) run() {
	defer close(p.done)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		for n, ms := range p.e.prompts() {
			m := ms[0]
			if len(m.Keyboard) == 0 {
				continue
			}
			p.mu.Lock()
			qs := p.queries[n]
			p.mu.Unlock()
			if len(qs) > 0 {
				a, ok := p.e.fake.Answer(qs[len(qs)-1])
				if !ok || a.Text != en(engine.NoticeTryAgain) {
					continue
				}
				p.mu.Lock()
				p.retried++
				p.mu.Unlock()
			}
			// A person taps the first copy they see; a test waits until
			// some copy is recorded, as a tap cannot beat the recording
			// at human speed. (A copy a killed replica posted and never
			// recorded is the first copy when the prompt was posted again:
			// the bridge adopts it on the tap.)
			if !p.e.anyRecorded(ms) {
				continue
			}
			q, err := p.e.fake.Tap(m.ChatID, m.ID, alice, choice(n))
			if err != nil {
				continue // the message changed under us; the next round sees it
			}
			p.mu.Lock()
			p.queries[n] = append(p.queries[n], q)
			p.mu.Unlock()
		}
	}
}

// halt stops tapping. Safe to repeat.
func (p *people) halt() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// taps returns how many taps were made and how many of them were a try
// again after "try again".
func (p *people) taps() (taps, retried int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, qs := range p.queries {
		taps += len(qs)
	}
	return taps, p.retried
}

// unanswered lists the taps whose callback query was never answered.
func (p *people) unanswered() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for n, qs := range p.queries {
		for _, q := range qs {
			if _, ok := p.e.fake.Answer(q); !ok {
				out = append(out, fmt.Sprintf("question %d tap %s", n, q))
			}
		}
	}
	slices.Sort(out)
	return out
}

// seq returns 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// en is notice n as a person reads it in English, the language of the
// suite's requests.
func en(n engine.Notice) string { return n.Text(locale.Default) }
