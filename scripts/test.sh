#!/usr/bin/env bash
# Runs every test of every module given (the directories of their go.mod
# files), with the race detector: the first module in one lane and the
# others, one after another, in a second lane at the same time. Much of each
# module's time is waiting (on fake servers, timers, Chromium), so two lanes
# finish well before one on a machine of few cores. Each module's output is
# printed whole once it is done, under its name; the run fails if any
# module fails, or if the tests left the working tree otherwise than they
# found it (a test writes only under a temporary directory or the ignored
# artifacts/; a kept file is rewritten only with -update). `make test` runs
# it after scripts/test-deps.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
[ $# -gt 0 ] || set -- .
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# What the working tree looks like before (changes and files not ignored).
tree() { git status --porcelain=v1 --untracked-files=all 2>/dev/null || true; }
before=$(tree)

# lane tests the modules given, one after another, and prints each one's
# output when it is done; it fails if any of them failed.
lane() {
	local m status=0 log
	for m in "$@"; do
		log="$out/$(printf '%s' "$m" | tr -c 'A-Za-z0-9' _).log"
		if "$GO" -C "$m" test -race -count=1 ./... >"$log" 2>&1; then
			printf '== %s: ok\n' "$m"
		else
			printf '== %s: FAILED\n' "$m"
			status=1
		fi
		cat "$log"
	done
	return $status
}

first=$1
shift
pids=()
lane "$first" &
pids+=($!)
if [ $# -gt 0 ]; then
	lane "$@" &
	pids+=($!)
fi
status=0
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
if [ "$(tree)" != "$before" ]; then
	echo "== the tests changed the working tree:" >&2
	diff <(printf '%s\n' "$before") <(tree) >&2 || true
	status=1
fi
exit $status
