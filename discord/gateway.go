package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/lease"
	"github.com/askbridge/askbridge/internal/retry"
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

// Run keeps one gateway session per bot token across replicas: it checks
// the token, then holds the gateway lease (internal/lease) and, while it
// holds it, connects and hands button presses and messages to in; without
// the lease it stands by (sending still works) and takes over when the
// holder dies. It owns every reconnect, with backoff, and returns only when
// ctx is done, after its event handlers finished. A refused token puts the
// channel in "bad credentials" and is retried slowly. Call it once.
func (c *Channel) Run(ctx context.Context, in engine.Inbox) error {
	handlers := &tracker{log: c.log, counter: c.cfg.Panicked}
	defer handlers.close()
	// A 429 another replica got for a route bucket (or the global limit)
	// holds this one's requests to it back too.
	hctx, stopHearing := context.WithCancel(ctx)
	heard := engine.HearCooldowns(hctx, c.coord, Platform, c.log, c.lim.heard)
	defer func() { stopHearing(); heard() }()
	bo := retry.Backoff{Min: c.cfg.RetryMin, Max: c.cfg.RetryMax}
	// The lease is named by the application id, which GET /users/@me gives
	// when the configuration does not: the token is checked first.
	for ctx.Err() == nil {
		wait, ok := c.checkToken(ctx, &bo)
		if ok {
			break
		}
		retry.Sleep(ctx, wait)
	}
	if ctx.Err() == nil {
		var holding atomic.Bool
		lease.Hold(ctx, lease.Params{
			Coord: c.coord, Name: c.leaseName(), Holder: c.cfg.Replica, TTL: c.cfg.LeaseTTL,
			// Standbys contend every StandbyPoll, so a dead holder is
			// replaced within LeaseTTL + StandbyPoll; the holder renews at
			// least every third of the TTL.
			RenewEvery: min(c.cfg.StandbyPoll, c.cfg.LeaseTTL/3),
			Log:        c.log,
			Standby:    func() { c.setState(engine.StateStandby) },
			Failed: func(error) {
				if !holding.Load() {
					c.setState(engine.StateRetrying)
				}
			},
		}, func(ctx context.Context, l engine.Lease) time.Duration {
			holding.Store(true)
			defer holding.Store(false)
			return c.term(ctx, l, in, handlers, &bo)
		})
	}
	c.log.Info("discord: stopped")
	return nil
}

// term runs the gateway for one holding of the lease and returns how long
// to stand aside after it: BadCredentialsRetry when Discord refused the
// token, twice StandbyPoll when the gateway kept failing here (so another
// replica takes over), a backoff when the token could not be checked, else
// nothing.
func (c *Channel) term(ctx context.Context, l engine.Lease, in engine.Inbox, handlers *tracker, bo *retry.Backoff) time.Duration {
	// After a refusal the token is checked again over REST first.
	if wait, ok := c.checkToken(ctx, bo); !ok {
		return wait
	}
	c.log.Info("discord: holding the gateway lease", "lease", l.Name, "fence", l.Token)
	err := c.holdGateway(ctx, in, handlers)
	switch {
	case errors.Is(err, errBadCredentials):
		return c.badCredentials(err)
	case errors.Is(err, errHandOver):
		c.log.Warn(err.Error())
		return 2 * c.cfg.StandbyPoll
	}
	return 0
}

// checkToken reads the bot user when it is not known yet (see identify).
// When that fails it sets the state and returns how long to wait before
// trying again.
func (c *Channel) checkToken(ctx context.Context, bo *retry.Backoff) (wait time.Duration, ok bool) {
	err := c.identify(ctx)
	switch {
	case err == nil:
		bo.Reset()
		return 0, true
	case ctx.Err() != nil:
		return 0, false
	case errors.Is(err, errBadCredentials):
		return c.badCredentials(err), false
	}
	c.setState(engine.StateRetrying)
	wait = bo.Next()
	c.log.Warn("discord: read the bot user", "err", err, "retry_in", wait)
	return wait, false
}

// badCredentials reports a refused token and returns how long to wait
// before trying it again; the token is read again over REST then.
func (c *Channel) badCredentials(err error) time.Duration {
	c.setState(engine.StateBadCredentials)
	c.log.Error("discord: Discord refused the bot token (or, for close code 4014, the MESSAGE_CONTENT intent: enable it in the developer portal); check ASKUSER_DISCORD_TOKEN; retrying later", "err", err, "retry_in", c.cfg.BadCredentialsRetry)
	c.me.Store(nil)
	return c.cfg.BadCredentialsRetry
}

// identify reads the bot user (GET /users/@me) once per run, which checks
// the token and gives the application id.
func (c *Channel) identify(ctx context.Context) error {
	if c.me.Load() != nil {
		return nil
	}
	u, err := c.rest.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		err = c.scrub.Err(err)
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

// holdGateway runs the gateway until ctx ends: ctx is a holding of the
// lease, which lease.Hold ends as soon as the lease is lost or may have run
// out, so two replicas never hold sessions for long at once; events seen
// twice during a hand-over are deduplicated by the engine
// (Coordinator.FirstSeen on the event id). It returns nil when ctx ended,
// else errBadCredentials or errHandOver.
func (c *Channel) holdGateway(ctx context.Context, in engine.Inbox, handlers *tracker) error {
	g := &gateway{c: c, in: in, handlers: handlers}
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

	bo := retry.Backoff{Min: c.cfg.RetryMin, Max: c.cfg.RetryMax}
	failures := 0
	for ctx.Err() == nil {
		select {
		case <-disconnected: // left over from an earlier connection
		default:
		}
		if c.State() != engine.StateRetrying {
			c.setState(engine.StateConnecting)
		}
		err := g.open(ctx, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) && (ce.Code == closeAuthenticationFailed || ce.Code == closeInvalidIntents || ce.Code == closeDisallowedIntents) {
				return fmt.Errorf("%w: gateway closed with %d %s", errBadCredentials, ce.Code, ce.Text)
			}
			c.setState(engine.StateRetrying)
			if failures++; failures >= maxOpenFailures {
				return fmt.Errorf("%w (%d connects failed, last: %w)", errHandOver, failures, err)
			}
			wait := bo.Next()
			c.log.Warn("discord: connect to the gateway", "err", err, "retry_in", wait)
			retry.Sleep(ctx, wait)
			continue
		}
		failures = 0
		c.setState(engine.StateConnected)
		c.log.Info("discord: gateway connected")
		select {
		case <-ctx.Done():
			_ = s.Close()
			return nil
		case <-disconnected:
		}
		c.setState(engine.StateRetrying)
		wait := bo.Next()
		c.log.Warn("discord: gateway disconnected; reconnecting", "retry_in", wait)
		retry.Sleep(ctx, wait)
	}
	return nil
}

// gateway is one lease holding's gateway plumbing.
type gateway struct {
	c        *Channel
	in       engine.Inbox
	handlers *tracker

	mu   sync.Mutex
	conn net.Conn // the latest raw connection, closed to abort a stuck Open
}

// spawn runs an event handler off the read loop; Run waits for them.
func (g *gateway) spawn(f func()) { g.handlers.spawn(f) }

// tracker runs event handlers and waits for them at shutdown; an event that
// arrives after close (from a session being torn down) is dropped. A panic
// in a handler is recovered and logged with its stack: one bad event never
// takes the process down.
type tracker struct {
	log     *slog.Logger
	counter func(string)
	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
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
		defer recovered(t.log, t.counter, "an event handler")
		f()
	}()
}

// recovered, deferred, turns a panic into an error log with the stack.
func recovered(log *slog.Logger, count func(string), op string) {
	if v := recover(); v != nil {
		engine.LogPanic(log, count, "discord "+op, v)
	}
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
	go func() {
		err := errors.New("discord: gateway open panicked")
		defer func() { done <- err }()
		defer recovered(g.c.log, g.c.cfg.Panicked, "gateway open")
		err = g.c.scrub.Err(s.Open())
	}()
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
