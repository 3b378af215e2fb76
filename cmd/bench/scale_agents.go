package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// scaleAgentTimeout is the timeout of the agents' questions: one the page
// person failed to answer ends by itself well within the run.
const scaleAgentTimeout = 120

// scalePerson answers the agents' questions on the web page of whichever
// replica is up, as a person behind a load balancer would: one event
// stream (GET api/events) open on one replica, moved to another with
// Last-Event-ID when that one dies, and each answer POSTed to the next
// replica round robin, again to another when a replica does not answer.
// The page drops a stream that falls 256 events behind and replays at most
// 1,000 on reconnect (the intake of the pending questions sends thousands
// a second), then reloads its list: the person likewise answers a
// question whose delivery it did not see once it has waited scaleLook
// (a 404, not on the page yet, puts it back).
type scalePerson struct {
	set    *replicaSet
	client *http.Client
	work   chan string

	mu sync.Mutex
	// want holds the questions to answer, with when each was expected.
	want map[string]time.Time

	// won counts answers taken (200), refused answers not (409, others);
	// unseen counts the tries of questions whose delivered event the
	// person did not see.
	won, unseen, refused, reconnects atomic.Int64
	wg                               sync.WaitGroup
	cancel                           context.CancelFunc
	// opened is closed once the first event stream is open.
	opened   chan struct{}
	openOnce sync.Once
}

// startScalePerson starts the person and returns once its event stream is
// open, so every question delivered after it is seen.
func startScalePerson(ctx context.Context, set *replicaSet, workers int) (*scalePerson, error) {
	ctx, cancel := context.WithCancel(ctx)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers + 4
	p := &scalePerson{set: set, client: &http.Client{Transport: tr}, work: make(chan string, 1<<14), want: map[string]time.Time{}, cancel: cancel, opened: make(chan struct{})}
	p.wg.Add(2 + workers)
	go func() {
		defer p.wg.Done()
		p.listen(ctx)
	}()
	go func() {
		defer p.wg.Done()
		p.look(ctx)
	}()
	for range workers {
		go func() {
			defer p.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case id := <-p.work:
					switch p.answer(ctx, id) {
					case http.StatusOK:
						p.won.Add(1)
					case http.StatusNotFound:
						p.expect(id)
					default:
						p.refused.Add(1)
					}
				}
			}
		}()
	}
	select {
	case <-p.opened:
		return p, nil
	case <-time.After(10 * time.Second):
		p.Close()
		return nil, fmt.Errorf("bench: no replica's page event stream opened within 10s")
	}
}

func (p *scalePerson) expect(id string) {
	p.mu.Lock()
	p.want[id] = time.Now()
	p.mu.Unlock()
}

// scaleLook is how long the person waits for a question's delivered event
// before looking for it on the page.
const scaleLook = 3 * time.Second

// look answers, every half second, the questions expected scaleLook ago
// or more whose delivery the person did not see.
func (p *scalePerson) look(ctx context.Context) {
	for sleep(ctx, 500*time.Millisecond) {
		var due []string
		p.mu.Lock()
		for id, at := range p.want {
			if time.Since(at) >= scaleLook {
				due = append(due, id)
				delete(p.want, id)
			}
		}
		p.mu.Unlock()
		for _, id := range due {
			p.unseen.Add(1)
			p.work <- id
		}
	}
}

func (p *scalePerson) Close() {
	p.cancel()
	p.wg.Wait()
	p.client.CloseIdleConnections()
}

// listen keeps an event stream open on some replica up.
func (p *scalePerson) listen(ctx context.Context) {
	last, addr := "", ""
	for ctx.Err() == nil {
		addr = p.set.pick(addr)
		if addr != "" {
			_ = p.stream(ctx, addr, &last)
			p.reconnects.Add(1)
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

func (p *scalePerson) stream(ctx context.Context, addr string, last *string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/events", nil)
	if err != nil {
		return err
	}
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("page events: %s", resp.Status)
	}
	p.openOnce.Do(func() { close(p.opened) })
	return readDelivered(resp.Body, last, func(id string) {
		p.mu.Lock()
		_, mine := p.want[id]
		delete(p.want, id)
		p.mu.Unlock()
		if mine {
			p.work <- id
		}
	})
}

// answer clicks "Yes" on question id, on the next replica up; it tries up
// to five replicas while they do not answer (killed) or answer 5xx. It
// returns the last status (0 when no replica answered).
func (p *scalePerson) answer(ctx context.Context, id string) int {
	addr := ""
	for range 5 {
		addr = p.set.pick(addr)
		if addr == "" {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/questions/"+id+"/answer",
			strings.NewReader(`{"answers":{"pick":["Yes"]}}`))
		if err != nil {
			return 0
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := p.client.Do(req)
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		return resp.StatusCode
	}
	return 0
}

// scaleAgents ask web questions at a steady rate and wait for each
// result, as agents do (XADD, BLPOP), on the Cluster.
type scaleAgents struct {
	rdb    *redis.ClusterClient
	person *scalePerson

	mu  sync.Mutex
	ids []string
	// answered: ended answered; timedOut: ended by their deadline (the
	// person missed them); other: ended otherwise; lost: no result within
	// the timeout and a minute.
	asked, answered, timedOut, other, lost atomic.Int64
	errs                                   atomic.Int64
	wg                                     sync.WaitGroup
}

// run asks rate questions a second until ctx is done, then waits for the
// results of those asked.
func (a *scaleAgents) run(ctx context.Context, rate float64) {
	every := time.Duration(float64(time.Second) / rate)
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			a.wg.Wait()
			return
		case <-t.C:
		}
		id := fmt.Sprintf("agent-%07d", n)
		a.mu.Lock()
		a.ids = append(a.ids, id)
		a.mu.Unlock()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.one(id)
		}()
	}
}

// one asks question id and waits for its result. It uses a context of its
// own: a question asked is waited for to its end even after the run
// stopped asking.
func (a *scaleAgents) one(id string) {
	ctx := context.Background()
	a.person.expect(id)
	a.asked.Add(1)
	if err := a.rdb.XAdd(ctx, xadd(id, "web", scaleAgentTimeout)).Err(); err != nil {
		a.errs.Add(1)
		return
	}
	v, err := a.rdb.BLPop(ctx, (scaleAgentTimeout+60)*time.Second, resultKey(id)).Result()
	if err != nil {
		a.lost.Add(1)
		return
	}
	var r askbridge.Result
	switch {
	case json.Unmarshal([]byte(v[1]), &r) != nil:
		a.other.Add(1)
	case r.Status == askbridge.StatusAnswered:
		a.answered.Add(1)
	case r.Reason == askbridge.ReasonTimeout:
		a.timedOut.Add(1)
	default:
		a.other.Add(1)
	}
}

// asked is every id asked so far.
func (a *scaleAgents) askedIDs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}
