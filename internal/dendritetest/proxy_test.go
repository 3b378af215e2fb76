package dendritetest

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// via returns cli with its requests going to the proxy.
func via(t *testing.T, p *Proxy, cli *mautrix.Client) *mautrix.Client {
	t.Helper()
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	cli.HomeserverURL = u
	return cli
}

func TestProxyLimitsSends(t *testing.T) {
	t.Parallel()
	r := newRoom(t, "limit")
	other := hs.CreateRoom(t, r.bot)
	p := NewProxy(t, hs.URL)
	cli := via(t, p, hs.Client(t, r.bot))
	p.LimitSends(r.id, 2, 1500*time.Millisecond)

	Send(t, cli, other, event.EventMessage, text("another room is not limited"))
	for i := 0; i < 2; i++ {
		_, err := cli.SendMessageEvent(context.Background(), r.id, event.EventMessage, text("limited"))
		var httpErr mautrix.HTTPError
		if !errors.As(err, &httpErr) || httpErr.RespError == nil {
			t.Fatalf("send %d: got %v, want a 429", i+1, err)
		}
		e := httpErr.RespError
		if httpErr.Response.StatusCode != 429 || e.ErrCode != "M_LIMIT_EXCEEDED" || e.Err != "Too Many Requests" || e.ExtraData["retry_after_ms"] != float64(1500) {
			t.Errorf("send %d: %d %+v, want 429 M_LIMIT_EXCEEDED \"Too Many Requests\" retry_after_ms 1500", i+1, httpErr.Response.StatusCode, e)
		}
	}
	Send(t, cli, r.id, event.EventMessage, text("the third passes"))
	if n := p.Forwarded(r.id); n != 1 {
		t.Errorf("%d sends reached Dendrite, want 1 (the limited ones are answered by the proxy)", n)
	}
}

// A send whose reply is lost, repeated with its transaction ID, gets the
// ID of the event the first one posted, and the event is posted once: the
// idempotency a sender relies on after a timeout. A send dropped before it
// reached the homeserver posts nothing.
func TestProxyDropsSends(t *testing.T) {
	t.Parallel()
	r := newRoom(t, "drop")
	p := NewProxy(t, hs.URL)
	cli := via(t, p, hs.Client(t, r.bot))
	aliceTL := NewTimeline(t, r.aliceCli, r.id)
	send := func(txn, body string) (id.EventID, error) {
		resp, err := cli.SendMessageEvent(context.Background(), r.id, event.EventMessage, text(body), mautrix.ReqSendEvent{TransactionID: txn})
		if err != nil {
			return "", err
		}
		return resp.EventID, nil
	}

	p.DropSends(r.id, 1, DropReply)
	if _, err := send("d1", "reply lost"); err == nil {
		t.Fatal("a send whose reply was dropped succeeded")
	}
	first := aliceTL.Next(t, ofType("m.room.message"))
	retried, err := send("d1", "reply lost")
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if retried != first.ID {
		t.Errorf("the retry returned %s, want the event the lost send posted, %s", retried, first.ID)
	}

	p.DropSends(r.id, 1, DropRequest)
	if _, err := send("d2", "request lost"); err == nil {
		t.Fatal("a send dropped before forwarding succeeded")
	}
	second, err := send("d2", "request lost")
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	got := bodies(aliceTL.Upto(t, second))
	if len(got) != 1 || got[0] != "request lost" {
		t.Errorf("after the first event alice saw %q, want only the retried \"request lost\"", got)
	}
	if n := p.Forwarded(r.id); n != 3 {
		t.Errorf("%d sends reached Dendrite, want 3 (the lost reply's, its retry, the second retry)", n)
	}
}
