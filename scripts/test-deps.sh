#!/usr/bin/env bash
# Checks for what the full tests need: redis-server and redis-cli (the
# store, platform and chaos tests), Chromium and Thai fonts (the web page's
# browser tests), python3-redis, Node and npm (the examples, run against a
# real bridge, and the MCP server's check with the TypeScript SDK), and
# their npm dependencies (npm ci in examples/node and mcp/tscheck). As root it installs the missing Debian packages; as
# anyone else it prints the one command that installs them and fails.
# `make test` and CI (.ci/run) run it first, and then scripts/dendrite.sh,
# which builds the Matrix homeserver the Matrix tests run.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# Thai glyphs for the web page's Thai screenshot test (web/browsertest/browser_test.go).
# (grep reads all of fc-list's output: with -q it would stop at the first
# match, and pipefail would take fc-list's SIGPIPE for a missing font.)
fc-list 2>/dev/null | grep -i 'tlwg' >/dev/null || need_apt+=(fonts-thai-tlwg)
# The Python and Node examples run against a real bridge (examples/).
{ python3 -c 'import redis' || /usr/bin/python3 -c 'import redis'; } >/dev/null 2>&1 || need_apt+=(python3-redis)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)

if [ ${#need_apt[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "test-deps: the tests need ${need_apt[*]}; install them with:" >&2
		echo "  sudo apt-get install -y ${need_apt[*]}" >&2
		exit 1
	fi
	echo "test-deps: installing ${need_apt[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The npm dependencies of the Node example and of the TypeScript SDK check,
# exactly as locked (each skipped when its node_modules matches the lock
# file npm ci last installed).
for dir in examples/node mcp/tscheck; do
	lock=$dir/package-lock.json
	stamp=$dir/node_modules/.package-lock.json
	if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
		echo "test-deps: npm ci ($dir)"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	fi
done

