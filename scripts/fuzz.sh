#!/usr/bin/env bash
# Runs every fuzz target of the repository's modules for the given time each
# (default 5s), or the given number of runs each ("5000x"), each in the
# module its package belongs to (the nearest go.mod).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-5s}
found=0
while IFS= read -r file; do
	dir=$(dirname "$file")
	mod=$dir
	while [ "$mod" != . ] && [ ! -e "$mod/go.mod" ]; do mod=$(dirname "$mod"); done
	case $dir in
	"$mod") pkg=. ;;
	*) pkg=./${dir#"$mod"/} ;;
	esac
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
		found=1
		echo "fuzz: ./$dir $target ($fuzztime)"
		go -C "$mod" test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=1s "$pkg"
	done
done < <(git ls-files '*_test.go' | sort)
if [ "$found" = 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
