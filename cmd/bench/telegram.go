package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/telegramtest"
)

// chatCalls hands each watched chat's Bot API calls to its own channel.
type chatCalls struct {
	ch   map[int64]chan tgCall
	stop func()
}

func (w *world) watchChats(chats ...int64) *chatCalls {
	c := &chatCalls{ch: map[int64]chan tgCall{}}
	for _, id := range chats {
		c.ch[id] = make(chan tgCall, 256)
	}
	c.stop = w.front.watch(func(call tgCall) {
		if ch, ok := c.ch[call.Chat]; ok {
			select {
			case ch <- call:
			default: // nobody reads it; the phase has failed already
			}
		}
	})
	return c
}

// waitCall waits for a call of method on ch (to message msg when msg > 0).
func waitCall(ctx context.Context, ch <-chan tgCall, within time.Duration, msg int, methods ...string) (tgCall, error) {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		select {
		case c := <-ch:
			for _, m := range methods {
				if c.Method == m && (msg == 0 || c.Message == msg) {
					return c, nil
				}
			}
		case <-t.C:
			return tgCall{}, fmt.Errorf("no %v within %s", methods, within)
		case <-ctx.Done():
			return tgCall{}, ctx.Err()
		}
	}
}

var edits = []string{"editmessagetext", "editmessagereplymarkup"}

// retapAfter is how long a person waits for a tap to take effect before
// looking at what the bot answered.
const retapAfter = time.Second

// headOfLine asks three questions in chat A and, once the first is out, one
// in chat B, and measures B's request → sendMessage. Then it cancels all
// four and waits for their edits, so the next phase finds the pacing idle.
func (w *world) headOfLine(ctx context.Context, m *measured) error {
	calls := w.watchChats(chatHOLA, chatHOLB)
	defer calls.stop()
	a, b := fmt.Sprint("telegram:", chatHOLA), fmt.Sprint("telegram:", chatHOLB)
	ids := []string{"hol-a-1", "hol-a-2", "hol-a-3", "hol-b"}
	pipe := w.rdb.Pipeline()
	for _, id := range ids[:3] {
		pipe.XAdd(ctx, xadd(id, a, answerTimeout))
	}
	t0 := time.Now()
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	first, err := waitCall(ctx, calls.ch[chatHOLA], 30*time.Second, 0, "sendmessage")
	if err != nil {
		return fmt.Errorf("chat A: %w", err)
	}
	m.holA = append(m.holA, first.At.Sub(t0))
	m.holSent++
	sleep(ctx, 20*time.Millisecond)
	tb := time.Now()
	if err := ask(ctx, w.rdb, ids[3], b, answerTimeout); err != nil {
		return err
	}
	sb, err := waitCall(ctx, calls.ch[chatHOLB], time.Minute, 0, "sendmessage")
	if err != nil {
		return fmt.Errorf("chat B: %w", err)
	}
	m.hol = sb.At.Sub(tb)
	m.holSent++
	for range 2 {
		c, err := waitCall(ctx, calls.ch[chatHOLA], 30*time.Second, 0, "sendmessage")
		if err != nil {
			return fmt.Errorf("chat A: %w", err)
		}
		m.holA = append(m.holA, c.At.Sub(t0))
		m.holSent++
	}
	w.logf("head of line: chat B's sendMessage %s after its request (chat A's at %v)", sb.At.Sub(tb).Round(time.Millisecond), roundAll(m.holA))

	// Cancel all four; each prompt is edited to say so.
	for _, id := range ids {
		if err := w.rdb.XAdd(ctx, xaddCancel(id)).Err(); err != nil {
			return err
		}
	}
	for _, id := range ids {
		r, err := result(ctx, w.rdb, id, time.Minute)
		if err != nil {
			return err
		}
		if r.Reason != askbridge.ReasonCancelled {
			return fmt.Errorf("%s ended %s/%s, not cancelled", id, r.Status, r.Reason)
		}
	}
	for chat, n := range map[int64]int{chatHOLA: 3, chatHOLB: 1} {
		for range n {
			if _, err := waitCall(ctx, calls.ch[chat], 30*time.Second, 0, edits...); err != nil {
				return fmt.Errorf("cancel edits in %d: %w", chat, err)
			}
		}
	}
	m.counts.HOLSent = m.holSent
	extra, err := leftover(ctx, w.rdb, ids)
	m.counts.Extra += extra
	return err
}

// tgSample is one tapped question's timing.
type tgSample struct {
	// send is request (XADD) → sendMessage; answer is tap → the agent's
	// BLPOP returns; edit is tap → editMessageText; tapAfter is how long
	// after the sendMessage the tap came.
	send, answer, edit, tapAfter time.Duration
}

// tapOne asks question id in chat, taps "Yes" think after the prompt is
// out, waits for the result as the agent and for the prompt's edit.
func (w *world) tapOne(ctx context.Context, chat int64, ch <-chan tgCall, id string, think time.Duration) (tgSample, error) {
	var s tgSample
	t0 := time.Now()
	if err := ask(ctx, w.rdb, id, fmt.Sprint("telegram:", chat), answerTimeout); err != nil {
		return s, err
	}
	sent, err := waitCall(ctx, ch, time.Minute, 0, "sendmessage")
	if err != nil {
		return s, fmt.Errorf("%s: %w", id, err)
	}
	s.send = sent.At.Sub(t0)
	if think > 0 && !sleep(ctx, think) {
		return s, ctx.Err()
	}
	tap := time.Now()
	s.tapAfter = tap.Sub(sent.At)
	person := telegramtest.User{ID: chat, FirstName: "Person"}
	query, err := w.fake.Tap(chat, sent.Message, person, "Yes")
	if err != nil {
		return s, err
	}
	var r askbridge.Result
	giveUp := tap.Add(time.Minute)
	for {
		if r, err = result(ctx, w.rdb, id, retapAfter); err == nil {
			break
		}
		if !errors.Is(err, redis.Nil) || time.Now().After(giveUp) {
			return s, err
		}
		// The bridge answered the tap without ending the question (it
		// told the person the button is unknown): a person taps again.
		if a, answered := w.fake.Answer(query); answered {
			if w.retaps.Add(1) == 1 {
				w.logf("a tap on %s was answered %q and did not end the question; tapping again", id, a.Text)
			}
			if query, err = w.fake.Tap(chat, sent.Message, person, "Yes"); err != nil {
				return s, err
			}
		}
	}
	s.answer = time.Since(tap)
	if r.Status != askbridge.StatusAnswered {
		return s, fmt.Errorf("%s ended %s/%s, not answered", id, r.Status, r.Reason)
	}
	ed, err := waitCall(ctx, ch, time.Minute, sent.Message, edits...)
	if err != nil {
		return s, fmt.Errorf("%s: %w", id, err)
	}
	s.edit = ed.At.Sub(tap)
	return s, nil
}

// quickPerson is how long after the prompt a quick person taps. (The
// saturated phase taps at once, which also finds taps that reach the
// bridge before it has recorded the prompt.)
const quickPerson = 200 * time.Millisecond

// telegramLatency asks one question at a time, each in the next of a few
// chats, with the bridge otherwise idle; a quick person taps each.
func (w *world) telegramLatency(ctx context.Context, m *measured) error {
	chats := make([]int64, latencyChats)
	for i := range chats {
		chats[i] = chatLatency + int64(i)
	}
	calls := w.watchChats(chats...)
	defer calls.stop()
	var ids []string
	end := time.Now().Add(w.p.tgLatencyFor)
	for i := 0; i < w.p.tgLatencyMax && (i < 3 || time.Now().Before(end)); i++ {
		chat := chats[i%len(chats)]
		id := fmt.Sprintf("tl-%d", i)
		ids = append(ids, id)
		m.counts.TelegramAsked++
		s, err := w.tapOne(ctx, chat, calls.ch[chat], id, quickPerson)
		if err != nil {
			return err
		}
		m.counts.TelegramAnswered++
		m.tgLat = append(m.tgLat, s)
		// Past the bot's overall pace, so the next send waits for nothing.
		sleep(ctx, 50*time.Millisecond)
	}
	extra, err := leftover(ctx, w.rdb, ids)
	m.counts.Extra += extra
	return err
}

// satResult is a saturated phase: answered questions and what they cost.
type satResult struct {
	workers  int
	answered int
	elapsed  time.Duration
	cpu      time.Duration
	redis    perQuestion
	// wakeups is the bridge's voluntary context switches over the phase
	// (proc.wakeups); -1 where they are not counted.
	wakeups int64
}

// wakeupsPer is the bridge's wake-ups per answered question; NaN where
// none was counted.
func (s satResult) wakeupsPer() float64 {
	if s.answered == 0 || s.wakeups < 0 {
		return nan()
	}
	return float64(s.wakeups) / float64(s.answered)
}

func (s satResult) qps() float64 { return float64(s.answered) / s.elapsed.Seconds() }

func (s satResult) cpuPer() time.Duration {
	if s.answered == 0 {
		return -1
	}
	return s.cpu / time.Duration(s.answered)
}

// telegramSaturated has one person per chat in tgChats chats tap every
// question the moment it is out, for tgSatFor, and measures the bridge's
// CPU and Redis work per answered question.
func (w *world) telegramSaturated(ctx context.Context, m *measured) error {
	chats := make([]int64, w.p.tgChats)
	for i := range chats {
		chats[i] = chatSat + int64(i)
	}
	calls := w.watchChats(chats...)
	defer calls.stop()
	s0, err := snapshot(ctx, w.admin)
	if err != nil {
		return err
	}
	cpu0, err := w.bridge.cpu()
	if err != nil {
		return err
	}
	wake0, wakeErr := w.bridge.wakeups()
	prof := w.profile(ctx, "telegram", w.p.tgSatFor)
	start := time.Now()
	end := start.Add(w.p.tgSatFor)
	var answered atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, len(chats))
	idsOf := make([][]string, len(chats))
	for i, chat := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				id := fmt.Sprintf("ts-%d-%d", chat, n)
				idsOf[i] = append(idsOf[i], id)
				if _, err := w.tapOne(ctx, chat, calls.ch[chat], id, 0); err != nil {
					errs[i] = err
					return
				}
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := w.bridge.cpu()
	if err != nil {
		return err
	}
	wake1, err := w.bridge.wakeups()
	wakeups := wake1 - wake0
	if err != nil || wakeErr != nil {
		wakeups = -1
	}
	s1, err := snapshot(ctx, w.admin)
	if err != nil {
		return err
	}
	var ids []string
	for _, l := range idsOf {
		ids = append(ids, l...)
	}
	m.counts.TelegramAsked += len(ids)
	m.counts.TelegramAnswered += int(answered.Load())
	r := satResult{workers: len(chats), answered: int(answered.Load()), elapsed: elapsed, cpu: cpu1 - cpu0, wakeups: wakeups}
	r.redis = redisPer(s0, s1, r.answered)
	m.tgSat = r
	w.logf("telegram saturated: %d answered in %s (%.0f/s), CPU %s per question, %.1f wake-ups, %.1f Redis commands, %.1f round trips (commands: %s)",
		r.answered, elapsed.Round(time.Millisecond), r.qps(), r.cpuPer(), r.wakeupsPer(), r.redis.cmds, r.redis.trips, r.redis.top)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if err := prof(); err != nil {
		return err
	}
	extra, err := leftover(ctx, w.rdb, ids)
	m.counts.Extra += extra
	return err
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
