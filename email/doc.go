// Package email is email as a place (ask-user.md §10): a question shown to
// target "email:<address>" is one email to that address, sent through the
// operator's SMTP server, carrying the person's answer link (internal/link);
// the answer comes back through the link's page on the bridge's web server,
// never by reply.
//
// # How an email goes out
//
// The engine calls Send under its delivery lease, as for a chat message.
// Send renders the prompt (render.go: a text and an HTML part from one
// view, in the question's locale), builds the MIME message with
// go-message (compose.go), and has one SMTP conversation with go-smtp
// (smtp.go): connect, TLS (STARTTLS required on smtp://, TLS from the
// first byte on smtps://), AUTH PLAIN, MAIL, RCPT, DATA. The email's
// Message-ID is derived from the question, the place and the kind of
// email, so every try of one email carries the same one.
//
// # Exactly once
//
// An email the server has accepted cannot be taken back or looked up, so
// the record of a send is a mark in the store (Marks.MarkSend), set after
// the whole message is written to the server and before the final "."
// that commits it:
//
//   - a mark already there when Send starts: the email went out before
//     (a replica died before recording it); nothing is sent, and the
//     marked Message-ID is handed to the engine;
//   - a mark made by another send in the meantime: the transaction ends
//     without its "." (the server drops it) and the other's is handed over;
//   - a refused "." (4xx, 5xx), or a "." that never left this host: the
//     mark is taken back and the error returned (the engine retries a
//     4xx, a 5xx makes the place undeliverable with the server's words);
//   - a "." sent whose reply is lost: the email may have gone, so the mark
//     stays and it counts as sent.
//
// The mark holds the Message-ID and a nonce of the try, so a try takes
// back only its own mark. Windows remain where a place counts as sent
// with no email: a replica that dies between the mark and the ".", a
// mark the store cannot take back, and a second send (after the delivery
// lease was lost) that finds the first's mark just before the first's
// "." is refused. An email is sent at most once, never twice.
//
// The follow-up of an ended question (Finish, only with notifyEnd) and the
// reminders (Remind) are marked the same way, so a repeat on any replica
// sends nothing more.
package email
