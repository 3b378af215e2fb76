// Package chaos is the bridge's fault suite: it runs real replicas as
// processes (this package's test binary started again, see runReplica),
// each an engine and a Telegram channel as cmd/bridge wires them, on a real
// redis-server and the in-repo fake Telegram (internal/telegramtest),
// and breaks things under them while questions flow:
//
//   - TestKillReplicasDuringBurst: one of three replicas SIGKILLed (the
//     poller every other time) every two seconds and started again, during
//     a burst of 150 questions tapped as they appear;
//   - TestRedisRestartKeepsQuestions: Redis crashed and restarted from its
//     append-only file (appendfsync always) with questions pending;
//   - TestRedisOutageLosesNoTapOrReply: Redis unreachable for five seconds
//     while people tap and reply;
//   - TestTelegramFailingCalls: 30% of Bot API calls failing with 502 for
//     ten seconds during a burst;
//   - TestPausedPollerNeverPollsBeside: the polling replica SIGSTOPped for
//     longer than its lease, then SIGCONTed;
//   - TestRedisConnectionsCut: every Redis connection cut twice mid-burst.
//
// What the suite proves is counts and end states, never timings: every
// question ends exactly once (one result on its list), each prompt is
// posted once (but for a replica killed in the instant between Telegram
// taking a prompt and the bridge recording it: the prompt is posted again,
// and the first copy is adopted when tapped), each tap is answered once, nothing a person does is lost
// without a word (it answers, or the person is told to try again), no
// prompt keeps live buttons, and never two replicas poll Telegram at once.
//
// Each scenario runs in seconds; the suite needs redis-server on the PATH
// (it fails without it). Run one scenario with
//
//	go test -race -count=1 -run TestRedisConnectionsCut ./telegram/chaos/
//
// and set ASKBRIDGE_CHAOS_VERBOSE=1 to have the replicas log at Debug; the
// end of every replica's log is shown when a scenario fails.
package chaos
