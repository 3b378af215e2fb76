package telegram

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/time/rate"
)

// pacer spaces the messages (sends and edits) of one replica with token
// buckets that are independent of each other: one per chat (one message
// per chatPace, in bursts of up to chatBurst), one more per group (one per
// groupFactor×chatPace, in bursts of up to groupBurst), and one for the
// whole replica (one per globalPace, in bursts of up to globalBurst, at
// most a second's worth).
// Nobody is turned away: a burst is delivered late, never dropped.
//
// A message takes its tokens one bucket after the other, the narrowest
// first, and asks the next bucket only once the one before let it go: a
// message waiting for its chat holds no token of the replica's bucket, so
// it never delays another chat (no head-of-line blocking), and the status
// edit right after a fast tap goes out at once within the chat's burst.
//
// While a 429's retry_after runs nothing is sent at all. A 429 also halves
// the rate of every chat (down to 1/maxSlowdown of the configured one; a
// group's 20 a minute stays, as Telegram documents it) and takes away the
// bursts of the chats and of the replica, and every calmPeriod without a
// 429 doubles the rate back (the bursts return with the full rate, except
// to a chat that got a 429 itself: it has shown it takes none): replicas
// that share a bot's budget without knowing of each other settle at what
// Telegram lets a chat take instead of running into the limit again and
// again. (Most 429s are a chat's limit; the bot's overall rate is not
// slowed, only its burst taken away.)
//
// Every wait goes through clock, so tests drive the pacer with a simulated
// one.
type pacer struct {
	clock       clockwork.Clock
	chatPace    time.Duration
	global      *rate.Limiter
	globalBurst int

	mu          sync.Mutex
	slow        int // the chats' pace is chatPace × slow
	chats       map[string]*chatLimits
	pausedTill  time.Time
	lastLimited time.Time
}

// chatLimits are the buckets of one chat, set to the slowdown slow.
type chatLimits struct {
	slow  int
	chat  *rate.Limiter
	group *rate.Limiter // nil for a private chat
	// noBurst: the chat got a 429, so it gets no burst any more.
	noBurst bool
	// heldTill: another replica got a 429 for this chat; nothing is sent
	// to it before then. Guarded by the pacer's mu.
	heldTill time.Time
}

const (
	// chatBurst is how many messages a chat may get at once. Telegram
	// (Bots FAQ): avoid more than one message per second in a chat; short
	// bursts are allowed. Three lets a prompt, the status edit after a fast
	// tap and a reply box go out without waiting.
	chatBurst = 3
	// groupFactor and groupBurst: Telegram (Bots FAQ) allows a bot no more
	// than 20 messages per minute in a group, so a group also has a bucket
	// of one message per 3 × chatPace (3 s by default), in bursts of up to
	// 20, as python-telegram-bot's AIORateLimiter paces groups.
	groupFactor = 3
	groupBurst  = 20
	// globalBurst is how many messages the replica may send at once, at
	// most a second's worth of GlobalPace. Telegram (Bots FAQ): about 30
	// messages per second overall; python-telegram-bot's AIORateLimiter
	// lets 30 go at once too.
	globalBurst = 30
	// Bounds of the slowdown after 429s.
	maxSlowdown = 16
	calmPeriod  = 10 * time.Second
	// maxChats is how many chats the pacer keeps buckets for before it
	// forgets those whose buckets are full again.
	maxChats = 1024
)

func newPacer(chatPace, globalPace time.Duration, clock clockwork.Clock) *pacer {
	burst := globalBurst
	if globalPace > 0 {
		burst = max(1, min(globalBurst, int(time.Second/globalPace)))
	}
	return &pacer{
		clock: clock, chatPace: chatPace, slow: 1,
		global: rate.NewLimiter(rate.Every(globalPace), burst), globalBurst: burst,
		chats: map[string]*chatLimits{},
	}
}

// groupChat reports whether chat is a group, supergroup or channel: a
// negative id, or the @username of a public one. Private chats have the
// user's (positive) id.
func groupChat(chat string) bool {
	id, err := strconv.ParseInt(chat, 10, 64)
	return err != nil || id < 0
}

// limits returns the buckets of chat, made or set to the slowdown now in
// force.
func (p *pacer) limits(chat string) *chatLimits {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if p.slow > 1 && now.Sub(p.lastLimited) > calmPeriod {
		p.slow /= 2
		p.lastLimited = now
		if p.slow == 1 {
			p.global.SetBurstAt(now, p.globalBurst)
		}
	}
	c := p.chats[chat]
	if c == nil {
		p.forget(now)
		c = &chatLimits{slow: p.slow, chat: rate.NewLimiter(p.chatRate(), p.chatBurst(false))}
		if groupChat(chat) {
			c.group = rate.NewLimiter(rate.Every(p.chatPace*groupFactor), groupBurst)
		}
		p.chats[chat] = c
	} else if c.slow != p.slow {
		c.slow = p.slow
		c.chat.SetLimitAt(now, p.chatRate())
		c.chat.SetBurstAt(now, p.chatBurst(c.noBurst))
	}
	return c
}

// chatRate is a chat's rate: one message per chatPace, slowed down after
// 429s. The caller holds p.mu.
func (p *pacer) chatRate() rate.Limit {
	return rate.Every(p.chatPace * time.Duration(p.slow))
}

// chatBurst is how many messages a chat may get at once: chatBurst, and
// none in a burst while a 429 slows the chats down (the chats' budget is
// smaller than thought, or shared) or once the chat itself got a 429
// (noBurst). The caller holds p.mu.
func (p *pacer) chatBurst(noBurst bool) int {
	if p.slow > 1 || noBurst {
		return 1
	}
	return chatBurst
}

// forget drops, once there are many, the chats whose buckets are full
// again: nothing is booked in them, and new buckets would be the same.
// The caller holds p.mu.
func (p *pacer) forget(now time.Time) {
	if len(p.chats) < maxChats {
		return
	}
	for k, c := range p.chats {
		if c.chat.TokensAt(now) >= float64(c.chat.Burst()) && (c.group == nil || c.group.TokensAt(now) >= groupBurst) && !c.heldTill.After(now) {
			delete(p.chats, k)
		}
	}
}

// paused reports until when a retry_after holds every send, if it does.
func (p *pacer) paused() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pausedTill, p.pausedTill.After(p.clock.Now())
}

// limited records a 429 a message to chat got: it holds every send of this
// replica for d (Telegram's 429 does not say whether the chat or the bot
// hit the limit, so the whole replica waits, as python-telegram-bot's
// AIORateLimiter does), slows every chat down, and takes the chat's burst
// away for as long as the pacer remembers the chat.
func (p *pacer) limited(chat string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if till := now.Add(d); till.After(p.pausedTill) {
		p.pausedTill = till
	}
	p.slow = min(p.slow*2, maxSlowdown)
	p.lastLimited = now
	p.global.SetBurstAt(now, 1)
	if c := p.chats[chat]; c != nil && !c.noBurst {
		c.noBurst = true
		c.chat.SetBurstAt(now, 1)
	}
}

// heard applies a 429 another replica got for chat: this replica holds
// its own sends to that chat for d, and only those. Its own 429s pause
// every send and slow every chat down (limited); a 429 heard of says the
// other replica's pace into that chat was too much, so holding that chat
// keeps the two from running into it in turn without the whole bot
// stopping on every replica at each 429. A limit that is the bot's gives
// this replica its own 429 soon enough.
func (p *pacer) heard(chat string, d time.Duration) {
	c := p.limits(chat)
	p.mu.Lock()
	defer p.mu.Unlock()
	if till := p.clock.Now().Add(d); till.After(c.heldTill) {
		c.heldTill = till
	}
}

// chatHeld reports until when a 429 heard of holds chat c, if it does.
func (p *pacer) chatHeld(c *chatLimits) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.heldTill, c.heldTill.After(p.clock.Now())
}

// wait blocks until chat may get its next message, or ctx is done: it
// waits out a pause, then takes a token of the group's bucket, of the
// chat's and of the replica's, each once the one before let it go. A
// message whose tokens came due while a pause began, or while a 429 heard
// of began to hold its chat, takes them again after it, so the messages
// held are spread out again. Safe for
// concurrent use.
func (p *pacer) wait(ctx context.Context, chat string) error {
	for {
		if till, held := p.paused(); held {
			if err := p.sleep(ctx, till.Sub(p.clock.Now())); err != nil {
				return err
			}
		}
		c := p.limits(chat)
		if till, held := p.chatHeld(c); held {
			if err := p.sleep(ctx, till.Sub(p.clock.Now())); err != nil {
				return err
			}
			continue
		}
		for _, lim := range []*rate.Limiter{c.group, c.chat, p.global} {
			if lim == nil {
				continue
			}
			if err := p.take(ctx, lim); err != nil {
				return err
			}
		}
		// A pause, or a 429 heard of for this chat, that began while the
		// tokens came due holds the message after all.
		if _, held := p.paused(); held {
			continue
		}
		if _, held := p.chatHeld(c); !held {
			return nil
		}
	}
}

// take reserves one token of lim and sleeps until it is due. When ctx ends
// first the token is given back, so the messages behind do not wait for it.
func (p *pacer) take(ctx context.Context, lim *rate.Limiter) error {
	now := p.clock.Now()
	r := lim.ReserveN(now, 1)
	if err := p.sleep(ctx, r.DelayFrom(now)); err != nil {
		r.CancelAt(p.clock.Now())
		return err
	}
	return nil
}

// sleep waits d on the pacer's clock, or until ctx is done.
func (p *pacer) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := p.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}
