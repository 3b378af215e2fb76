package email

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/emersion/go-message/mail"
)

// envelope is who an email goes from and to, and how it threads.
type envelope struct {
	From *mail.Address
	To   string
	// MessageID is the email's own id, without angle brackets.
	MessageID string
	// ReplyTo is the Message-ID the email answers (a reminder and a
	// follow-up answer the prompt); empty for a prompt.
	ReplyTo string
	Date    time.Time
}

// messageID is the Message-ID (without angle brackets) of the email of
// kind ("prompt", "end", "remind:<place>:<n>") for place of question id, at
// domain: the same on every replica and every try, so a resend is
// recognisable as the same email.
func messageID(id string, place int, kind, domain string) string {
	sum := sha256.Sum256([]byte(id + "|" + strconv.Itoa(place) + "|" + kind))
	return "askbridge." + hex.EncodeToString(sum[:])[:32] + "@" + domain
}

// compose is the email as the SMTP DATA command carries it: a
// multipart/alternative message with the text part first and the HTML
// part last (the one a reader prefers), both UTF-8 and quoted-printable,
// marked as sent by a machine so that auto-responders keep quiet.
func compose(e envelope, l letter) ([]byte, error) {
	var h mail.Header
	h.SetDate(e.Date)
	h.SetAddressList("From", []*mail.Address{e.From})
	h.SetAddressList("To", []*mail.Address{{Address: e.To}})
	h.SetSubject(l.Subject)
	h.SetMessageID(e.MessageID)
	if e.ReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{e.ReplyTo})
		h.SetMsgIDList("References", []string{e.ReplyTo})
	}
	// RFC 3834: no auto-reply to this; Exchange's own header likewise.
	h.Set("Auto-Submitted", "auto-generated")
	h.Set("X-Auto-Response-Suppress", "All")
	var buf bytes.Buffer
	w, err := mail.CreateInlineWriter(&buf, h)
	if err != nil {
		return nil, fmt.Errorf("email: compose: %w", err)
	}
	for _, p := range []struct{ typ, body string }{{"text/plain", l.Text}, {"text/html", l.HTML}} {
		if err := writePart(w, p.typ, p.body); err != nil {
			return nil, fmt.Errorf("email: compose %s: %w", p.typ, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("email: compose: %w", err)
	}
	return buf.Bytes(), nil
}

// writePart adds one UTF-8 part of type typ to w.
func writePart(w *mail.InlineWriter, typ, body string) error {
	var h mail.InlineHeader
	h.SetContentType(typ, map[string]string{"charset": "utf-8"})
	pw, err := w.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(pw, body); err != nil {
		return err
	}
	return pw.Close()
}
