// Package mcp serves askbridge to AI agents as a Model Context Protocol
// server (built on the official Go SDK, github.com/modelcontextprotocol/go-sdk):
// the tool ask_user, that asks a person a structured question through a
// bridge and returns the answer (docs/mcp.md says how to register it in
// Claude Code, Claude Desktop or Cursor).
//
// Data flows like this. A model calls ask_user with the request of
// docs/ask-user.md §1 (questions, timeoutSeconds) and the optional to,
// answerers and agent of the protocol. The server checks it with the
// bridge's own validator (askbridge.DecodeRequest), so a bad field comes
// back at once as a tool error naming the field; fills in the configured
// default route and agent name; and pushes it through the agent protocol
// with the client package, under an id of its own. It then waits for the
// one result, which it returns as the tool's structured content (the
// result JSON exactly as the bridge pushed it) with a one-line summary
// ("answered: deploy_target = Production", "no_answer (timeout): …").
//
// While it waits it holds no Redis connection: one follower per server
// reads the events stream for every waiting call (one XREAD at a time,
// only while a call waits) and hands each call the events of its own
// question, which wake its wait (client.Client.WaitNotified takes the
// result then, or every few seconds without an event) and tell its
// progress. When the client sent a progress token, the call reports where
// the question is and how long is left at least every
// Options.ProgressEvery (15 s by default), so clients with request
// timeouts keep waiting. At most Options.MaxCalls calls wait at once;
// one more is refused at once (a tool error, or 503 over HTTP). A call the client cancels (or whose HTTP
// request goes away, or that is in flight when the server closes) cancels
// its question, and returns the cancelled result. A request no bridge
// takes within Options.NotTakenAfter is cancelled and reported as a tool
// error that says to start a bridge or fix the Redis address; a request
// the bridge refuses is a tool error with the bridge's message. No call
// waits longer than its question's timeout and a short grace.
//
// A client that declared form elicitation also gets the question as a
// form (relay.go): while the call waits, the server sends it
// elicitation/create and withdraws it when another place answers first;
// on protocol 2026-07-28 the call returns the form at once and the client
// answers it by calling again, with a request state the server signed.
// The form's answer goes to the bridge as an answer entry
// (client.Client.Answer), so the bridge decides, first writer wins, as
// for any place. No call waits longer than Options.MaxWait (wait.go): a
// question still open then makes the call return {"status":"pending"},
// and the second tool, wait_for_answer, waits again, on any server of the
// same Redis. Each question is a resource, askbridge://questions/{id}
// (resource.go).
//
// Two transports: [Server.ServeStdio] (what `askbridge mcp` runs, for desktop
// clients that start the server as a subprocess) and [Server.Handler], the
// streamable HTTP transport the bridge mounts at /mcp behind its web page's
// token or loopback wall. The HTTP transport is stateless, so any replica
// of the bridge serves any request.
package mcp
