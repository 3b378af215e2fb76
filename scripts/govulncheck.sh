#!/usr/bin/env bash
# Reports known vulnerabilities in the code paths of each module given (the
# directories of their go.mod files; default: the main module, "."), with
# govulncheck at a pinned version from the module proxy. Its database comes
# from vuln.go.dev when that can be reached; otherwise it is built here
# from golang.org/x/vulndb at a pinned version, also from the module proxy
# (bump VULNDB_VERSION for newer entries). Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:-v1.9.0}
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
govulncheck=(go run "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION")

modules=("${@:-.}")

# check runs govulncheck with the given flags in every module.
check() {
	local m status=0
	for m in "${modules[@]}"; do
		echo "govulncheck: module $m"
		(cd "$m" && "${govulncheck[@]}" "$@" ./...) || status=1
	done
	return $status
}

if curl -sfI --max-time 15 https://vuln.go.dev/index/db.json.gz >/dev/null 2>&1; then
	echo "govulncheck: database from vuln.go.dev"
	check
	exit
fi

# The database built from a vulndb version is kept (VULNDB_CACHE, default
# under the user's cache directory) and reused: building it takes minutes.
cache=${VULNDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/askbridge/vulndb}/$VULNDB_VERSION
if [ -s "$cache/index/db.json" ]; then
	echo "govulncheck: database built from golang.org/x/vulndb@$VULNDB_VERSION ($cache)"
	check -db "file://$cache"
	exit
fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
echo "govulncheck: vuln.go.dev cannot be reached; building the database from golang.org/x/vulndb@$VULNDB_VERSION"
src=$(go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ] || [ ! -d "$src/data/osv" ]; then
	echo "govulncheck: golang.org/x/vulndb@$VULNDB_VERSION has no data/osv" >&2
	exit 1
fi
# gendb reads the reports from a git repository: make the module one.
cp -r "$src" "$work/vulndb"
chmod -R u+w "$work/vulndb"
git -C "$work/vulndb" init -q
git -C "$work/vulndb" add -A
git -C "$work/vulndb" -c user.name=vulndb -c user.email=vulndb@localhost -c commit.gpgsign=false commit -qm "vulndb $VULNDB_VERSION"
(cd "$work/vulndb" && go run ./cmd/gendb -repo . -out "$work/db" 2>&1 | grep -v '^go: downloading' || true)
if [ ! -s "$work/db/index/db.json" ]; then
	echo "govulncheck: building the database failed" >&2
	exit 1
fi
echo "govulncheck: $(find "$work/db/ID" -name '*.json' | wc -l) entries"
# Kept for the next run: moved into place whole, so a run that dies midway
# leaves no half-written database behind.
mkdir -p "$(dirname "$cache")"
if cp -r "$work/db" "$cache.tmp.$$" && mv -T "$cache.tmp.$$" "$cache" 2>/dev/null; then
	db=$cache
else
	rm -rf "$cache.tmp.$$"
	db=$work/db
fi
check -db "file://$db"
