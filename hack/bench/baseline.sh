#!/usr/bin/env bash
# Builds the flightfeed binary of a baseline revision for `make bench-compare`
# and prints its path. The revision is $1, or by default the previous
# release: the newest tag vX.Y.Z before HEAD, or without tags the newest
# release commit ("release x.y.z: …") that is not HEAD itself.
# Built once per commit from `git archive` (the work tree is not touched),
# cached in $FLIGHTFEED_CACHE/bench/COMMIT/flightfeed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

rev=${1:-}
if [ -z "$rev" ]; then
  rev=$(git describe --tags --abbrev=0 --match 'v[0-9]*.[0-9]*.[0-9]*' HEAD~1 2>/dev/null ||
    git log --format=%H -E --grep='^release [0-9]+\.[0-9]+\.[0-9]+:' HEAD~1 -1)
  [ -n "$rev" ] || { echo "baseline.sh: no release commit before HEAD; name a revision" >&2; exit 2; }
fi
commit=$(git rev-parse --verify "$rev^{commit}") || { echo "baseline.sh: $rev is not a commit" >&2; exit 2; }
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}/bench/$commit
bin=$cache/flightfeed
if [ ! -x "$bin" ]; then
  echo "baseline.sh: building $(git log -1 --format='%h %s' "$commit" | cut -c1-72)" >&2
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  git archive "$commit" | tar -x -C "$src"
  mkdir -p "$cache"
  (cd "$src" && go build -o "$bin.tmp" .)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
