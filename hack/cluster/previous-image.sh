#!/usr/bin/env bash
# Builds the operator image of an earlier commit (default: the last release
# whose pumps ran inside the operator, before each feed ran in pump pods of its own, 0.2.0) with
# that commit's own `make image`, in a temporary git worktree, and caches it
# by commit outside the repository. Prints "ARCHIVE REF" (the OCI archive for
# hack/cluster/load-image.sh and the image reference) on stdout; progress on
# stderr. Idempotent: a warm cache returns at once.
#
#   read -r archive ref < <(bash hack/cluster/previous-image.sh [COMMIT])
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}
commit=$(git -C "$repo" rev-parse --verify "${1:-6d8dea4}^{commit}")
dir="$cache/images/flightfeed-$commit"
if [ ! -s "$dir/image.tar" ] || [ ! -s "$dir/image.ref" ]; then
  mkdir -p "$dir"
  exec 9>"$dir/.lock"
  flock 9
  if [ ! -s "$dir/image.tar" ] || [ ! -s "$dir/image.ref" ]; then
    echo "previous-image: building the image of $commit (first time only)" >&2
    wt=$(mktemp -d)
    trap 'git -C "$repo" worktree remove --force "$wt" >/dev/null 2>&1 || true; rm -rf "$wt"' EXIT
    git -C "$repo" worktree add --detach "$wt" "$commit" >/dev/null 2>&1
    (cd "$wt" && nice make --no-print-directory image IMAGE_ARCHIVE="$dir/image.tar.tmp" IMAGE_REF="$dir/image.ref.tmp") >&2
    mv -f "$dir/image.tar.tmp" "$dir/image.tar"
    mv -f "$dir/image.ref.tmp" "$dir/image.ref"
  fi
fi
echo "$dir/image.tar $(cat "$dir/image.ref")"
