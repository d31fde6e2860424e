#!/usr/bin/env bash
# Prints the path of the pinned helm (the one hack/helm-check.sh uses),
# installing it into the tool cache the first time (`go install`, 70 s).
set -euo pipefail
HELM_VERSION=$(sed -n 's/^HELM_VERSION=//p' "$(dirname "${BASH_SOURCE[0]}")/../helm-check.sh")
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}
dir="$cache/tools/helm-$HELM_VERSION"
if [ ! -x "$dir/helm" ]; then
  echo "cluster: installing helm $HELM_VERSION into $dir (first time only, about a minute)" >&2
  mkdir -p "$dir"
  (cd "$dir" && GOFLAGS= GOBIN="$dir" nice go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
fi
echo "$dir/helm"
