// Package client is the Go side of the agent protocol (docs/redis-protocol.md):
// it asks people questions through an askbridge bridge and waits for their
// answers, using only the public Redis keys of the protocol. It works against
// a single Redis, Sentinel or Redis Cluster: pass any redis.UniversalClient
// (store.Connect makes one from the bridge's own ASKUSER_REDIS_URL forms).
//
// Data flows like this. [Client.Push] (or [Client.Ask], which pushes and
// waits) adds the request to the `<prefix>requests` stream (XADD … ask
// <json>) under an id of its own, generated when the request has none, so a
// retried push never asks twice: the bridge ignores a request whose id it
// already knows ([Client.PushJSON] pushes a request given as JSON exactly as
// it is, under the protocol's default id when it has none). A bridge replica shows the question to a person and, when
// it ends, pushes exactly one result onto `<prefix>result:{<id>}`;
// [Client.Wait] takes it with BLPOP in short rounds ([Options.PollTimeout]),
// so a cancelled context is noticed within a round and a result Redis has
// popped is never dropped on the way. Between rounds Wait reads the question
// hash (`<prefix>question:{<id>}`): it gives up with [ErrNoResult] when the
// question's deadline passed long ago with no bridge ending it, and returns
// the stored result when another waiter already took the one from the list.
// [Client.Cancel] pushes `cancel <id>`; [Client.Answer] and [Client.Skip]
// push `answer <json>`, the answer a person gave in a place the agent shows
// the question itself (the MCP server's form in the agent's own client,
// target "mcp"), which the bridge takes as any answer, first one wins;
// [Client.Status] reads the question
// hash; [Client.Watch] follows the `<prefix>events` stream, resumable from
// any event id.
//
// Outcomes: a question ends answered (the person chose or wrote something),
// with no answer (skipped, timed out, cancelled, undeliverable: the agent
// goes on with its best judgment), or with an error result when the bridge
// refused the request (a field failed validation, an unknown route, too
// many pending questions). [Client.Ask] and [Client.Wait] return a refusal
// as the result together with a *[RefusedError] carrying the bridge's
// message; [Result.Err] gives the same for a result read any other way.
// Any other error means Redis could not be reached, or the context ended.
//
// A Client is safe for concurrent use; it holds no state besides its
// options, and closing the Redis client is the caller's business.
package client
