// Package email is email as a place (ask-user.md §10): a question shown to
// target "email:<address>" is one email to that address, sent through the
// operator's SMTP server, carrying the person's answer link (internal/link);
// the answer comes back through the link's page on the bridge's web server,
// never by reply.
package email
