package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/redact"
	"github.com/askbridge/askbridge/internal/retry"
)

// Result callbacks (ask-user.md §8): when a question with a `callback`
// ends, the bridge POSTs its result JSON there, signed as Standard Webhooks
// says, and retries with backoff until a 2xx answer or GiveUpAfter.
//
// The pending callback lives in Redis (CallbackQueue): a registration
// beside the question, in its slot, and a member of a due-set shared by all
// questions. A callback is registered before its question exists — before
// the create, or before the refusal, that stores it — and due at the
// question's deadline plus a grace at the latest, so a replica that dies at
// any point after that leaves nothing to lose: whichever replica's
// dispatcher finds it due calls back once the question has ended. Ending a
// question only brings the due time forward (before the end to a few
// seconds from then, after a won end to now), which makes a callback go
// out at once rather than at the deadline.
//
// The other parts reach the callbacks through the core (resultCalls) where
// questions begin and end: the intake screens the questions it creates
// (the operator's policy is applied and the callback registered) and
// notes the callbacks of the entries it reads (a refused request has no
// decoded request to take the URL from); every refusal (core.reject)
// registers a refused request's callback; every end (core.end, a vote)
// brings the due time forward before it is tried, and every won end
// (core.afterEnd, from an answer, a cancel, a vote or a sweep) to now.

// CallbackPolicy is the operator's say on which callbacks the bridge
// makes. A host pattern is a host name ("agents.example.com"), "*." and a
// domain for any name under it (not the domain itself), or an IP address;
// names match ignoring case and a trailing dot.
type CallbackPolicy struct {
	// Hosts may be called back over https (ASKUSER_CALLBACK_HOSTS).
	Hosts []string
	// HTTPHosts may be called back over plain http too, and are allowed
	// like Hosts (ASKUSER_CALLBACK_HTTP_HOSTS).
	HTTPHosts []string
	// PrivateHosts may resolve to loopback, private, link-local and other
	// non-public addresses, and are allowed like Hosts
	// (ASKUSER_CALLBACK_PRIVATE_HOSTS). Any other host's address is checked
	// as it is dialled, and refused if it is one of those.
	PrivateHosts []string
}

// CheckCallbackHostPattern reports what is wrong with a host pattern of a
// CallbackPolicy, or nil.
func CheckCallbackHostPattern(p string) error {
	if _, err := netip.ParseAddr(p); err == nil {
		return nil
	}
	name := strings.TrimPrefix(p, "*.")
	if name == "" || len(name) > 253 || strings.Contains(name, "*") {
		return fmt.Errorf("%q is not a host name, \"*.\" and a domain, or an IP address", p)
	}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 || strings.IndexFunc(label, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			return fmt.Errorf("%q is not a host name, \"*.\" and a domain, or an IP address", p)
		}
	}
	return nil
}

// Check reports why the bridge may not call raw back, naming the field and
// the setting that decides, or nil when it may.
func (p CallbackPolicy) Check(raw string) error {
	u, err := askbridge.ParseCallbackURL(raw)
	if err != nil {
		return err
	}
	host := normHost(u.Hostname())
	if !matchAny(p.Hosts, host) && !matchAny(p.HTTPHosts, host) && !matchAny(p.PrivateHosts, host) {
		return fmt.Errorf("callback: host %q is not on this bridge's callback allowlist (ASKUSER_CALLBACK_HOSTS); ask its operator to add it", host)
	}
	if u.Scheme == "http" && !matchAny(p.HTTPHosts, host) {
		return fmt.Errorf("callback: plain http to %q is not allowed; use https, or ask the bridge's operator to list the host in ASKUSER_CALLBACK_HTTP_HOSTS", host)
	}
	return nil
}

// privateAllowed reports whether host may resolve to a non-public address.
func (p CallbackPolicy) privateAllowed(host string) bool {
	return matchAny(p.PrivateHosts, normHost(host))
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func matchAny(patterns []string, host string) bool {
	for _, p := range patterns {
		if matchHost(p, host) {
			return true
		}
	}
	return false
}

// matchHost matches a normalised host against one pattern.
func matchHost(pattern, host string) bool {
	pattern = normHost(strings.TrimSpace(pattern))
	if a, err := netip.ParseAddr(pattern); err == nil {
		b, err := netip.ParseAddr(host)
		return err == nil && a.Unmap() == b.Unmap()
	}
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok && strings.HasPrefix(suffix, ".") {
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix)
	}
	return pattern != "" && pattern == host
}

// Address ranges a callback never reaches unless its host is among
// CallbackPolicy.PrivateHosts, besides those netip classifies (loopback,
// private, link-local, multicast, unspecified).
var nonPublic = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved (this network)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved (local-use NAT64)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// The IPv6 forms that carry an IPv4 address, which a router along the way
// may deliver to that IPv4 address: NAT64 (RFC 6052) and the deprecated
// IPv4-compatible form in the last 32 bits, 6to4 (RFC 3056) in bits 16–47,
// Teredo (RFC 4380) the client's address inverted in the last 32 bits.
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	v4Compat   = netip.MustParsePrefix("::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
	noEmbedded = netip.Addr{}
)

// embeddedV4 is the IPv4 address an IPv6 address of one of those forms
// carries, or the zero Addr.
func embeddedV4(a netip.Addr) netip.Addr {
	if !a.Is6() || a.Is4In6() {
		return noEmbedded
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), v4Compat.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	case teredo.Contains(a):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	return noEmbedded
}

// blockedAddr names the kind of a non-public address, or "" for a public
// one. An IPv6 address that carries an IPv4 one is judged by that address
// too: 64:ff9b::7f00:1 reaches 127.0.0.1 through a NAT64 gateway.
func blockedAddr(a netip.Addr) string {
	a = a.Unmap()
	if v4 := embeddedV4(a); v4.IsValid() && !a.IsLoopback() && !a.IsUnspecified() {
		if what := blockedAddr(v4); what != "" {
			return what + " (carried in " + a.String() + ")"
		}
	}
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast(), a.IsLinkLocalMulticast():
		return "multicast"
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	return ""
}

// checkedDial dials like net.Dialer but refuses, as it connects, an
// address that is not public unless the host may resolve to one: the check
// is on the address actually dialled (net.Dialer.Control), so a name that
// resolves differently on a second lookup (DNS rebinding) gains nothing.
func (p CallbackPolicy) checkedDial(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		private := p.privateAllowed(host)
		d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
			if private {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("cannot check the address %q of %s", address, host)
			}
			if what := blockedAddr(ap.Addr()); what != "" {
				return fmt.Errorf("refused to connect: %s is at %s, a %s address; a callback host on a private network must be listed in ASKUSER_CALLBACK_PRIVATE_HOSTS", host, ap.Addr(), what)
			}
			return nil
		}}
		return d.DialContext(ctx, network, addr)
	}
}

// CallbackQueue keeps the pending callbacks in Redis, so that any replica
// delivers them and none is lost with the replica that ended its question.
// *store.Store implements it. Every method is safe for concurrent use by
// many goroutines and processes, and blocks on Redis; an error means
// infrastructure trouble and the call may be repeated.
type CallbackQueue interface {
	// RegisterCallbacks records that each question is to be called back at
	// its URL once it ended, due to be looked at by Due. A question already
	// registered keeps its URL and state (safe to repeat); its due time only
	// ever moves earlier.
	RegisterCallbacks(ctx context.Context, regs ...CallbackRegistration) error
	// NudgeCallbacks moves the due time of registered callbacks to at when
	// that is earlier; ids not registered are left alone. Safe to repeat.
	NudgeCallbacks(ctx context.Context, at time.Time, ids ...string) error
	// ClaimCallbacks takes up to max callbacks due at or before now and
	// makes each due again only at now+lease: no other caller takes it
	// until then. Each callback is handed to exactly one caller.
	ClaimCallbacks(ctx context.Context, now time.Time, lease time.Duration, max int) ([]string, error)
	// BeginCallback looks at a claimed callback and, when its question has
	// ended and it is still to be delivered, starts the next attempt
	// (Step CallbackPost, Attempt numbering it). A callback whose question
	// ended giveUpAfter or more before now is recorded as failed instead
	// (CallbackGaveUp). Not safe to repeat: each call is an attempt, and
	// until it is recorded (FinishCallback) or hold has passed, another
	// call is told CallbackBusy, so a callback taken twice (brought forward
	// while claimed) is never posted twice at once.
	BeginCallback(ctx context.Context, id string, now time.Time, giveUpAfter, hold time.Duration) (CallbackAttempt, error)
	// FinishCallback records how an attempt went: delivered and given up
	// leave the queue, a retry is due again at f.Next. ok is false, and
	// nothing changes, when the attempt is no longer the latest (another
	// caller began one after this one's claim lapsed). Safe to repeat.
	FinishCallback(ctx context.Context, f CallbackFinish) (ok bool, err error)
	// ScheduleCallback makes a registered callback due at at (later or
	// earlier); DropCallback takes it out of the due-set. Both are safe to
	// repeat.
	ScheduleCallback(ctx context.Context, id string, at time.Time) error
	DropCallback(ctx context.Context, id string) error
}

// CallbackRegistration is one callback to register.
type CallbackRegistration struct {
	ID  string
	URL string
	// Due is when the callback is first looked at: its question's
	// deadline (plus a grace), when it has ended by then at the latest.
	Due time.Time
	// Now is the time of the registration, and Keep how long from then it
	// must stay at least (the store adds its result retention).
	Now  time.Time
	Keep time.Duration
}

// CallbackStep is what BeginCallback found to do.
type CallbackStep int

const (
	// CallbackPost: the question has ended; POST Body to URL.
	CallbackPost CallbackStep = iota + 1
	// CallbackWait: the question is pending (until its deadline, Until)
	// or not yet stored; look again later.
	CallbackWait
	// CallbackDone: nothing is left to do (delivered, given up, or no
	// such callback); drop it from the queue.
	CallbackDone
	// CallbackGaveUp: the question ended GiveUpAfter ago or more; the
	// callback was just recorded as failed.
	CallbackGaveUp
	// CallbackBusy: another attempt is under way (until Until, at the
	// most): a callback brought forward while claimed is taken again, and
	// must not be posted twice at once.
	CallbackBusy
)

// CallbackAttempt is what BeginCallback hands the dispatcher.
type CallbackAttempt struct {
	ID   string
	Step CallbackStep
	// URL, Body (the result JSON, exactly as pushed to the agent), Ended
	// and Attempt (1 for the first) are set for CallbackPost; Attempt also
	// for CallbackGaveUp (the attempts made).
	URL     string
	Body    []byte
	Ended   time.Time
	Attempt int
	// Until is the question's deadline, for CallbackWait (zero when the
	// question is not stored yet); for CallbackBusy, when the attempt
	// under way runs out.
	Until time.Time
}

// CallbackState is the state of a callback the question hash shows in its
// field `callback`.
type CallbackState string

// The states of a callback.
const (
	CallbackDelivered CallbackState = "delivered"
	CallbackRetrying  CallbackState = "retrying"
	CallbackFailed    CallbackState = "failed"
)

// CallbackFinish is the outcome of one attempt.
type CallbackFinish struct {
	ID      string
	Attempt int
	State   CallbackState
	// Error is the failure, shown to operators; Next is when a retry is
	// due (State CallbackRetrying).
	Error string
	Now   time.Time
	Next  time.Time
}

// CallbackMetrics counts callbacks; every method must be cheap and safe for
// concurrent use.
type CallbackMetrics interface {
	// CallbackDelivered counts a callback a receiver took (2xx).
	CallbackDelivered()
	// CallbackFailed counts a failed attempt; final says no other follows.
	CallbackFailed(final bool)
}

type nopCallbackMetrics struct{}

func (nopCallbackMetrics) CallbackDelivered()  {}
func (nopCallbackMetrics) CallbackFailed(bool) {}

// CallbackConfig turns result callbacks on. The zero value leaves them off:
// a request with a callback is then refused with an error naming
// ASKUSER_CALLBACK_SECRET.
type CallbackConfig struct {
	// Secret signs every callback (Standard Webhooks; CallbackKey says how
	// it becomes the key). Empty: callbacks are off.
	Secret string
	// Policy says which URLs may be called back.
	Policy CallbackPolicy
	// Queue keeps the pending callbacks (default: the engine's Store, when
	// it implements CallbackQueue).
	Queue   CallbackQueue
	Metrics CallbackMetrics
	// Timeout bounds one POST, connection included (default 10s).
	Timeout time.Duration
	// Lease is how long a dispatcher holds a callback it took (default
	// 30s): one that dies mid-attempt leaves it to another after that.
	Lease time.Duration
	// PollEvery is how often each replica looks for due callbacks (default
	// 1s); an end on this replica wakes it at once.
	PollEvery time.Duration
	// GiveUpAfter is how long after its question ended a callback is
	// retried (default 24h).
	GiveUpAfter time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts, which
	// doubles from one to the other with jitter (default 5s to 1h).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// Concurrency bounds the attempts one replica makes at once (default 16).
	Concurrency int
}

func (c CallbackConfig) withDefaults() CallbackConfig {
	if c.Metrics == nil {
		c.Metrics = nopCallbackMetrics{}
	}
	setDefault(&c.Timeout, 10*time.Second)
	setDefault(&c.Lease, 30*time.Second)
	setDefault(&c.PollEvery, time.Second)
	setDefault(&c.GiveUpAfter, 24*time.Hour)
	setDefault(&c.MinBackoff, 5*time.Second)
	setDefault(&c.MaxBackoff, time.Hour)
	setDefault(&c.Concurrency, 16)
	return c
}

const (
	// callbackEndGrace is how long after its deadline a question's
	// callback is first looked at when no end brought it forward: the
	// sweep ends the question at its deadline.
	callbackEndGrace = 5 * time.Second
	// callbackRecheck is how soon a callback is looked at again when it
	// was brought forward by an end that had not happened yet, or found its
	// question still pending.
	callbackRecheck = 5 * time.Second
	// callbackWaitMax bounds the wait of a callback whose question is not
	// stored yet, or pending: it is looked at again at least this often.
	callbackWaitMax = time.Minute
	// maxCallbackHints bounds the callbacks noted from entries read but not
	// yet created or refused, and callbackHintAge how long one is kept.
	maxCallbackHints = 10_000
	callbackHintAge  = 10 * time.Minute
	// maxCallbackError bounds the error text of a callback_failed event.
	maxCallbackError = 300
)

// callbacks is the engine's part of result callbacks: the policy applied
// at create, the registrations, and the dispatcher that delivers them.
type callbacks struct {
	*core
	cfg   CallbackConfig
	store callbacksStore
	// off, when set, is why a request with a callback is refused.
	off error
	key []byte
	// kick wakes the dispatcher (a question with a callback ended here).
	kick chan struct{}

	hintMu sync.Mutex
	hints  map[string]callbackHint

	client *http.Client
	slots  chan struct{}
	work   sync.WaitGroup
}

// callbackHint is the callback URL of an entry read and not yet handled.
type callbackHint struct {
	url string
	at  time.Time
}

// callbacksStore is the store as the callbacks see it, besides their
// queue: the refusal of a request whose callback the bridge will not make.
type callbacksStore interface {
	Reject(ctx context.Context, id string, res askbridge.Result, now time.Time) (EndResult, error)
}

func newCallbacks(c *core, cfg CallbackConfig) *callbacks {
	cfg = cfg.withDefaults()
	if cfg.Queue == nil {
		cfg.Queue, _ = c.store.(CallbackQueue)
	}
	cb := &callbacks{core: c, cfg: cfg, store: c.store, kick: make(chan struct{}, 1), hints: map[string]callbackHint{}}
	switch key, err := askbridge.CallbackKey(cfg.Secret); {
	case cfg.Secret == "":
		cb.off = errors.New("callback: this bridge makes no callbacks (ASKUSER_CALLBACK_SECRET is not set); ask its operator to set it, or wait for the result with BLPOP")
	case err != nil:
		cb.off = fmt.Errorf("callback: this bridge's ASKUSER_CALLBACK_SECRET is not usable (%v); ask its operator to fix it", err)
	case cfg.Queue == nil:
		cb.off = errors.New("callback: this bridge's store cannot keep callbacks")
	default:
		cb.key = key
	}
	cb.slots = make(chan struct{}, cfg.Concurrency)
	cb.client = &http.Client{
		Timeout: cfg.Timeout,
		// A redirect is an answer like any other non-2xx: the callback
		// failed (it could lead anywhere, the allowlist included).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			// No proxy: the address dialled is the one checked.
			Proxy:                 nil,
			DialContext:           cfg.Policy.checkedDial(cfg.Timeout),
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
	}
	return cb
}

// on reports whether callbacks are made.
func (cb *callbacks) on() bool { return cb.off == nil }

// allowed reports why the bridge will not call raw back, or nil.
func (cb *callbacks) allowed(raw string) error {
	if cb.off != nil {
		return cb.off
	}
	return cb.cfg.Policy.Check(raw)
}

// screened is what becomes of a question about to be created whose
// callback was refused, or could not be registered: returned in place of
// creating it.
type screened struct {
	rec Record
	err error
}

// screen applies the policy to the callbacks of questions about to be
// created and registers the allowed ones, all in one call to the queue.
// Each question gets nil (create it) or what to return instead: the record
// of its refusal, or an error (the request is handled again).
func (cb *callbacks) screen(ctx context.Context, qs []NewQuestion) []*screened {
	out := make([]*screened, len(qs))
	var regs []CallbackRegistration
	var at []int
	for i, q := range qs {
		cb.takeHint(q.ID)
		if q.Request.Callback == "" {
			continue
		}
		if err := cb.allowed(q.Request.Callback); err != nil {
			out[i] = cb.refuse(ctx, q.ID, err)
			continue
		}
		regs = append(regs, CallbackRegistration{
			ID: q.ID, URL: q.Request.Callback, Due: q.Deadline.Add(callbackEndGrace),
			Now: q.Created, Keep: max(q.Deadline.Sub(q.Created), 0) + callbackEndGrace + cb.cfg.GiveUpAfter,
		})
		at = append(at, i)
	}
	if len(regs) > 0 {
		if err := cb.cfg.Queue.RegisterCallbacks(ctx, regs...); err != nil {
			for _, i := range at {
				out[i] = &screened{err: fmt.Errorf("register callback: %w", err)}
			}
		}
	}
	return out
}

// refuse stores the error result of a request whose callback the bridge
// will not make, as the intake refuses any request.
func (cb *callbacks) refuse(ctx context.Context, id string, cause error) *screened {
	now := cb.clock.Now()
	r, err := cb.store.Reject(ctx, id, askbridge.Refused(id, cause).Stamp(now, now), now)
	if err != nil {
		return &screened{err: fmt.Errorf("reject request: %w", err)}
	}
	if r.Won {
		cb.log.Info("request refused", "question", id, "error", cause.Error())
		cb.metrics.Ended("", askbridge.OutcomeRejected, 0)
		if err := cb.publish(ctx, askbridge.Event{Kind: askbridge.EventRejected, ID: id, At: now, Error: cause.Error()}); err != nil {
			cb.log.Warn("publish rejected event", "question", id, "err", err)
		}
	}
	return &screened{rec: r.Record}
}

// due brings the callbacks of ids forward to at and wakes the dispatcher.
func (cb *callbacks) due(ctx context.Context, at time.Time, ids ...string) {
	if len(ids) == 0 {
		return
	}
	if err := cb.cfg.Queue.NudgeCallbacks(ctx, at, ids...); err != nil {
		cb.log.Warn("bring callbacks forward; they go out at their deadline instead", "questions", len(ids), "err", err)
	}
	select {
	case cb.kick <- struct{}{}:
	default:
	}
}

// noteHints notes the callback of every entry read whose request carries
// one the bridge may make, under the id a refusal of the entry would use.
func (cb *callbacks) noteHints(entries []Entry) {
	now := cb.clock.Now()
	cb.hintMu.Lock()
	defer cb.hintMu.Unlock()
	for id, h := range cb.hints {
		if now.Sub(h.at) > callbackHintAge {
			delete(cb.hints, id)
		}
	}
	for _, e := range entries {
		if len(e.Ask) == 0 || len(cb.hints) >= maxCallbackHints {
			continue
		}
		if u := askbridge.TopLevelString(e.Ask, "callback"); u != "" && cb.allowed(u) == nil {
			cb.hints[refusedID(e)] = callbackHint{url: u, at: now}
		}
	}
}

// takeHint takes the callback noted for id, if any.
func (cb *callbacks) takeHint(id string) string {
	cb.hintMu.Lock()
	defer cb.hintMu.Unlock()
	h, ok := cb.hints[id]
	if !ok {
		return ""
	}
	delete(cb.hints, id)
	return h.url
}

// The callbacks as the other parts reach them, through the core
// (resultCalls): where questions begin and end.

// read notes the callbacks of the entries read, for their refusal.
func (cb *callbacks) read(entries []Entry) {
	if cb.on() {
		cb.noteHints(entries)
	}
}

// rejecting registers the callback of the request id is about to be
// refused, when the entry read carried one the bridge may make: before the
// refusal is stored, so that a replica dying in between loses nothing.
// registered reports whether there is one to bring forward once the
// refusal is stored.
func (cb *callbacks) rejecting(ctx context.Context, id string, now time.Time) (registered bool, err error) {
	if !cb.on() {
		return false, nil
	}
	u := cb.takeHint(id)
	if u == "" {
		return false, nil
	}
	reg := CallbackRegistration{ID: id, URL: u, Due: now.Add(callbackRecheck), Now: now, Keep: callbackRecheck + cb.cfg.GiveUpAfter}
	if err := cb.cfg.Queue.RegisterCallbacks(ctx, reg); err != nil {
		return false, fmt.Errorf("register callback: %w", err)
	}
	return true, nil
}

// ending brings the callback of question id, if it has one, forward to a
// few seconds from now before an end is tried, and ended to now once the
// end is won: a replica that dies in between leaves it due soon all the
// same.
func (cb *callbacks) ending(ctx context.Context, now time.Time, id string) {
	if !cb.on() {
		return
	}
	if err := cb.cfg.Queue.NudgeCallbacks(ctx, now.Add(callbackRecheck), id); err != nil {
		cb.log.Warn("bring a callback forward", "question", id, "err", err)
	}
}

// ended brings the callbacks of the won ends (and refusals) of ids forward
// to now and wakes the dispatcher.
func (cb *callbacks) ended(ctx context.Context, now time.Time, ids ...string) {
	if cb.on() {
		cb.due(ctx, now, ids...)
	}
}

// start runs the dispatcher until ctx is done: a pass every PollEvery, and
// at once when a question with a callback ends on this replica.
func (cb *callbacks) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := cb.clock.NewTicker(cb.cfg.PollEvery)
		defer t.Stop()
		for {
			cb.exec(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
			case <-cb.kick:
			}
		}
	}()
}

// wait returns when the attempts under way are done.
func (cb *callbacks) wait() { cb.work.Wait() }

// exec is one pass: it takes as many due callbacks as it has room for and
// makes an attempt at each in the background.
func (cb *callbacks) exec(ctx context.Context) {
	free := cap(cb.slots) - len(cb.slots)
	if free == 0 || ctx.Err() != nil {
		return
	}
	ids, err := cb.cfg.Queue.ClaimCallbacks(ctx, cb.clock.Now(), cb.cfg.Lease, free)
	if err != nil {
		if ctx.Err() == nil {
			cb.log.Error("take due callbacks", "err", err)
		}
		return
	}
	for _, id := range ids {
		cb.slots <- struct{}{}
		cb.work.Add(1)
		go func() {
			defer cb.work.Done()
			defer func() { <-cb.slots }()
			defer cb.recover("callback", "question", id)
			cb.attempt(id)
		}()
	}
}

// attempt handles one claimed callback. What it leaves undone (Redis
// trouble, a stop) is taken again once the claim lapses.
func (cb *callbacks) attempt(id string) {
	ctx, cancel := context.WithTimeout(cb.halt, cb.cfg.Timeout+cb.cfg.Lease)
	defer cancel()
	q := cb.cfg.Queue
	now := cb.clock.Now()
	a, err := q.BeginCallback(ctx, id, now, cb.cfg.GiveUpAfter, cb.cfg.Timeout+cb.cfg.Lease)
	if err != nil {
		cb.log.Error("begin callback", "question", id, "err", err)
		return
	}
	switch a.Step {
	case CallbackDone:
		err = q.DropCallback(ctx, id)
	case CallbackWait:
		at := now.Add(callbackWaitMax)
		if next := a.Until.Add(callbackEndGrace); !a.Until.IsZero() && next.Before(at) {
			at = now.Add(callbackRecheck)
			if next.After(at) {
				at = next
			}
		}
		err = q.ScheduleCallback(ctx, id, at)
	case CallbackBusy:
		// Looked at again when the attempt under way has run out, if it
		// has not recorded how it went by then.
		err = q.ScheduleCallback(ctx, id, a.Until)
	case CallbackGaveUp:
		cb.failed(ctx, id, fmt.Sprintf("gave up after %d attempts: the question ended %s ago or more", a.Attempt, cb.cfg.GiveUpAfter), true)
		err = q.DropCallback(ctx, id)
	case CallbackPost:
		err = cb.post(ctx, a)
	}
	if err != nil {
		cb.log.Error("callback", "question", id, "err", err)
	}
}

// post makes one attempt and records how it went.
func (cb *callbacks) post(ctx context.Context, a CallbackAttempt) error {
	permanent, perr := cb.send(ctx, a)
	now := cb.clock.Now()
	f := CallbackFinish{ID: a.ID, Attempt: a.Attempt, Now: now, State: CallbackDelivered}
	if perr == nil {
		ok, err := cb.cfg.Queue.FinishCallback(ctx, f)
		if err != nil {
			return fmt.Errorf("record callback delivered: %w", err)
		}
		cb.cfg.Metrics.CallbackDelivered()
		cb.log.Info("callback delivered", "question", a.ID, "attempt", a.Attempt, "latest", ok)
		return nil
	}
	b := retry.Backoff{Min: cb.cfg.MinBackoff, Max: cb.cfg.MaxBackoff}
	var wait time.Duration
	for range max(a.Attempt, 1) {
		wait = b.Next()
	}
	f.Next = now.Add(wait)
	text := fmt.Sprintf("attempt %d: %s", a.Attempt, perr)
	final := permanent || !f.Next.Before(a.Ended.Add(cb.cfg.GiveUpAfter))
	if final {
		f.State = CallbackFailed
		text += "; giving up"
	} else {
		f.State = CallbackRetrying
		text += "; next try in " + wait.Round(time.Second).String()
	}
	f.Error = text
	ok, err := cb.cfg.Queue.FinishCallback(ctx, f)
	cb.failed(ctx, a.ID, text, final)
	if err != nil {
		return fmt.Errorf("record callback attempt: %w", err)
	}
	if !ok {
		cb.log.Info("callback attempt outrun by a later one", "question", a.ID, "attempt", a.Attempt)
	}
	return nil
}

// failed publishes and counts a failed attempt.
func (cb *callbacks) failed(ctx context.Context, id, text string, final bool) {
	if len(text) > maxCallbackError {
		text = text[:maxCallbackError] + "…"
	}
	cb.cfg.Metrics.CallbackFailed(final)
	cb.log.Warn("callback failed", "question", id, "error", text, "final", final)
	if err := cb.publish(ctx, askbridge.Event{Kind: askbridge.EventCallbackFailed, ID: id, Error: text}); err != nil {
		cb.log.Warn("publish callback_failed event", "question", id, "err", err)
	}
}

// send POSTs the result, signed; it returns why it failed, scrubbed of the
// secret and of the URL beyond its host, and whether retrying cannot help
// (permanent: the URL is no longer allowed).
func (cb *callbacks) send(ctx context.Context, a CallbackAttempt) (permanent bool, err error) {
	u, err := askbridge.ParseCallbackURL(a.URL)
	if err != nil {
		return true, err
	}
	if err := cb.cfg.Policy.Check(a.URL); err != nil {
		return true, fmt.Errorf("%w (no longer allowed)", err)
	}
	ts := cb.clock.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Body))
	if err != nil {
		return true, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "askbridge-callback")
	req.Header.Set(askbridge.HeaderWebhookID, a.ID)
	req.Header.Set(askbridge.HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(askbridge.HeaderWebhookSignature, askbridge.CallbackSignature(cb.key, a.ID, ts, a.Body))
	resp, err := cb.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		secrets := []string{cb.cfg.Secret, a.URL, u.RawQuery}
		if len(u.Path) > 1 {
			secrets = append(secrets, u.Path)
		}
		return false, fmt.Errorf("POST to %s: %s", u.Host, redact.New(secrets...).Text(err.Error()))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return false, fmt.Errorf("POST to %s: the receiver answered %s; redirects are not followed: use the final URL as the callback", u.Host, resp.Status)
	}
	return false, fmt.Errorf("POST to %s: the receiver answered %s", u.Host, resp.Status)
}
