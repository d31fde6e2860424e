#!/usr/bin/env bash
# Makes a release into DIST (default dist/), from the work tree, without a
# Docker engine and without the network (Go modules and the pinned helm come
# from their caches, as for the tests):
#
#   flightfeed-image-VERSION.tar        the operator's image, an OCI archive tagged VERSION
#                                       (make image: hack/image, this machine's architecture)
#   flightfeed-VERSION.tgz              the chart (helm package of a copy whose version,
#                                       appVersion and image.tag are VERSION)
#   kubectl-flightfeed_OS_ARCH.tar.gz   the plugin per PLUGIN_PLATFORMS (make plugin-dist), with
#     and .sha256                       its completion script for kubectl (not on windows) and LICENSE
#   flightfeed.yaml                     the krew manifest with those archives' sha256
#   flightfeed-VERSION.sbom.cdx.json    CycloneDX SBOM of the Go modules in the binaries
#   SHA256SUMS                          over every other file
#
# Every binary says VERSION and the commit (internal/buildinfo, -X). The
# repository's files are not changed. A work tree with uncommitted changes
# is refused unless ALLOW_DIRTY=1 (then the binaries say COMMIT-dirty).
#
#   make release VERSION=x.y.z    (runs this; docs/development.md, "Making a release")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

fail() { echo "release: $*" >&2; exit 1; }
version=${VERSION:-}
[[ $version =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  { echo "release: VERSION must be a release version x.y.z (got '$version'): make release VERSION=x.y.z" >&2; exit 2; }
dist=${DIST:-dist}
platforms=${PLUGIN_PLATFORMS:?PLUGIN_PLATFORMS (the Makefile sets it)}

commit=$(git rev-parse HEAD) || fail "not a git checkout: the release names its commit"
if [ -n "$(git status --porcelain)" ]; then
  [ "${ALLOW_DIRTY:-}" = 1 ] || { git status --short >&2; fail "the work tree has uncommitted changes: commit them (or ALLOW_DIRTY=1 for a trial run)"; }
  commit=$commit-dirty
fi

start=$(date +%s)
step() { echo "== release $version: $* ($(( $(date +%s) - start ))s)" >&2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$dist"
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
stamp=(VERSION="$version" COMMIT="$commit")

step "tools"
helm=$(bash hack/cluster/helm.sh)
go build -o "$work/release" ./hack/release

step "image"
make --no-print-directory image "${stamp[@]}" IMAGE_TAG="$version" IMAGE_BINARY="$work/linux/flightfeed" \
  IMAGE_ARCHIVE="$dist/flightfeed-image-$version.tar" IMAGE_REF="$work/image.ref" >&2

step "plugin archives ($platforms)"
make --no-print-directory plugin-dist "${stamp[@]}" DIST="$dist" PLUGIN_PLATFORMS="$platforms" RELEASE_TOOL="$work/release" >&2

step "chart"
# A copy, so the repository's Chart.yaml and values.yaml stay as they are:
# its version, appVersion and image.tag's default are VERSION, and its README
# (generated from both) says so.
cp -r charts/flightfeed "$work/flightfeed"
chart_yaml="$work/flightfeed/Chart.yaml"
sed -i -e 's/^version: .*/version: '"$version"'/' -e 's/^appVersion: .*/appVersion: "'"$version"'"/' "$chart_yaml"
[ "$(grep -cE "^(version: $version|appVersion: \"$version\")\$" "$chart_yaml")" = 2 ] ||
  fail "could not set version and appVersion in the chart's Chart.yaml"
values="$work/flightfeed/values.yaml"
sed -i '/^image:$/,/^[^ #]/ s/^  tag: ""$/  tag: "'"$version"'"/' "$values"
[ "$(sed -n '/^image:$/,/^[^ #]/ p' "$values" | grep -c "^  tag: \"$version\"\$")" = 1 ] ||
  fail "could not set image.tag in the chart's values.yaml (expected the line '  tag: \"\"' under image:)"
go run ./hack/chartdocs "$work/flightfeed" >&2
"$helm" package "$work/flightfeed" --destination "$dist" >&2
[ -s "$dist/flightfeed-$version.tgz" ] || fail "helm package wrote no $dist/flightfeed-$version.tgz"

step "krew manifest"
"$work/release" krew -version "$version" -dist "$dist" -platforms "$platforms"

step "SBOM"
"$work/release" sbom -version "$version" -commit "$commit" -out "$dist/flightfeed-$version.sbom.cdx.json" \
  "$work/linux/flightfeed" "$dist"/kubectl-flightfeed_*.tar.gz

step "SHA256SUMS"
"$work/release" sums -dist "$dist"
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not check"

step "done: $dist"
ls -l "$dist" >&2
