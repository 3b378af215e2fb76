package discord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/askbridge/askbridge"
)

// Gateway close codes that retrying soon cannot fix
// (discord-api-docs, topics/opcodes-and-status-codes.mdx).
const (
	closeAuthenticationFailed = 4004
	closeInvalidIntents       = 4013
	closeDisallowedIntents    = 4014
)

// errHandOver ends a gateway attempt that kept failing on this replica, so
// another replica (perhaps with a working network path) can take over.
var errHandOver = errors.New("discord: the gateway keeps failing here; handing the lease over")

// maxOpenFailures is how many connects in a row may fail before the lease
// is handed over.
const maxOpenFailures = 5

// errBadCredentials ends a gateway attempt that Discord refused for the
// token or the intents.
var errBadCredentials = errors.New("discord: bad credentials")

// leaseName names the gateway lease by application id, never by token.
func (c *Channel) leaseName() string { return "discord:gateway:" + c.appIDValue() }

func (c *Channel) appIDValue() string {
	id, _ := c.appID.Load().(string)
	return id
}

// Run keeps one gateway session per bot token across replicas: it takes the
// gateway lease, connects, renews the lease, and hands button presses and
// messages to in; without the lease it stands by (sending still works) and
// takes over when the holder dies. It owns every reconnect, with backoff,
// and returns only when ctx is done, after its event handlers finished. A
// refused token puts the channel in "bad credentials" and is retried
// slowly. Call it once.
func (c *Channel) Run(ctx context.Context, in askbridge.Inbox) error {
	handlers := &tracker{}
	defer handlers.close()
	bo := newBackoff(c.cfg.RetryMin, c.cfg.RetryMax)
	for ctx.Err() == nil {
		if err := c.identify(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, errBadCredentials) {
				c.badCredentials(ctx, err)
				continue
			}
			c.setState(askbridge.StateRetrying)
			c.log.Warn("discord: read the bot user", "err", err)
			sleep(ctx, bo.next())
			continue
		}
		lease, ok, err := c.store.AcquireLease(ctx, c.leaseName(), c.cfg.Replica, c.cfg.LeaseTTL)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			c.setState(askbridge.StateRetrying)
			c.log.Warn("discord: acquire gateway lease", "err", err)
			sleep(ctx, bo.next())
			continue
		}
		if !ok {
			c.setState(askbridge.StateStandby)
			sleep(ctx, c.cfg.StandbyPoll)
			continue
		}
		bo.reset()
		c.log.Info("discord: holding the gateway lease", "lease", lease.Name, "fence", lease.Token)
		err = c.holdGateway(ctx, lease, in, handlers)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		if rerr := c.store.ReleaseLease(rctx, lease); rerr != nil {
			c.log.Warn("discord: release gateway lease", "err", rerr)
		}
		cancel()
		switch {
		case errors.Is(err, errBadCredentials):
			c.badCredentials(ctx, err)
		case errors.Is(err, errHandOver):
			c.log.Warn(err.Error())
			sleep(ctx, 2*c.cfg.StandbyPoll)
		}
	}
	c.log.Info("discord: stopped")
	return nil
}

func (c *Channel) badCredentials(ctx context.Context, err error) {
	c.setState(askbridge.StateBadCredentials)
	c.log.Error("discord: Discord refused the bot token (or, for close code 4014, the MESSAGE_CONTENT intent: enable it in the developer portal); check ASKUSER_DISCORD_TOKEN; retrying later", "err", err, "retry_in", c.cfg.BadCredentialsRetry)
	c.me.Store(nil)
	sleep(ctx, c.cfg.BadCredentialsRetry)
}

// identify reads the bot user (GET /users/@me) once per run, which checks
// the token and gives the application id.
func (c *Channel) identify(ctx context.Context) error {
	if c.me.Load() != nil {
		return nil
	}
	u, err := c.rest.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		if restStatus(err) == 401 {
			return fmt.Errorf("%w: %w", errBadCredentials, err)
		}
		return fmt.Errorf("discord: read bot user: %w", err)
	}
	c.me.Store(u)
	if c.appIDValue() == "" {
		c.appID.Store(u.ID)
	}
	return nil
}

// holdGateway runs the gateway while the lease is held: it renews the lease
// and closes the session as soon as renewal fails, so two replicas never
// hold sessions for long at once; events seen twice during a hand-over are
// deduplicated by the engine (Store.FirstSeen on the event id).
func (c *Channel) holdGateway(ctx context.Context, lease askbridge.Lease, in askbridge.Inbox, handlers *tracker) error {
	lctx, lost := context.WithCancel(ctx)
	var renewer sync.WaitGroup
	renewer.Add(1)
	go func() {
		defer renewer.Done()
		c.renew(lctx, lease, lost)
	}()
	defer func() {
		lost()
		renewer.Wait()
	}()

	g := &gateway{c: c, in: in, handlers: handlers, ctx: ctx}
	s := c.newSession()
	s.Dialer = g.dialer()
	disconnected := make(chan struct{}, 1)
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		select {
		case disconnected <- struct{}{}:
		default:
		}
	})
	s.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
		g.spawn(func() { c.onInteraction(ctx, in, ic.Interaction) })
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		g.spawn(func() { c.onMessage(ctx, in, m.Message) })
	})
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.Resumed) { c.log.Info("discord: gateway session resumed") })

	bo := newBackoff(c.cfg.RetryMin, c.cfg.RetryMax)
	failures := 0
	for lctx.Err() == nil {
		select {
		case <-disconnected: // left over from an earlier connection
		default:
		}
		if c.State() != askbridge.StateRetrying {
			c.setState(askbridge.StateConnecting)
		}
		err := g.open(lctx, s)
		if err != nil {
			if lctx.Err() != nil {
				return nil
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) && (ce.Code == closeAuthenticationFailed || ce.Code == closeInvalidIntents || ce.Code == closeDisallowedIntents) {
				return fmt.Errorf("%w: gateway closed with %d %s", errBadCredentials, ce.Code, ce.Text)
			}
			c.setState(askbridge.StateRetrying)
			if failures++; failures >= maxOpenFailures {
				return fmt.Errorf("%w (%d connects failed, last: %w)", errHandOver, failures, err)
			}
			wait := bo.next()
			c.log.Warn("discord: connect to the gateway", "err", err, "retry_in", wait)
			sleep(lctx, wait)
			continue
		}
		failures = 0
		c.setState(askbridge.StateConnected)
		c.log.Info("discord: gateway connected")
		select {
		case <-lctx.Done():
			_ = s.Close()
			return nil
		case <-disconnected:
		}
		c.setState(askbridge.StateRetrying)
		wait := bo.next()
		c.log.Warn("discord: gateway disconnected; reconnecting", "retry_in", wait)
		sleep(lctx, wait)
	}
	return nil
}

// renew keeps the lease alive, every third of its TTL. When Discord's
// gateway must not stay open without the lease, lost is called: on a
// refused renewal at once, on Redis errors once the lease may have run out.
func (c *Channel) renew(ctx context.Context, lease askbridge.Lease, lost context.CancelFunc) {
	every := c.cfg.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := c.store.RenewLease(ctx, lease, c.cfg.LeaseTTL)
		switch {
		case err == nil && ok:
			last = time.Now()
		case err == nil:
			c.log.Warn("discord: gateway lease lost to another replica; closing the gateway")
			lost()
			return
		case ctx.Err() != nil:
			return
		default:
			c.log.Warn("discord: renew gateway lease", "err", err)
			if time.Since(last) > c.cfg.LeaseTTL-every {
				c.log.Warn("discord: gateway lease may have run out; closing the gateway")
				lost()
				return
			}
		}
	}
}

// gateway is one lease holding's gateway plumbing.
type gateway struct {
	c        *Channel
	in       askbridge.Inbox
	handlers *tracker
	ctx      context.Context

	mu   sync.Mutex
	conn net.Conn // the latest raw connection, closed to abort a stuck Open
}

// spawn runs an event handler off the read loop; Run waits for them.
func (g *gateway) spawn(f func()) { g.handlers.spawn(f) }

// tracker runs event handlers and waits for them at shutdown; an event that
// arrives after close (from a session being torn down) is dropped.
type tracker struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (t *tracker) spawn(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
}

func (t *tracker) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

func (g *gateway) dialer() *websocket.Dialer {
	nd := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
	return &websocket.Dialer{
		Proxy:            websocket.DefaultDialer.Proxy,
		HandshakeTimeout: 15 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := nd.DialContext(ctx, network, addr)
			if err == nil {
				g.mu.Lock()
				g.conn = conn
				g.mu.Unlock()
			}
			return conn, err
		},
	}
}

// open runs discordgo's Open (GET /gateway, dial, HELLO, IDENTIFY or
// RESUME, READY), which takes no context: when ctx ends or OpenTimeout
// passes first, the raw connection is closed so Open returns.
func (g *gateway) open(ctx context.Context, s *discordgo.Session) error {
	done := make(chan error, 1)
	go func() { done <- s.Open() }()
	t := time.NewTimer(g.c.cfg.OpenTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-t.C:
	}
	g.mu.Lock()
	if g.conn != nil {
		_ = g.conn.Close()
	}
	g.mu.Unlock()
	err := <-done
	if err == nil {
		// It connected just as we gave up.
		_ = s.Close()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("discord: gateway open timed out after %s (%v)", g.c.cfg.OpenTimeout, err)
}

// backoff is an exponential backoff with jitter.
type backoff struct{ min, max, cur time.Duration }

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max} }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return b.cur - time.Duration(rand.Int64N(int64(b.cur)/5+1))
}

func (b *backoff) reset() { b.cur = 0 }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
