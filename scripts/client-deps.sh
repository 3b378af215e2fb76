#!/usr/bin/env bash
# Measures what an agent's build downloads for the client package: a
# one-file program importing github.com/askbridge/askbridge/client, with a
# go.mod that requires the module and replaces it with a checkout (default:
# this repository), built with a fresh, empty module cache. It prints how
# many module versions were downloaded whole (.zip) and as go.mod only,
# and the cache's size, after `go mod tidy && go build` and again after
# `go list -m all` (which reads the go.mod of every module in the agent's
# module graph). The replace with a local path still reads the module's
# go.mod requirements, as a published version's would be.
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
# The toolchain go.mod asks for, run directly, so that the empty module
# cache does not fetch a toolchain too.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}
gobin=$(cd "$repo" && go env GOROOT)/bin/go
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
export GOTOOLCHAIN=local GOMODCACHE=$work/modcache GOCACHE=$work/gocache GOFLAGS=-mod=mod
mkdir "$work/agent"
cd "$work/agent"
cat >main.go <<'GO'
package main

import "github.com/askbridge/askbridge/client"

func main() { _ = client.New }
GO
cat >go.mod <<MOD
module example.com/agent

go 1.26.0

require github.com/askbridge/askbridge v0.0.0

replace github.com/askbridge/askbridge => $repo
MOD
count() {
	local dl=$GOMODCACHE/cache/download zips modonly=0 m
	zips=$(find "$dl" -name '*.zip' | wc -l)
	while IFS= read -r m; do [ -e "${m%.mod}.zip" ] || modonly=$((modonly + 1)); done < <(find "$dl" -name '*.mod')
	echo "client-deps: after $1: $zips module versions with .zip, $modonly with only .mod; cache/download $(du -sh "$dl" | cut -f1), module cache $(du -sh "$GOMODCACHE" | cut -f1)"
}
"$gobin" version
"$gobin" mod tidy 2>&1 | { grep -v '^go: downloading' || true; }
"$gobin" build -o /dev/null .
count "go mod tidy && go build"
echo "client-deps: the agent's go.mod: $(grep -c '// indirect' go.mod) indirect requirements"
echo "client-deps: go list -m all: $("$gobin" list -m all | wc -l) modules"
count "go list -m all"
