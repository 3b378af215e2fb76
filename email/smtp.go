package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/askbridge/askbridge/engine"
)

// watchedConn is the TCP connection under an SMTP session (and under its
// TLS): once armed, it notes whether a write failed, which tells a
// message whose final "." never left this host (not sent) from one
// whose reply was lost (perhaps sent).
type watchedConn struct {
	net.Conn
	armed, failed atomic.Bool
}

func (c *watchedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil && c.armed.Load() {
		c.failed.Store(true)
	}
	return n, err
}

// session is one SMTP conversation, over TLS, logged in when the
// configuration has a user.
type session struct {
	conn   *watchedConn
	client *smtp.Client
	// stop undoes the watch that closes conn when the context ends.
	stop func() bool
}

// close ends the conversation: QUIT when polite is set, then the
// connection is closed either way.
func (s *session) close(polite bool) {
	s.stop()
	if polite {
		_ = s.client.Quit()
	}
	_ = s.client.Close()
}

// open dials the server, secures the connection (STARTTLS, required, or
// TLS from the start) and logs in. ctx bounds the whole conversation: the
// connection is closed when it ends. Errors are *engine.SendError.
func (c *Channel) open(ctx context.Context) (*session, error) {
	d := net.Dialer{}
	raw, err := d.DialContext(ctx, "tcp", c.srv.addr)
	if err != nil {
		return nil, c.failure(stageConnect, "", err)
	}
	conn := &watchedConn{Conn: raw}
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	client, err := c.secure(conn)
	if err != nil {
		stop()
		_ = raw.Close()
		return nil, err
	}
	client.CommandTimeout, client.SubmissionTimeout = c.timeout, c.timeout
	s := &session{conn: conn, client: client, stop: stop}
	// Over TLS the client greets again, naming the sender's domain
	// (go-smtp says "localhost" in the greeting before STARTTLS).
	if err := client.Hello(c.domain); err != nil {
		s.close(false)
		return nil, c.failure(stageConnect, "", err)
	}
	if c.srv.user != "" {
		if err := client.Auth(sasl.NewPlainClient("", c.srv.user, c.srv.password)); err != nil {
			s.close(false)
			return nil, c.failure(stageAuth, "", err)
		}
	}
	return s, nil
}

// secure starts TLS on conn: at once for smtps://, with STARTTLS for
// smtp:// (a server that does not offer it is refused: nothing is ever
// sent in clear text, the login least of all).
func (c *Channel) secure(conn net.Conn) (*smtp.Client, error) {
	if c.srv.implicitTLS {
		tc := tls.Client(conn, c.tls)
		if err := tc.Handshake(); err != nil {
			return nil, c.failure(stageConnect, "", err)
		}
		return smtp.NewClient(tc), nil
	}
	client, err := smtp.NewClientStartTLS(conn, c.tls)
	if err != nil {
		var se *smtp.SMTPError
		var ne net.Error
		// go-smtp says so in words only: its one error that is neither
		// the server's reply nor the network's.
		if !errors.As(err, &se) && !errors.As(err, &ne) && strings.Contains(err.Error(), "STARTTLS") {
			return nil, c.failure(stageNoTLS, "", err)
		}
		return nil, c.failure(stageConnect, "", err)
	}
	if _, ok := client.TLSConnectionState(); !ok {
		_ = client.Close()
		return nil, c.failure(stageNoTLS, "", errors.New("no TLS after STARTTLS"))
	}
	return client, nil
}

// stage is the step of an SMTP conversation an error came from.
type stage int

const (
	stageConnect stage = iota
	stageNoTLS
	stageAuth
	stageSender
	stageRecipient
	stageData
	stageDot
)

// Results of one try at an email, as Metrics.Email counts them.
const (
	// ResultSent: the server accepted the email.
	ResultSent = "sent"
	// ResultUnconfirmed: the email's final "." went out but the reply was
	// lost (the connection dropped, the time ran out): it may have been
	// sent, so it counts as sent and is never sent again.
	ResultUnconfirmed = "unconfirmed"
	// ResultResumed: a mark showed the email was sent before (by this or
	// another replica): not sent again.
	ResultResumed = "resumed"
	// ResultRefused: the server refused for good (5xx).
	ResultRefused = "refused"
	// ResultDeferred: the server refused for now (4xx); the engine retries.
	ResultDeferred = "deferred"
	// ResultFailed: the server could not be reached, TLS failed, or the
	// connection dropped before the email was out; the engine retries.
	ResultFailed = "failed"
)

// failure classifies err, from stage of a conversation about an email
// to rcpt, as the engine reacts to it (a *engine.SendError, Reason in the
// server's words), and sets the channel's state by it.
func (c *Channel) failure(st stage, rcpt string, err error) *engine.SendError {
	var se *smtp.SMTPError
	if errors.As(err, &se) && st != stageConnect && st != stageNoTLS {
		return c.refusal(st, rcpt, se)
	}
	switch st {
	case stageNoTLS:
		c.setState(engine.StateRetrying)
		return &engine.SendError{Kind: engine.Permanent, Err: err, Reason: fmt.Sprintf(
			"the mail server %s does not offer STARTTLS, and the bridge sends no email in clear text: use a server that offers it, or smtps://", c.srv.addr)}
	case stageConnect:
		c.setState(engine.StateRetrying)
		return &engine.SendError{Kind: engine.Temporary, Err: err, Reason: fmt.Sprintf("could not reach the mail server %s: %v", c.srv.addr, err)}
	}
	return &engine.SendError{Kind: engine.Temporary, Err: err, Reason: fmt.Sprintf("the connection to the mail server %s failed: %v", c.srv.addr, err)}
}

// refusal is the server's own refusal se at stage st, for rcpt.
func (c *Channel) refusal(st stage, rcpt string, se *smtp.SMTPError) *engine.SendError {
	words := replyWords(se)
	kind := engine.Temporary
	if se.Code >= 500 {
		kind = engine.Permanent
	}
	var reason string
	switch {
	case st == stageAuth && kind == engine.Permanent:
		c.setState(engine.StateBadCredentials)
		reason = fmt.Sprintf("the mail server %s refused the login of %s: %s (check the SMTP user and password)", c.srv.addr, c.srv.user, words)
	case st == stageAuth:
		reason = fmt.Sprintf("the mail server %s could not log in %s for now: %s", c.srv.addr, c.srv.user, words)
	case st == stageRecipient && kind == engine.Permanent:
		reason = fmt.Sprintf("the mail server refused %s: %s", rcpt, words)
	case st == stageRecipient:
		reason = fmt.Sprintf("the mail server deferred %s: %s", rcpt, words)
	case kind == engine.Permanent:
		reason = fmt.Sprintf("the mail server refused the email to %s: %s", rcpt, words)
	default:
		reason = fmt.Sprintf("the mail server deferred the email to %s: %s", rcpt, words)
	}
	return &engine.SendError{Kind: kind, Err: se, Reason: reason}
}

// replyWords is an SMTP reply as the server said it: "550 5.1.1 no such
// user".
func replyWords(se *smtp.SMTPError) string {
	words := fmt.Sprintf("%d", se.Code)
	if e := se.EnhancedCode; e[0] > 0 {
		words += fmt.Sprintf(" %d.%d.%d", e[0], e[1], e[2])
	}
	if msg := oneLine(se.Message); msg != "" {
		words += " " + msg
	}
	return words
}

// result is how Metrics.Email counts a try that failed with err.
func result(err *engine.SendError) string {
	var se *smtp.SMTPError
	switch {
	case !errors.As(err, &se):
		return ResultFailed
	case se.Code >= 500:
		return ResultRefused
	}
	return ResultDeferred
}

// isReply reports whether err is the server's reply (not the network's).
func isReply(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se)
}
