#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver + etcd) from Go modules and
# caches it outside the repository, keyed by version. No download site for the
# prebuilt binaries is reachable here, so they are compiled from the tool
# modules under hack/tools/. Idempotent: a warm cache returns at once.
#
# Prints the assets folder (usable as KUBEBUILDER_ASSETS) on stdout; progress
# goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}

kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$here/tools/kube-apiserver/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$here/tools/etcd/go.mod")
[ -n "$kube_version" ] && [ -n "$etcd_version" ] || { echo "envtest-assets: cannot read tool versions" >&2; exit 1; }

assets="$cache/envtest/k8s-${kube_version}-etcd-${etcd_version}"
mkdir -p "$assets"
# One build at a time: a second caller (another test run on this machine)
# waits for the first and then finds the binaries cached.
exec 9>"$assets/.lock"
flock 9

build() { # name module-dir package
  local name=$1 dir=$2 pkg=$3
  if [ -x "$assets/$name" ]; then return 0; fi
  echo "envtest-assets: building $name ($pkg) into $assets (first time only, several minutes)" >&2
  local tmp="$assets/.$name.tmp.$$"
  (cd "$dir" && go build -trimpath -o "$tmp" "$pkg")
  mv -f "$tmp" "$assets/$name"
}

# etcd first: it is quick, and a failure here shows before the long build.
build etcd "$here/tools/etcd" go.etcd.io/etcd/server/v3
build kube-apiserver "$here/tools/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver

# envtest itself needs only the two binaries; kubectl beside them is a
# convenience for poking at a test control plane by hand.
if [ ! -e "$assets/kubectl" ] && command -v kubectl >/dev/null 2>&1; then
  ln -sf "$(command -v kubectl)" "$assets/kubectl"
fi

echo "$assets"
