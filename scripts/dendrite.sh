#!/usr/bin/env bash
# Builds Dendrite, the Matrix homeserver the Matrix tests run
# (internal/dendritetest), with go install from the module proxy into
# ~/.cache/askbridge-test, and starts it once to check it. A cold build takes
# minutes, which the Matrix tests must not spend inside their packages' test
# timeout under the race detector; when the cache holds the binary this takes
# a second or two. Two at once build once (the harness holds a lock). A
# failed build fails here. `make test` runs it after scripts/test-deps.sh; CI
# (.ci/run) starts it first, in the background, beside the linters.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "dendrite: build and start (internal/dendritetest)"
if ! out=$("${GO:-go}" test -count=1 -run '^TestBinaryIsTheRelease$' ./internal/dendritetest 2>&1); then
	echo "$out" >&2
	echo "dendrite: building or starting Dendrite failed (above)" >&2
	exit 1
fi
