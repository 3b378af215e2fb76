package slack

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/retry"
)

// Run receives button presses and messages until ctx is done, handing each
// to in: over socket mode when an app token is set (every replica connects;
// Slack hands each event to one connection), otherwise from the handler of
// HTTPHandler, which Run enables. It learns the bot's own user id first
// (auth.test), owns its reconnects with backoff, and returns only when ctx
// is done and the events in hand are handled. Call it once.
func (c *Channel) Run(ctx context.Context, in engine.Inbox) error {
	c.inbox.Store(&inboxRef{ctx: ctx, in: in})
	// A 429 another replica got for a channel holds this one's calls to
	// it back too.
	hctx, stopHearing := context.WithCancel(ctx)
	heard := engine.HearCooldowns(hctx, c.coord, Platform, c.log, c.gate.hold)
	defer func() { stopHearing(); heard() }()
	defer func() {
		c.stopMu.Lock()
		c.stopped = true
		c.stopMu.Unlock()
		c.handling.Wait()
	}()
	if !c.whoami(ctx) {
		return nil
	}
	if c.cfg.AppToken == "" {
		c.setState(engine.StateConnected)
		<-ctx.Done()
		return nil
	}
	c.runSocket(ctx)
	return nil
}

// whoami calls auth.test until it answers, to learn the bot's user id.
func (c *Channel) whoami(ctx context.Context) bool {
	b := retry.Backoff{Min: c.cfg.RetryMin, Max: c.cfg.RetryMax}
	for {
		res, err := c.api.AuthTestContext(ctx)
		if err == nil {
			c.botUser.Store(res.UserID)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		se := c.classify(err)
		if c.State() != engine.StateBadCredentials {
			c.setState(engine.StateRetrying)
		}
		wait := b.Next()
		c.log.Warn("auth.test failed", "reason", se.Reason, "retry_in", wait)
		if !retry.Sleep(ctx, wait) {
			return false
		}
	}
}

// runSocket wraps slack-go's socket mode run loop, which gives up when a
// reconnect fails (bad token, network down): it starts it again with
// jittered backoff (so replicas that lost Slack together do not reconnect
// in step), until ctx is done.
func (c *Channel) runSocket(ctx context.Context) {
	b := retry.Backoff{Min: c.cfg.RetryMin, Max: c.cfg.RetryMax}
	for ctx.Err() == nil {
		if c.State() != engine.StateBadCredentials {
			c.setState(engine.StateConnecting)
		}
		sm := socketmode.New(c.api, socketmode.OptionPingInterval(c.cfg.PingInterval), socketmode.OptionLog(libLog(c.log)))
		rctx, cancel := context.WithCancel(ctx)
		var connected atomic.Bool
		done := make(chan struct{})
		go func() { defer close(done); c.socketEvents(rctx, sm, &connected) }()
		err := sm.RunContext(rctx)
		cancel()
		<-done
		if ctx.Err() != nil {
			return
		}
		if connected.Load() {
			b.Reset()
		}
		code := errorCode(err)
		if code == "" {
			// RunContext never returns a nil error.
			code = c.scrub.Text(err.Error())
		}
		if credentialErrors[code] {
			c.setState(engine.StateBadCredentials)
		} else {
			c.setState(engine.StateRetrying)
		}
		wait := b.Next()
		c.log.Warn("socket mode stopped, reconnecting", "reason", code, "retry_in", wait)
		retry.Sleep(ctx, wait)
	}
}

// socketEvents drains the client's events (it blocks when they are not
// read) until rctx is done. Each request is acknowledged at once, then
// handled in the background. A panic on one event is recovered and logged,
// and the loop goes on.
func (c *Channel) socketEvents(rctx context.Context, sm *socketmode.Client, connected *atomic.Bool) {
	for {
		select {
		case <-rctx.Done():
			return
		case evt := <-sm.Events:
			func() {
				defer c.recovered("a socket mode event")
				c.socketEvent(sm, evt, connected)
			}()
		}
	}
}

func (c *Channel) socketEvent(sm *socketmode.Client, evt socketmode.Event, connected *atomic.Bool) {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		if !connected.Load() && c.State() != engine.StateBadCredentials {
			c.setState(engine.StateConnecting)
		}
	case socketmode.EventTypeConnected:
		connected.Store(true)
		c.setState(engine.StateConnected)
	case socketmode.EventTypeConnectionError:
		c.setState(engine.StateRetrying)
		if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
			c.log.Warn("socket mode connection failed", "attempt", e.Attempt, "retry_in", e.Backoff, "err", c.scrub.Err(e.ErrorObj))
		}
	case socketmode.EventTypeInvalidAuth:
		c.setState(engine.StateBadCredentials)
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive:
		if evt.Request == nil {
			return
		}
		// Slack: acknowledge every envelope within 3 seconds, or it is
		// delivered again. The handling starts in the background and the
		// ack goes out at once; a replica that is stopping does not ack,
		// so Slack hands the envelope to another connection.
		ir := c.inbox.Load()
		var err error
		switch data := evt.Data.(type) {
		case slackevents.EventsAPIEvent:
			// The ack goes out at once: a failed handling tells the
			// person to try again (Slack's own redelivery of an envelope
			// whose ack was lost is handled, its mark forgotten).
			err = c.dispatch(ir, func(ctx context.Context, in engine.Inbox) { c.handleEvent(ctx, in, data, nil) })
		case slack.InteractionCallback:
			err = c.dispatch(ir, func(ctx context.Context, in engine.Inbox) { c.handleInteraction(ctx, in, data) })
		}
		if err != nil {
			// Not acknowledged: Slack delivers the envelope again.
			return
		}
		// The ack waits in the client's queue while it reconnects; past
		// Slack's 3 seconds it is of no use, and must not block the loop.
		actx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := sm.AckCtx(actx, evt.Request.EnvelopeID, nil); err != nil {
			c.log.Warn("acknowledge envelope", "envelope", evt.Request.EnvelopeID, "err", c.scrub.Err(err))
		}
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		c.log.Warn("socket mode error", "type", string(evt.Type), "data", c.scrub.Text(errorOf(evt.Data)))
	}
}

func errorOf(v any) string {
	switch e := v.(type) {
	case *socketmode.ErrorBadMessage:
		return e.Cause.Error()
	case *socketmode.ErrorWriteFailed:
		return e.Cause.Error()
	case error:
		return e.Error()
	}
	return ""
}
