package telegram

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/lease"
	"github.com/askbridge/askbridge/internal/retry"
)

// Run receives updates until ctx is done and hands them to in: by long
// polling while this replica holds the poller lease (standing by otherwise),
// or, with a WebhookURL, by registering the webhook and serving
// WebhookHandler. It owns its reconnects and returns only when ctx is done,
// after the work it started has finished. Call it once.
func (c *Channel) Run(ctx context.Context, in engine.Inbox) error {
	c.inbox.Store(&inboxBox{in: in})
	// A 429 another replica got for a chat holds this one's sends to that
	// chat too, so the replicas do not run into the limit in turn.
	hctx, stopHearing := context.WithCancel(ctx)
	heard := engine.HearCooldowns(hctx, c.coord, Platform, c.log, c.pace.heard)
	defer func() { stopHearing(); heard() }()
	if c.identify(ctx) {
		if c.cfg.WebhookURL != "" {
			c.runWebhook(ctx)
		} else {
			c.runPolling(ctx, in)
		}
	}
	// Webhook requests from now on get 503 (Telegram retries them at
	// another replica or later).
	c.inbox.Store(nil)
	c.effects.Wait()
	return nil
}

// identify calls getMe until it succeeds, to check the token and learn the
// bot's username. It reports false when ctx ended first.
func (c *Channel) identify(ctx context.Context) bool {
	bo := retry.Backoff{Min: 500 * time.Millisecond, Max: time.Minute}
	for {
		me, err := c.bot.GetMe(ctx)
		if err == nil {
			c.username.Store(me.Username)
			c.log.Info("signed in", "bot", me.Username)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.failed("get me", err)
		if !retry.Sleep(ctx, bo.Next()) {
			return false
		}
	}
}

// failed records a failed call in the state and the log (without the
// token: a *url.Error of the Bot API names it in its URL).
func (c *Channel) failed(op string, err error) {
	err = c.scrub.Err(err)
	if errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) {
		c.setState(engine.StateBadCredentials)
	} else {
		c.setState(engine.StateRetrying)
	}
	c.log.Warn(op+" failed", "err", wrap(op, err))
}

// leaseName names the poller lease and the offset cursor of this bot: by
// its id, never its token.
func (c *Channel) leaseName() string { return fmt.Sprintf("telegram:poll:%d", c.botID) }

// runPolling polls while this replica holds the poller lease and stands
// by while another one does.
func (c *Channel) runPolling(ctx context.Context, in engine.Inbox) {
	lease.Hold(ctx, lease.Params{
		Coord: c.coord, Name: c.leaseName(), Holder: c.cfg.Replica,
		TTL: c.cfg.LeaseTTL, RenewEvery: c.cfg.RenewEvery, Log: c.log,
		Standby: func() { c.setState(engine.StateStandby) },
		Failed:  func(error) { c.setState(engine.StateRetrying) },
		Abandon: c.crash.Load,
	}, func(term context.Context, l engine.Lease) time.Duration {
		c.log.Info("polling", "lease", l.Name, "token", l.Token)
		return c.poll(term, in, l)
	})
}

// poll runs the library's getUpdates loop for one term of the lease: from
// the stored offset, one update at a time, storing the offset after each
// update is handled. An update that cannot be handled is tried again for
// as long as the term lasts; when the term ends first it is given back
// (neither its offset nor any later one stored or asked for), so the next
// term polls it again. It returns when term is done or the offset could not
// be stored for want of the lease, with how long to stand aside.
func (c *Channel) poll(term context.Context, in engine.Inbox, l engine.Lease) time.Duration {
	term, lost := context.WithCancel(term)
	defer lost()
	// getUpdates fails while a webhook is set (webhook mode before).
	if _, err := c.bot.DeleteWebhook(term, &bot.DeleteWebhookParams{}); err != nil && term.Err() == nil {
		c.failed("delete webhook", err)
	}
	offset, found, err := c.coord.Cursor(term, l.Name)
	if err != nil {
		if term.Err() == nil {
			c.setState(engine.StateRetrying)
			c.log.Error("read update offset", "err", err)
		}
		return c.cfg.RenewEvery
	}
	c.setState(engine.StateConnected)
	gate := &pollGate{c: c, next: c.cfg.HTTPClient}
	// givenBack is set once an update of this term was given back: every
	// later one is left alone too, so no offset past it is stored (the
	// library may still hand over an update it queued before the term
	// ended). Only the one handler goroutine touches it.
	givenBack := false
	cursor := &cursorWriter{c: c, term: term, lease: l, lost: lost}
	// The offsets handled last are stored before the term ends.
	defer cursor.flush()
	handle := func(_ context.Context, _ *bot.Bot, upd *models.Update) {
		defer gate.handled()
		defer func() {
			// handleUpdate recovers the handling; this is the rest.
			if v := recover(); v != nil {
				engine.LogPanic(c.log, c.cfg.Panicked, "telegram poller handler", v, "update", upd.ID)
			}
		}()
		if givenBack || !c.handlePolled(term, in, upd) {
			givenBack = true
			lost()
			return
		}
		cursor.handled(upd.ID + 1)
	}
	opts := []bot.Option{
		bot.WithHTTPClient(c.cfg.PollTimeout, gate),
		bot.WithDefaultHandler(handle),
		bot.WithNotAsyncHandlers(),
		bot.WithWorkers(1),
		bot.WithAllowedUpdates(allowedUpdates),
		bot.WithErrorsHandler(func(err error) {
			if term.Err() == nil {
				c.log.Debug("poll", "err", c.scrub.Err(err))
			}
		}),
	}
	if found {
		// The library asks for offset = initial + 1.
		opts = append(opts, bot.WithInitialOffset(offset-1))
	}
	poller, err := c.newBot(opts...)
	if err != nil {
		c.log.Error("make poller", "err", c.scrub.Err(err))
		return c.cfg.RenewEvery
	}
	poller.Start(term)
	return 0
}

// cursorTimeout bounds the store of one offset.
const cursorTimeout = 10 * time.Second

// cursorEvery is how often at most the poller stores its offset: an
// update handled within cursorEvery of the last store has its offset
// stored with the next one, at most cursorEvery later (and when the term
// ends). A poller that takes over from a stored offset that lags asks
// Telegram for updates it already confirmed (by asking for a later offset)
// and gets none of them again; one it had not confirmed comes again and is
// skipped by its settled first-seen mark.
const cursorEvery = time.Second

// cursorWriter stores the poller's offset (SetCursor, fenced by the
// poller lease) at most every cursorEvery, always the latest one handled,
// in order. A refused store (the lease lost) ends the term.
type cursorWriter struct {
	c     *Channel
	term  context.Context
	lease engine.Lease
	lost  func()

	// write is held across taking the offset and storing it, so stores
	// land in the order of the offsets.
	write sync.Mutex

	mu      sync.Mutex
	pending int64 // the offset to store; 0: none
	last    time.Time
	timer   *time.Timer
}

// handled notes offset (the id after the update just handled): stored at
// once when the last store is cursorEvery old, else by a timer.
func (w *cursorWriter) handled(offset int64) {
	w.mu.Lock()
	w.pending = offset
	if w.timer != nil {
		w.mu.Unlock()
		return
	}
	wait := cursorEvery - time.Since(w.last)
	if wait > 0 {
		w.timer = time.AfterFunc(wait, w.flush)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.flush()
}

// flush stores the pending offset, if any.
func (w *cursorWriter) flush() {
	w.write.Lock()
	defer w.write.Unlock()
	w.mu.Lock()
	offset := w.pending
	w.pending = 0
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.last = time.Now()
	w.mu.Unlock()
	if offset == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.term), cursorTimeout)
	defer cancel()
	ok, err := w.c.coord.SetCursor(ctx, w.lease.Name, offset, w.lease)
	switch {
	case err != nil:
		w.c.log.Error("store update offset", "offset", offset, "err", err)
	case !ok:
		w.c.log.Warn("poller lease lost; stopping polling", "offset", offset)
		w.lost()
	}
}

// handleTimeout bounds one try of an update.
const handleTimeout = time.Minute

// handlePolled handles one polled update, trying it again with backoff
// while it cannot be handled (the store cannot be reached) for as long as
// term lasts; the tap was answered "try again" after the first failed try.
// An update in hand is finished even when term ends, but not tried again
// after: it is given back (its first-seen mark undone) and handlePolled
// reports false, so nothing past it may be confirmed.
func (c *Channel) handlePolled(term context.Context, in engine.Inbox, upd *models.Update) bool {
	bo := retry.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(term), handleTimeout)
		err := c.handleTimely(ctx, in, upd)
		cancel()
		if err == nil {
			if try > 1 {
				c.log.Info("update handled after trying again", "update", upd.ID, "tries", try)
			}
			return true
		}
		if try == 1 {
			c.log.Error("update not handled; trying it again while this replica polls", "update", upd.ID, "err", err)
		} else {
			c.log.Debug("update still not handled", "update", upd.ID, "tries", try, "err", err)
		}
		if !retry.Sleep(term, bo.Next()) {
			c.giveBack(upd.ID)
			c.log.Warn("update given back unhandled; the next poller gets it again", "update", upd.ID, "tries", try)
			return false
		}
	}
}

// errLeaseLapsed refuses a getUpdates whose poller lease may have lapsed.
var errLeaseLapsed = errors.New("telegram: the poller lease may have lapsed; not polling")

// pollGate is the poller's HTTP client. It holds each getUpdates until
// every update the previous one returned has been handled (its offset is
// stored then, or within cursorEvery: cursorWriter): the library asks for
// offset = last id + 1 as soon as it has queued an update, and Telegram
// forgets every update below the offset it is asked for, so without the
// gate a crash could lose an update that was fetched but not handled.
type pollGate struct {
	c    *Channel
	next bot.HttpClient

	mu      sync.Mutex
	pending int
	idle    chan struct{} // closed when pending drops to 0
}

func (g *pollGate) Do(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/getUpdates") {
		return g.next.Do(req)
	}
	if err := g.waitIdle(req.Context()); err != nil {
		return nil, err
	}
	// A poller paused longer than its lease (a stopped process, a long GC)
	// must not poll beside the one that took over before its renewer has
	// noticed: no getUpdates once the lease may have lapsed.
	if !lease.Valid(req.Context()) {
		return nil, errLeaseLapsed
	}
	// The URL of a failed request names the token: scrubbed before
	// anyone sees it, here or in the library.
	resp, err := g.next.Do(req)
	if err != nil {
		err = g.c.scrub.Err(err)
		if req.Context().Err() == nil {
			g.c.failed("get updates", err)
		}
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, g.c.scrub.Err(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var r struct {
		OK          bool             `json:"ok"`
		Result      []*models.Update `json:"result"`
		ErrorCode   int              `json:"error_code"`
		Description string           `json:"description"`
	}
	if json.Unmarshal(body, &r) != nil {
		return resp, nil // the library reports it
	}
	if r.OK {
		g.c.setState(engine.StateConnected)
		g.add(len(r.Result))
		return resp, nil
	}
	g.c.pollRefused(req.Context(), r.ErrorCode, r.Description)
	return resp, nil
}

func (g *pollGate) add(n int) {
	if n == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending == 0 {
		g.idle = make(chan struct{})
	}
	g.pending += n
}

func (g *pollGate) handled() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending == 0 {
		return
	}
	g.pending--
	if g.pending == 0 {
		close(g.idle)
	}
}

// waitIdle waits until every update fetched was handled. A poll whose
// term has ended is never sent: after an update was given back, the offset
// it would ask for would confirm it.
func (g *pollGate) waitIdle(ctx context.Context) error {
	g.mu.Lock()
	idle := g.idle
	pending := g.pending
	g.mu.Unlock()
	if pending > 0 {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

// pollRefused reacts to a refused getUpdates.
func (c *Channel) pollRefused(ctx context.Context, code int, desc string) {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusNotFound:
		c.setState(engine.StateBadCredentials)
	case code == http.StatusConflict && strings.Contains(desc, webhookIsActive):
		c.setState(engine.StateRetrying)
		if _, err := c.bot.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); err != nil && ctx.Err() == nil {
			c.failed("delete webhook", err)
		}
	default:
		// 409 "terminated by other getUpdates request": another process
		// polls with this token outside the lease (or a crashed holder's
		// request is still open); the library retries with backoff.
		c.setState(engine.StateRetrying)
	}
	c.log.Warn("get updates refused", "code", code, "description", desc)
}

// runWebhook registers the webhook (every replica does; it is idempotent)
// and then only serves WebhookHandler until ctx is done.
func (c *Channel) runWebhook(ctx context.Context) {
	bo := retry.Backoff{Min: 500 * time.Millisecond, Max: time.Minute}
	for ctx.Err() == nil {
		_, err := c.bot.SetWebhook(ctx, &bot.SetWebhookParams{
			URL: c.cfg.WebhookURL, SecretToken: c.cfg.WebhookSecret, AllowedUpdates: allowedUpdates,
		})
		if err == nil {
			c.setState(engine.StateConnected)
			break
		}
		if ctx.Err() != nil {
			break
		}
		c.failed("set webhook", err)
		retry.Sleep(ctx, bo.Next())
	}
	<-ctx.Done()
}

// sameSecret compares the SHA-256 digests of got and want in constant
// time: the time taken tells neither how much of got was right nor how long
// want is. An empty want matches nothing.
func sameSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return want != "" && subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// maxWebhookBody bounds one update: Telegram's updates are a few KB.
const maxWebhookBody = 1 << 20

// serveWebhook checks the secret token of every request (sameSecret) and
// hands the update to the engine before answering, so a 5xx makes
// Telegram deliver it again (the update_id dedupe keeps it single; the mark
// of an update that was not handled is undone first, so the redelivery is
// handled). A panic is logged with its stack and answered 500.
func (c *Channel) serveWebhook(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			engine.LogPanic(c.log, c.cfg.Panicked, "telegram webhook handler", v)
			http.Error(w, "try again", http.StatusInternalServerError)
		}
	}()
	if c.cfg.WebhookURL == "" {
		http.Error(w, "telegram webhook mode is off", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !sameSecret(r.Header.Get("X-Telegram-Bot-Api-Secret-Token"), c.cfg.WebhookSecret) {
		c.log.Warn("webhook request with a wrong secret token", "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	box := c.inbox.Load()
	if box == nil {
		http.Error(w, "not running yet", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	var upd models.Update
	if err := json.Unmarshal(body, &upd); err != nil {
		// Telegram would resend it forever; it can never be handled.
		c.log.Warn("webhook update is not JSON", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	if err := c.handleTimely(ctx, box.in, &upd); err != nil {
		c.giveBack(upd.ID)
		c.log.Error("webhook update not handled; Telegram delivers it again", "update", upd.ID, "err", err)
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}
