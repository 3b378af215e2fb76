// Package store is the engine.Store on Redis: all state the bridge
// replicas share, and the public agent protocol of
// shared/spec/redis-protocol.md (docs/redis-protocol.md), implemented
// exactly.
//
// # Data flow
//
// An agent XADDs an `ask` (or `cancel`) entry to <prefix>requests. Every
// replica reads the stream through one consumer group (ReadRequests; the
// group is created on first use, and again if the stream is deleted), with
// its own consumer name. Reads run in a script (read_requests.lua) that
// measures each entry inside Redis: one over askbridge.MaxEntryBytes comes
// back as its size and the first bytes of its ask, so its body never
// reaches a replica; only the blocking read that wakes an idle replica
// takes one entry as it is, and measures it on arrival. The engine creates the question (Create), shows it
// and records each message (AddMessage), and ends it once (End, Reject or
// Sweep); the end pushes the one result JSON onto <prefix>result:{<id>},
// where the agent BLPOPs it. Only then is the entry acknowledged
// (AckRequest, which also deletes it from the stream). An entry a replica
// took and never acknowledged (it died) is claimed by another replica after
// Options.ClaimIdle with XAUTOCLAIM, and Create's idempotency makes the
// redelivery harmless.
//
// # Keys
//
// keys.go builds every key; each function names the Redis type. Public
// (fixed by the protocol):
//
//	<prefix>requests            STREAM  fields ask | cancel
//	<prefix>result:{<id>}       LIST    the one result JSON; expires after the retention
//	<prefix>question:{<id>}     HASH    status, result, request, created, deadline (unix ms)
//	                                    + internal target, answerers, ended, msgs,
//	                                    fence:deliver, fence:finish (its leases' counters),
//	                                    and lease:deliver, lease:deliver<k> (its delivery
//	                                    leases: "<until>:<token>:<holder>", qlease.lua)
//	<prefix>events              STREAM  event, id, at [, platform, chat, message, by, error]; MAXLEN ~ 100000
//
// Internal (free to change):
//
//	<prefix>messages:{<id>}                 LIST    MessageRef JSON per message that showed the question
//	<prefix>deadlines                       ZSET    id → deadline, every pending question (a sweep's
//	                                                claim moves a due id's score 2 s ahead while it
//	                                                ends it); read by Sweep, counted by Pending
//	<prefix>finishing                       ZSET    id → when its end was won; ended questions
//	                                                whose messages are still to be edited
//	<prefix>msg:<platform>:<chat>:<message> STRING  question id; lives as long as the question
//	<prefix>chat:<platform>:<chat>          ZSET    id → created, questions shown in the chat
//	<prefix>seen:<platform>:<event id>      STRING  dedupe mark (FirstSeen), expires after its ttl
//	<prefix>cooldowns                       Pub/Sub channel, no key: "<origin> <platform> <ms> <bucket>",
//	                                                a rate limit's wait shared (ShareCooldown)
//	<prefix>agent:{<agent>}                 ZSET    id → deadline, an agent's pending questions
//	                                                (Admit; only with Options.AgentIndex)
//	<prefix>lease:{<name>}                  HASH    holder, token; expires with the lease
//	<prefix>lease:{<name>}:fence            STRING  INCR counter the lease tokens come from; kept
//	                                                a retention after the lease's last use
//	<prefix>cursor:{<name>}                 STRING  a position, fenced by the lease of that name
//	<prefix>lease:<kind>:{<id>}             HASH    the lease and cursor of a per-question lease
//	<prefix>cursor:<kind>:{<id>}            STRING  (QuestionLease, kind finish or timer), in
//	                                                the question's slot; its counter is the
//	                                                question hash's field fence:<kind>. A
//	                                                delivery lease (kind deliver, deliver<k>)
//	                                                is a field of the question hash instead;
//	                                                its key is only read, for a lease an
//	                                                earlier version holds during an upgrade
//
// The hash of a pending question expires at deadline + retention (set as
// deadline − created + retention from creation, so no clock is compared),
// as a safety net; when the question ends, its hash, result list and
// message list get the retention from then. A chat index expires
// MaxLifetime + Retention after its last write, which is longer than any of
// its questions can stay pending; a Store refreshes that expiry at most once a
// minute per chat (chatttl.go), not at every write. A delivery lease kept in
// the question hash expires by the replicas' clocks ("<until>" against the
// caller's now, as a deadline is judged), not by a Redis TTL.
//
// # Atomic steps and Redis Cluster
//
// Each transition of a question is one Lua script on the question's own
// slot (every per-question key carries the hash tag {<id>}): create.lua,
// end.lua (first writer wins: a question that is not pending returns the
// result that won), reject.lua, add_message.lua, replay.lua (the stored
// result pushed again once the agent took it and asks again). A lease and its cursor
// share the slot of {<name>}; the leases the engine holds on one question
// (QuestionLease(LeaseDeliver, id) and QuestionLease(LeaseFinish, id), named
// "deliver:<id>" and "finish:<id>") are tagged {<id>} instead, so that
// every key of one question, its leases' included, lives in one slot, as
// the protocol promises. Scripts are one file each under lua/, embedded;
// each header lists KEYS, ARGV and returns; "now" comes in as an argument;
// the return codes are read in one place (toOutcome). Keys shared by all
// questions (deadlines, chat, msg) are written by separate idempotent
// commands (ZADD NX, ZREM, SET) next to the scripts.
//
// Time that decides state comes from the caller (the now of End, Reject,
// Sweep, MarkFinishing, Unfinished; the created and deadline of Create).
// The store reads Options.Clock only to age index members without a
// question (OpenInChat's pruning) and to pace ReadRequests's claim scan;
// tests hand it a fake clock. The embedded server expires keys by the wall
// clock, as a real Redis does.
//
// An answer, skip, cancel or any other ending that is not a timeout comes
// too late when the question's deadline is at or before End's now: the
// sweeper lagged, or Redis was briefly down, and the question should have
// expired already. end.lua compares now with the deadline field and then
// writes the timeout result instead, the very one Sweep writes (End hands
// the script both; timeoutResult builds it for both), so whoever ends a
// question at or after its deadline, it ends as no_answer/timeout. That
// call still wins (EndResult.Won, with the timeout as its Result), so the
// caller reads the outcome from Result rather than assume its own was
// stored. A timeout handed to End (Sweep's, or the engine's) is written as
// given.
//
// # Crashes between the steps
//
// A replica may die, or Redis may fail a command, between a script and the
// shared writes next to it. Nothing is left stuck:
//
//   - Create sends, in one pipeline, ZADD NX to the deadlines zset first,
//     then the create script. If it fails half way it returns an error, the
//     engine does not acknowledge the request, and the redelivered request
//     runs Create again: the script finds the question (created false) and
//     the ZADD NX adds the deadline if it was missing; Create then corrects
//     a deadline that the repeat added with its own newer value, and removes
//     the one it added for a question that had already ended. A deadline
//     whose question never came to exist costs nothing lasting: Sweep ends
//     nothing for it and removes it. Members whose hash does not exist are
//     left alone for a minute (unknownGrace), because on a Cluster the
//     pipeline's commands go to different nodes in no fixed order and the
//     hash may still be coming.
//   - End writes the result in its script, then removes the question from
//     the deadlines zset and the chat indexes. If that removal is lost the
//     question is ended all the same: Sweep meets its deadline later, the
//     end script says it already ended, and Sweep drops it; OpenInChat
//     re-checks each member's status and prunes ended ones.
//   - Sweep claims due ids (sweep_claim.lua: ZRANGEBYSCORE ... LIMIT 0 max,
//     so not-yet-due questions cost nothing, and each id's score moved
//     sweepHold ahead, so other sweeps pass over it), runs end.lua with a
//     timeout result for each in one pipeline, and only then removes the
//     ids it settled. A sweeper that dies before the removal leaves the
//     ids to come due again when its claim lapses; the next sweep runs the
//     script again, which ends them or reports them ended, and removes
//     them. A sweep slower than its claim may meet another on the same ids:
//     the script lets exactly one win each question.
//   - A create with messages shown at once (NewQuestion.Shown) writes them
//     in the question hash in its script and their index keys in its
//     pipeline; a failed index write fails the create, and the request
//     handled again records them as AddMessage would.
//   - Create also indexes the question in its target's chat (pipelined),
//     so a tap that comes before the message is recorded finds it, and
//     CreateHolding takes the question's delivery lease in the create
//     script.
//   - AddMessage records the message in the question's list in its script,
//     once per platform message (MessageRef.Same: a ref that differs only in
//     Part is the same message, and the first record wins), then writes the
//     message key and, for a message in another chat than the target's (a
//     DM opened for a user), that chat's index. A repeated AddMessage redoes
//     those writes. AddMessageReleasing also gives up the delivery lease in
//     the same script (the same HSET): the last part of a prompt recorded
//     and the question let go in one step.
//   - AckRequest runs XACK and XDEL for one or several entries in one
//     pipeline. An entry acknowledged
//     but not deleted is never read again (it is not pending, and the group
//     has read past it).
//
// # Counting pending questions
//
// Pending is ZCARD of the deadlines zset: O(1), on a single Redis and on a
// Cluster alike. Every pending question is in the zset from its Create, and
// every end removes it (End's winner right after its script; Sweep after
// settling it), so the count is exact but for short windows: a Create under
// way (its ZADD may land before its hash), a Create that failed half way
// (until the request is redelivered), and an end whose removal was lost
// (until the sweep at the question's deadline, at most MaxLifetime later).
// On a Cluster a cancel that ends a question between its Create's script and
// ZADD (which land on different nodes in no fixed order) leaves the same
// kind of stale member, dropped by the sweep at its deadline.
//
// # Cost
//
// Per answered question, with every store call the engine makes for a tap
// and the agent's XADD and BLPOP: 11 round trips and 30 Redis commands
// (those inside scripts counted), which TestQuestionLifecycleBudget
// enforces; the web page's path (a premade message, no lease, no tap
// lookup) 10 round trips and 26 commands, which TestWebLifecycleBudget
// enforces (both count a request read and acknowledged alone: 2 round trips
// and 4 commands that a burst shares). ReadRequests claims idle entries at most every ClaimIdle/2, so
// a read is normally one script with one XREADGROUP in it. A cap of
// pending questions per agent adds Admit's script and a ZREM at the end. Run BenchmarkQuestionLifecycle for
// the round trips, the commands Redis executes and the memory a pending
// question holds.
//
// # Connections
//
// Connect opens a go-redis UniversalClient from redis://, rediss://,
// unix://, redis-sentinel:// and redis-cluster:// addresses. The embedded
// Redis (embedded.go) runs a redis-server with an append-only file when one
// is on the PATH, and an in-process stand-in (miniredis) otherwise, on a
// loopback port, for running without a Redis of one's own: one replica,
// agents reach it with any Redis client.
package store
