#!/usr/bin/env bash
# Runs every fuzz target of the main module (the nested modules have
# none) for the given time each (default 5s),
# or the given number of runs each ("5000x"). Each package's test binary is
# built once, instrumented for fuzzing, and runs each of its targets in
# turn, as `go test -fuzz` would (from the package's directory, with the
# same corpus cache), so a package with several targets is built and
# linked once, not once per target.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
cache=$(go env GOCACHE)/fuzz
module=$(go list -m)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
found=0
# The packages with fuzz targets, each once.
while IFS= read -r dir; do
	# The package's own test files, not its subdirectories'. (grep finds
	# nothing in most of them: its status 1 is not a failure here.)
	targets=$({ find "$dir" -maxdepth 1 -name '*_test.go' -exec grep -hoE '^func Fuzz[A-Za-z0-9_]+' {} + || true; } |
		awk '{print $2}' | sort)
	[ -n "$targets" ] || continue
	found=1
	pkg=$module
	[ "$dir" = . ] || pkg=$module/$dir
	first=$(echo "$targets" | head -n 1)
	echo "fuzz: build ./$dir"
	go test -c -o "$bin/pkg.test" -fuzz="^${first}\$" "./$dir"
	for target in $targets; do
		echo "fuzz: ./$dir $target ($fuzztime)"
		(cd "$dir" && "$bin/pkg.test" -test.run='^$' -test.fuzz="^${target}\$" \
			-test.fuzztime="$fuzztime" -test.fuzzminimizetime=1s \
			-test.fuzzcachedir="$cache/$pkg" -test.paniconexit0)
	done
done < <(git ls-files '*_test.go' | xargs grep -lE '^func Fuzz' | xargs -n1 dirname | sort -u)
if [ "$found" = 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
