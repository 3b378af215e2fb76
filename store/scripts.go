package store

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each under lua/. Each opens with a header that
// lists its KEYS, ARGV and return values; every key comes in through KEYS,
// and all KEYS of one script share a hash slot.
var (
	//go:embed lua/*.lua
	luaFS embed.FS

	//go:embed lua/create.lua
	createSrc string
	//go:embed lua/ending.lua
	endingSrc string
	//go:embed lua/end.lua
	endSrc string
	//go:embed lua/reject.lua
	rejectSrc string
	//go:embed lua/add_message.lua
	addMessageSrc string
	//go:embed lua/lease_acquire.lua
	leaseAcquireSrc string
	//go:embed lua/lease_renew.lua
	leaseRenewSrc string
	//go:embed lua/lease_release.lua
	leaseReleaseSrc string
	//go:embed lua/cursor_set.lua
	cursorSetSrc string
	//go:embed lua/text_cursor_set.lua
	textCursorSetSrc string
	//go:embed lua/read_requests.lua
	readRequestsSrc string
	//go:embed lua/admit.lua
	admitSrc string
	//go:embed lua/replay.lua
	replaySrc string
	//go:embed lua/acknowledge.lua
	acknowledgeSrc string
	//go:embed lua/place_failed.lua
	placeFailedSrc string
	//go:embed lua/timers_due.lua
	timersDueSrc string
	//go:embed lua/fire_once.lua
	fireOnceSrc string
	//go:embed lua/vote.lua
	voteSrc string
	//go:embed lua/sweep_claim.lua
	sweepClaimSrc string
	//go:embed lua/offer_open.lua
	offerOpenSrc string
	//go:embed lua/offer_take.lua
	offerTakeSrc string
	//go:embed lua/offer_close.lua
	offerCloseSrc string
	//go:embed lua/standing_set.lua
	standingSetSrc string
	//go:embed lua/standing_use.lua
	standingUseSrc string
	//go:embed lua/standing_revoke.lua
	standingRevokeSrc string
	//go:embed lua/standing_expire.lua
	standingExpireSrc string
	//go:embed lua/standing_note.lua
	standingNoteSrc string
	//go:embed lua/standing_pace.lua
	standingPaceSrc string
	//go:embed lua/send_clear.lua
	sendClearSrc string
	//go:embed lua/qlease.lua
	qleaseSrc string

	createScript        = newScript(createSrc)
	endScript           = newScript(endingSrc + endSrc)
	rejectScript        = newScript(rejectSrc)
	addMessageScript    = newScript(addMessageSrc)
	leaseAcquireScript  = newScript(leaseAcquireSrc)
	leaseRenewScript    = newScript(leaseRenewSrc)
	leaseReleaseScript  = newScript(leaseReleaseSrc)
	qleaseScript        = newScript(qleaseSrc)
	cursorSetScript     = newScript(cursorSetSrc)
	textCursorSetScript = newScript(textCursorSetSrc)
	readRequestsScript  = newScript(readRequestsSrc)
	admitScript         = newScript(admitSrc)
	replayScript        = newScript(replaySrc)
	acknowledgeScript   = newScript(acknowledgeSrc)
	placeFailedScript   = newScript(placeFailedSrc)
	timersDueScript     = newScript(timersDueSrc)
	fireOnceScript      = newScript(fireOnceSrc)
	voteScript          = newScript(endingSrc + voteSrc)
	sweepClaimScript    = newScript(sweepClaimSrc)

	offerOpenScript      = newScript(offerOpenSrc)
	offerTakeScript      = newScript(offerTakeSrc)
	offerCloseScript     = newScript(offerCloseSrc)
	standingSetScript    = newScript(standingSetSrc)
	standingUseScript    = newScript(standingUseSrc)
	standingRevokeScript = newScript(standingRevokeSrc)
	standingExpireScript = newScript(standingExpireSrc)
	standingNoteScript   = newScript(standingNoteSrc)
	standingPaceScript   = newScript(standingPaceSrc)

	sendClearScript = newScript(sendClearSrc)
)

// script is one Lua script with its source, kept to resend it when a
// server lost its script cache in the middle of a pipeline.
type script struct {
	src string
	rs  *redis.Script
}

func newScript(src string) *script { return &script{src: src, rs: redis.NewScript(src)} }

// run runs the script alone: EVALSHA, and EVAL when the server answers
// NOSCRIPT.
func (s *script) run(ctx context.Context, rdb redis.Scripter, keys []string, args ...any) (any, error) {
	return s.rs.Run(ctx, rdb, keys, args...).Result()
}

// outcome is what a script did. Every script signals it with the integer
// that opens its reply (or is its whole reply); toOutcome is the one place
// those integers are read.
type outcome int

const (
	// outDone: the script made its change (created, won, added, renewed,
	// released, written).
	outDone outcome = iota + 1
	// outKept: nothing changed because the state already decided otherwise
	// (the id was known, the question had ended, the message was recorded,
	// the lease belongs to someone else).
	outKept
	// outMissing: no such question.
	outMissing
	// outFull: the question already has the most messages kept.
	outFull
)

// toOutcome maps a script's return code to its outcome. The codes are those
// in the scripts' headers: 1 done, 0 kept, -1 missing, -2 full.
func toOutcome(code int64) (outcome, error) {
	switch code {
	case 1:
		return outDone, nil
	case 0:
		return outKept, nil
	case -1:
		return outMissing, nil
	case -2:
		return outFull, nil
	}
	return 0, fmt.Errorf("unexpected script return code %d", code)
}

// reply splits a script's table reply into its outcome and the rest. A bare
// integer reply is an outcome with no rest.
func reply(v any) (outcome, []any, error) {
	switch r := v.(type) {
	case int64:
		o, err := toOutcome(r)
		return o, nil, err
	case []any:
		if len(r) == 0 {
			return 0, nil, fmt.Errorf("empty script reply")
		}
		code, ok := r[0].(int64)
		if !ok {
			return 0, nil, fmt.Errorf("script reply opens with %T, want an integer", r[0])
		}
		o, err := toOutcome(code)
		return o, r[1:], err
	}
	return 0, nil, fmt.Errorf("unexpected script reply %T", v)
}

// queued is a script call sent in a pipeline with EVALSHA.
type queued struct {
	s    *script
	keys []string
	args []any
	cmd  *redis.Cmd
}

// queue adds the script to pipe as EVALSHA.
func (s *script) queue(ctx context.Context, pipe redis.Pipeliner, keys []string, args ...any) *queued {
	return &queued{s: s, keys: keys, args: args, cmd: pipe.EvalSha(ctx, s.rs.Hash(), keys, args...)}
}

// noScript reports whether the server did not know the script, so the
// call did not run (its script cache was flushed, or a cluster node is new).
func (q *queued) noScript() bool { return redis.HasErrorPrefix(q.cmd.Err(), "NOSCRIPT") }

// runQueued runs many queued calls, already in pipe, and returns each reply
// or error in order. The calls answered NOSCRIPT are sent again together,
// in full, in a second pipeline.
func runQueued(ctx context.Context, rdb redis.UniversalClient, pipe redis.Pipeliner, calls []*queued) ([]any, []error) {
	vals := make([]any, len(calls))
	errs := make([]error, len(calls))
	_, _ = pipe.Exec(ctx)
	var again []int
	for i, q := range calls {
		if q.noScript() {
			again = append(again, i)
			continue
		}
		vals[i], errs[i] = q.cmd.Result()
	}
	if len(again) == 0 {
		return vals, errs
	}
	retry := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(again))
	for j, i := range again {
		cmds[j] = retry.Eval(ctx, calls[i].s.src, calls[i].keys, calls[i].args...)
	}
	_, _ = retry.Exec(ctx)
	for j, i := range again {
		vals[i], errs[i] = cmds[j].Result()
	}
	return vals, errs
}
