// Package tscheck checks `askbridge mcp` with a client it shares no code
// with: the official TypeScript SDK's (@modelcontextprotocol/sdk, pinned in
// package-lock.json). check.mjs holds the scenarios, each a run of the SDK's
// Client over StdioClientTransport against the askbridge binary; the Go
// test builds that binary, starts a bridge with no platforms on free
// loopback ports (its embedded Redis), runs every scenario with node and
// plays the person on the bridge's web page (its JSON API, docs/web-api.md).
//
// It is a module of its own, with no requirements, so that nothing of the
// repository's Go code is the check's: it speaks to the server only as an
// MCP client and a person on the web page do. Run it from this directory
// (go test ./...), or with `make test` at the repository's root; README.md
// says more.
package tscheck
