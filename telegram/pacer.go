package telegram

import (
	"context"
	"sync"
	"time"
)

// pacer spaces the messages of one replica: at least chatGap between two to
// one chat and globalGap between any two, and nothing at all while a 429's
// retry_after runs. Callers reserve a slot and sleep until it; nobody is
// turned away, so a burst is delivered late, never dropped.
//
// A 429 also doubles the gap between messages to one chat (up to
// maxSlowdown times the configured one), and every calmPeriod without a 429
// halves it back: replicas that share a bot's budget without knowing of each
// other settle at what Telegram lets a chat take instead of running into the
// limit again and again. (Most 429s are a chat's limit; the bot's overall
// limit is honoured by the pause alone.)
type pacer struct {
	baseChat  time.Duration
	globalGap time.Duration
	now       func() time.Time

	mu          sync.Mutex
	chatGap     time.Duration
	globalNext  time.Time
	chatNext    map[string]time.Time
	pausedTill  time.Time
	lastLimited time.Time
}

// Bounds of the slowdown after 429s.
const (
	maxSlowdown = 16
	calmPeriod  = 10 * time.Second
)

func newPacer(chatGap, globalGap time.Duration) *pacer {
	return &pacer{
		baseChat: chatGap, chatGap: chatGap, globalGap: globalGap,
		now: time.Now, chatNext: map[string]time.Time{},
	}
}

// reserve books the next slot for chat and returns when it starts.
func (p *pacer) reserve(chat string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.chatGap > p.baseChat && now.Sub(p.lastLimited) > calmPeriod {
		p.chatGap = max(p.chatGap/2, p.baseChat)
		p.lastLimited = now
	}
	t := now
	for _, next := range []time.Time{p.globalNext, p.chatNext[chat], p.pausedTill} {
		if next.After(t) {
			t = next
		}
	}
	p.globalNext = t.Add(p.globalGap)
	p.chatNext[chat] = t.Add(p.chatGap)
	// Forget chats whose slot has passed, so the map stays small.
	if len(p.chatNext) > 1024 {
		for c, next := range p.chatNext {
			if next.Before(now) {
				delete(p.chatNext, c)
			}
		}
	}
	return t
}

// paused reports until when a retry_after holds every send, if it does.
func (p *pacer) paused() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pausedTill, p.pausedTill.After(p.now())
}

// pause holds every send of this replica for d. Telegram's 429 does not say
// whether the chat or the bot hit the limit, so the whole replica waits (as
// python-telegram-bot's AIORateLimiter does).
func (p *pacer) pause(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if till := now.Add(d); till.After(p.pausedTill) {
		p.pausedTill = till
	}
	p.chatGap = min(p.chatGap*2, p.baseChat*maxSlowdown)
	p.lastLimited = now
}

// wait blocks until chat may get its next message, or ctx is done. A
// slot reserved before a pause began is booked again after it.
func (p *pacer) wait(ctx context.Context, chat string) error {
	for {
		at := p.reserve(chat)
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if _, held := p.paused(); !held {
			return nil
		}
	}
}
