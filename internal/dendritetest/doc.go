// Package dendritetest runs a real Matrix homeserver for tests: Dendrite
// v0.13.8 (github.com/matrix-org/dendrite, Apache-2.0), built from the Go
// module proxy like a user builds it, started on a free loopback port with
// SQLite, and stopped when the test ends, as internal/redistest runs
// redis-server. The Matrix tests drive people through it with mautrix's
// own client (maunium.net/go/mautrix).
//
// # Building and caching
//
// Binary runs
//
//	CGO_ENABLED=0 GOFLAGS= GOWORK=off go install -trimpath github.com/matrix-org/dendrite/cmd/dendrite@v0.13.8
//
// outside any module, into os.UserCacheDir()/askbridge-test/dendrite-v0.13.8/
// ($XDG_CACHE_HOME, or ~/.cache on Linux). go install pkg@version builds with
// Dendrite's own go.mod and go.sum, checked against the checksum database, so
// the build is the same everywhere and Dendrite never enters askbridge's
// go.mod. v0.13.8 builds unchanged with go1.27.3. With cgo off Dendrite uses
// its pure-Go SQLite driver, modernc.org/sqlite (internal/sqlutil/
// sqlite_native.go; sqlite_cgo.go would need a C compiler for
// mattn/go-sqlite3). A flock on build.lock in that directory makes parallel
// test binaries wait for one build; the binary is renamed into place only
// when complete. ASKBRIDGE_DENDRITE names a binary to use instead.
//
// On a 2-core machine shared with other work, a cold build with the modules
// already downloaded (an empty build cache) took 2m41s; the first build, which
// also downloaded Dendrite's modules while another job installed packages,
// 5m19s. With the binary cached Binary returns at once, and
// scripts/dendrite.sh takes about 2 seconds. Starting a server takes about
// a second; this package's tests take 6 to 20 seconds under -race,
// depending on how busy the machine is. scripts/dendrite.sh builds it
// before `make test` runs the tests (CI starts it beside the linters), so
// the build never counts against a package's test timeout under the race
// detector; a failed build fails the run. Under -short nothing is built:
// Shared returns nil and SkipShort skips.
//
// # The server
//
// Each server has its own directory: the configuration (config.go), a new
// ed25519 signing key, one SQLite file per component, NATS JetStream in
// memory, federation, presence, metrics and search off, the server name
// "localhost", open registration off and a random registration shared
// secret, rate limiting off unless Options.RateLimit says otherwise. It is
// started as its own process group (and, on Linux, killed with the test
// binary) and Close kills the group. Shared gives a package one server from
// TestMain; tests on it register users under names of their own and run in
// parallel. Start gives a test a server of its own (for other Options).
//
// # What Dendrite v0.13.8 does, as the Matrix channel will meet it
//
// The tests in this package check each of these.
//
// Transaction IDs. PUT /rooms/{roomID}/send/{type}/{txnId} repeated answers
// the first request's event ID and posts nothing new, keyed by (access
// token, transaction ID, request path without the txnId), that is per access
// token, room and event type: another event type or room with the same txnId
// posts a new event, and so does the same txnId under a new access token (a
// new login or device). clientapi/routing/sendevent.go (SendEvent:
// FetchTransaction before, AddTransaction after a successful send) and
// internal/transactions/transactions.go (CacheKey). The cache is in the
// process's memory only: a Dendrite restart forgets it, and an entry lives
// 30 to 60 minutes (DefaultCleanupPeriod, two maps cycled). The lookup comes
// before the per-room-and-user send lock and the entry is added after the
// event is sent, so two concurrent requests with the same txnId can both
// post (read in the source, not produced by a test); a sender must not race
// its own retries. A request whose reply was lost, retried with the same
// txnId on the same token, gets the posted event's ID (TestProxyDropsSends).
// The sender's own /sync shows unsigned.transaction_id on its events only
// to the session (access token) that sent them
// (syncapi/storage/shared/storage_consumer.go, StreamEventsToEvents), and
// only in incremental syncs.
//
// Rate limits. client_api.rate_limiting (setup/config/config_clientapi.go;
// enabled by default, threshold 5, cooloff_ms 500) allows each device
// (user ID + device ID; for requests without a token, the remote address
// with its port) threshold requests per cooloff, then answers 429
// {"errcode":"M_LIMIT_EXCEEDED","error":"You are sending too many requests
// too quickly!","retry_after_ms":<cooloff_ms>} with no Retry-After header
// (internal/httputil/rate_limiting.go). Admin and appservice accounts are
// never limited, nor exempt_user_ids. It guards joins, peeks, leaves,
// invites, /register, /login, typing, profile, receipts, read markers and a
// few more (clientapi/routing/routing.go), but not /send: Dendrite cannot
// rate-limit a send on demand. Proxy answers the next N sends to a room
// with 429 {"errcode":"M_LIMIT_EXCEEDED","error":"Too Many Requests",
// "retry_after_ms":N}, and drops a send's connection before or after
// Dendrite handled it.
//
// Polls. Dendrite knows nothing of polls and stores and relays m.poll.start,
// m.poll.response, m.poll.end and their unstable
// org.matrix.msc3381.poll.* forms like any message event: another member's
// /sync returns them with type and content byte-for-byte as sent.
// GET /_matrix/client/v1/rooms/{roomID}/relations/{pollID}/m.reference
// lists the responses and the end, newest first
// (syncapi/routing/relations.go).
//
// Relations in sync. An edit (m.replace) and a thread reply (m.thread, with
// m.in_reply_to) arrive as events of their own with m.relates_to as sent.
// Dendrite does not apply an edit to the original and bundles no
// aggregations: neither sync nor GET /rooms/{roomID}/event/{eventID} puts
// unsigned.m.relations on the original. /relations lists edits and thread
// replies by relation type. (syncapi/consumers/roomserver.go only records
// relations; no code in syncapi builds m.relations.)
//
// Encryption. An m.room.encryption state event is stored and shown in room
// state like any other; Dendrite does not encrypt or refuse anything.
//
// Sync. The sync API learns of events asynchronously from the roomserver
// (through NATS), so a send's reply can come before the event is in
// anyone's /sync. A room whose join lands after the position a sync starts
// from comes back as newly joined: its history with limited=true
// (syncapi/streams/stream_pdu.go). NewTimeline therefore syncs until the
// user's own join has come through, and reads with a 100-event timeline
// filter (the default is 20, syncapi/sync/request.go).
package dendritetest
