package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// webPerson answers on the bridge's web page the way the page does: it
// keeps the page's event stream open (GET api/events) and, when a question
// it was told to expect is delivered, posts the answer (POST
// api/questions/{id}/answer). It answers nothing else, so questions left
// pending by other phases stay pending.
type webPerson struct {
	base   string
	client *http.Client
	work   chan string

	mu   sync.Mutex
	want map[string]bool

	// won counts answers the page accepted (200); refused counts any other
	// reply (an answer refused or failed); reconnects counts event
	// streams the bridge ended (it drops a page that falls behind).
	won, refused, reconnects atomic.Int64

	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// startWebPerson opens the page's event stream on the bridge at addr and
// starts workers that post answers. It returns once the stream is open, so
// every question delivered after it is seen.
func startWebPerson(ctx context.Context, addr string, workers int) (*webPerson, error) {
	ctx, cancel := context.WithCancel(ctx)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers + 4
	p := &webPerson{
		base: "http://" + addr + "/", client: &http.Client{Transport: tr},
		work: make(chan string, 1<<16), want: map[string]bool{}, cancel: cancel,
	}
	opened := make(chan error, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.listen(ctx, opened)
	}()
	select {
	case err := <-opened:
		if err != nil {
			p.Close()
			return nil, err
		}
	case <-time.After(10 * time.Second):
		p.Close()
		return nil, fmt.Errorf("bench: the page's event stream did not open")
	}
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.answerLoop(ctx)
		}()
	}
	return p, nil
}

// expect tells the person to answer question id once it is delivered.
func (p *webPerson) expect(id string) {
	p.mu.Lock()
	p.want[id] = true
	p.mu.Unlock()
}

// Close stops the stream and the workers.
func (p *webPerson) Close() {
	p.cancel()
	p.wg.Wait()
	p.client.CloseIdleConnections()
}

// listen reads the event stream, reconnecting after the last event id it
// saw when the bridge ends it.
func (p *webPerson) listen(ctx context.Context, opened chan<- error) {
	last := ""
	first := true
	for ctx.Err() == nil {
		err := p.stream(ctx, &last, func() {
			if first {
				first = false
				opened <- nil
			}
		})
		if first {
			opened <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		p.reconnects.Add(1)
		sleep(ctx, 20*time.Millisecond)
	}
}

func (p *webPerson) stream(ctx context.Context, last *string, open func()) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"api/events", nil)
	if err != nil {
		return err
	}
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("bench: page events: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bench: page events: %s", resp.Status)
	}
	open()
	return readDelivered(resp.Body, last, func(id string) {
		p.mu.Lock()
		mine := p.want[id]
		delete(p.want, id)
		p.mu.Unlock()
		if mine {
			p.work <- id
		}
	})
}

// readDelivered reads the page's event stream (GET api/events) until it
// fails, keeping the last event id in *last (for Last-Event-ID) and calling
// delivered with the question id of each delivered event.
func readDelivered(body io.Reader, last *string, delivered func(id string)) error {
	r := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\n")
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			*last = id
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !strings.Contains(data, `"delivered"`) {
			continue
		}
		var ev struct {
			Event string `json:"event"`
			ID    string `json:"id"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Event == "delivered" {
			delivered(ev.ID)
		}
	}
}

func (p *webPerson) answerLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-p.work:
			if p.answer(ctx, id) {
				p.won.Add(1)
			} else {
				p.refused.Add(1)
			}
		}
	}
}

// answer clicks "Yes" on question id.
func (p *webPerson) answer(ctx context.Context, id string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"api/questions/"+id+"/answer",
		strings.NewReader(`{"answers":{"pick":["Yes"]}}`))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
