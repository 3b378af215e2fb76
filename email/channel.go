package email

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"os"
	"strings"
	"sync/atomic"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/internal/retry"
)

// Platform is the platform name of email, as in targets ("email").
const Platform = "email"

// Marks are the store's send marks (store/sendmarks.go): an email cannot
// be taken back or looked up once the server has it, so each send is
// marked in the instant before it is committed. *store.Store implements
// it. Each method blocks on Redis, may be called concurrently and is safe
// to repeat.
type Marks interface {
	// MarkSend marks send name of question id as made, holding value;
	// first is false when it was marked before, held then being that
	// mark's value.
	MarkSend(ctx context.Context, id, name, value string, ttl time.Duration) (held string, first bool, err error)
	// SendMark returns the value of send name of question id, if marked.
	SendMark(ctx context.Context, id, name string) (value string, found bool, err error)
	// ClearSend takes the mark back when it still holds value.
	ClearSend(ctx context.Context, id, name, value string) error
}

// Questions finds an open question from the email that shows it, for a
// reminder (which is handed only the prompt's reference). *store.Store
// implements it. Both methods block on Redis, may be called concurrently
// and are safe to repeat.
type Questions interface {
	QuestionByMessage(ctx context.Context, ref engine.MessageRef) (id string, found bool, err error)
	Get(ctx context.Context, id string) (engine.Record, bool, error)
	// Messages lists the question's recorded messages: a reminder is
	// numbered by the reminders recorded before it.
	Messages(ctx context.Context, id string) ([]engine.MessageRef, error)
}

// Metrics counts what became of each try at an email (one of the Result
// constants). Called concurrently; it must not block.
type Metrics interface {
	Email(result string)
}

// Deps is what the channel works with besides its configuration.
type Deps struct {
	// Links makes the answer links the emails carry.
	Links link.Maker
	// Marks and Questions are the store (*store.Store for both).
	Marks     Marks
	Questions Questions
	// Metrics counts the tries; nil counts nothing.
	Metrics Metrics
	// Logger logs; nil discards.
	Logger *slog.Logger
	// Roots, when set, are the certificates trusted for the server
	// instead of the system's (tests); Config.CAFile adds to either.
	Roots *x509.CertPool
}

// Channel is email as an engine.Channel: one email per place, sent
// through the operator's SMTP server, carrying the person's answer link.
// Nothing comes back by email. Safe for concurrent use.
type Channel struct {
	srv     server
	from    *gomail.Address
	domain  string
	tls     *tls.Config
	timeout time.Duration
	links   link.Maker
	marks   Marks
	qs      Questions
	metrics Metrics
	log     *slog.Logger
	state   atomic.Value // engine.ChannelState
	now     func() time.Time
}

var (
	_ engine.Channel  = (*Channel)(nil)
	_ engine.Reminder = (*Channel)(nil)
)

// New returns the email channel for cfg, which must pass Check. Nothing
// is dialled until Run or the first email.
func New(cfg Config, deps Deps) (*Channel, error) {
	srv, err := cfg.parseServer()
	if err != nil {
		return nil, fmt.Errorf("email: smtpURL: %w", err)
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("email: from %q is not an address such as ask@example.com: %w", cfg.From, err)
	}
	if deps.Links.Signer == nil || deps.Links.Base == "" || deps.Marks == nil || deps.Questions == nil {
		return nil, errors.New("email: the channel needs answer links (a public URL and a link secret) and the store")
	}
	tc, err := tlsConfig(srv.host, cfg.CAFile, deps.Roots)
	if err != nil {
		return nil, err
	}
	c := &Channel{
		srv: srv, from: (*gomail.Address)(from), tls: tc,
		domain:  from.Address[strings.LastIndexByte(from.Address, '@')+1:],
		timeout: cmp.Or(cfg.SendTimeout, DefaultSendTimeout),
		links:   deps.Links, marks: deps.Marks, qs: deps.Questions, metrics: deps.Metrics,
		log: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)).With("platform", Platform),
		now: time.Now,
	}
	c.state.Store(engine.StateConnecting)
	return c, nil
}

// tlsConfig trusts the system's roots (or roots), plus caFile's.
func tlsConfig(host, caFile string, roots *x509.CertPool) (*tls.Config, error) {
	if roots == nil {
		var err error
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
	} else {
		roots = roots.Clone()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("email: caFile: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("email: caFile %s holds no PEM certificate", caFile)
		}
	}
	return &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

// Platform returns "email".
func (c *Channel) Platform() string { return Platform }

// Capabilities of email: no buttons (the answer link is the one control),
// and not local (an email is sent somewhere).
func (c *Channel) Capabilities() engine.Capabilities { return engine.Capabilities{} }

// State is what the last conversation with the server found: connecting
// before the first, connected after one that logged in, bad credentials
// after a refused login, retrying after a server that could not be
// reached.
func (c *Channel) State() engine.ChannelState { return c.state.Load().(engine.ChannelState) }

func (c *Channel) setState(s engine.ChannelState) { c.state.Store(s) }

// Run receives nothing (answers come through the link's page): it checks
// the server at once, and with backoff until a check succeeds, to set the
// state, then waits for ctx. It returns nil when ctx is done.
func (c *Channel) Run(ctx context.Context, _ engine.Inbox) error {
	b := retry.Backoff{Min: time.Second, Max: 5 * time.Minute}
	for ctx.Err() == nil {
		err := c.check(ctx)
		if err == nil {
			break
		}
		c.log.Warn("the mail server cannot be used yet", "err", err)
		if !retry.Sleep(ctx, b.Next()) {
			break
		}
	}
	<-ctx.Done()
	return nil
}

// check has one conversation with the server: connect, TLS, login, QUIT.
func (c *Channel) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.open(ctx)
	if err != nil {
		return err
	}
	c.setState(engine.StateConnected)
	s.close(true)
	return nil
}

// Delete deletes nothing: a reminder sent by email cannot be taken back.
// It always succeeds.
func (c *Channel) Delete(context.Context, engine.MessageRef) error { return nil }

// count counts one try at an email.
func (c *Channel) count(result string) {
	if c.metrics != nil {
		c.metrics.Email(result)
	}
}
