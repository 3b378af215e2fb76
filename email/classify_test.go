package email

import (
	"errors"
	"net"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/askbridge/askbridge/engine"
)

// TestFailure: how each refusal and failure reaches the engine, in the
// server's words, and what it does to the channel's state.
func TestFailure(t *testing.T) {
	c := &Channel{srv: server{addr: "mail.example.com:587", user: "bridge"}}
	reply := func(code int, enh smtp.EnhancedCode, msg string) error {
		return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
	}
	cases := []struct {
		name   string
		st     stage
		err    error
		kind   engine.ErrorKind
		reason string
		result string
		state  engine.ChannelState
	}{
		{"recipient refused", stageRecipient, reply(550, smtp.EnhancedCode{5, 1, 1}, "no such user"), engine.Permanent,
			"the mail server refused alice@example.com: 550 5.1.1 no such user", ResultRefused, engine.StateConnecting},
		{"recipient deferred", stageRecipient, reply(451, smtp.EnhancedCode{4, 3, 0}, "try later"), engine.Temporary,
			"the mail server deferred alice@example.com: 451 4.3.0 try later", ResultDeferred, engine.StateConnecting},
		{"dot refused, no enhanced code", stageDot, reply(554, smtp.EnhancedCode{}, "spam\nsuspected"), engine.Permanent,
			"the mail server refused the email to alice@example.com: 554 spam suspected", ResultRefused, engine.StateConnecting},
		{"login refused", stageAuth, reply(535, smtp.EnhancedCode{5, 7, 8}, "bad credentials"), engine.Permanent,
			"the mail server mail.example.com:587 refused the login of bridge: 535 5.7.8 bad credentials (check the SMTP user and password)", ResultRefused, engine.StateBadCredentials},
		{"login deferred", stageAuth, reply(454, smtp.EnhancedCode{4, 7, 0}, "busy"), engine.Temporary,
			"the mail server mail.example.com:587 could not log in bridge for now: 454 4.7.0 busy", ResultDeferred, engine.StateConnecting},
		{"unreachable", stageConnect, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, engine.Temporary,
			"could not reach the mail server mail.example.com:587: dial tcp: connection refused", ResultFailed, engine.StateRetrying},
		{"dropped mid-DATA", stageData, errors.New("connection reset by peer"), engine.Temporary,
			"the connection to the mail server mail.example.com:587 failed: connection reset by peer", ResultFailed, engine.StateConnecting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.setState(engine.StateConnecting)
			se := c.failure(tc.st, alice, tc.err)
			if se.Kind != tc.kind || se.Reason != tc.reason || result(se) != tc.result || c.State() != tc.state {
				t.Fatalf("got %v %q %s %s", se.Kind, se.Reason, result(se), c.State())
			}
			if !errors.Is(se, tc.err) {
				t.Fatal("the SendError does not wrap the error")
			}
		})
	}
}
