#!/usr/bin/env bash
# Builds the binaries of the local single-node cluster once and caches them
# outside the repository, keyed by version: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kube-proxy from Go
# modules (the tool modules hack/tools/kubernetes and hack/tools/etcd), with
# version ldflags so the server reports the real release (Helm checks the
# chart's kubeVersion against it), and a static pause binary for the sandbox
# image. No download site for prebuilt binaries is reachable here.
#
# Prints the bin folder on stdout; progress, one line per step, on stderr.
# Idempotent: a warm cache returns at once.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}

kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$repo/hack/tools/kubernetes/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$repo/hack/tools/etcd/go.mod")
[ -n "$kube_version" ] && [ -n "$etcd_version" ] || { echo "cluster-build: cannot read tool versions" >&2; exit 1; }
bin="$cache/cluster/k8s-${kube_version}-etcd-${etcd_version}"
mkdir -p "$bin"

major=${kube_version#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

start=$(date +%s)
built=0
build() { # name, expected minutes on a cold cache, module dir, package, extra env...
  local name=$1 minutes=$2 dir=$3 pkg=$4; shift 4
  [ -x "$bin/$name" ] && return 0
  built=1
  echo "cluster-build: $name ($pkg), about $minutes on 2 idle cores with a cold Go cache ($(( $(date +%s) - start ))s so far)" >&2
  local tmp="$bin/.$name.tmp.$$"
  # The same flags as hack/envtest-assets.sh (-trimpath, default cgo), so the
  # compiled packages are shared with the envtest kube-apiserver's.
  (cd "$dir" && env "$@" nice go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") || { rm -f "$tmp"; return 1; }
  mv -f "$tmp" "$bin/$name"
}

k8s="$repo/hack/tools/kubernetes"
if [ -x "$cache/envtest/k8s-${kube_version}-etcd-${etcd_version}/etcd" ] && [ ! -x "$bin/etcd" ]; then
  cp "$cache/envtest/k8s-${kube_version}-etcd-${etcd_version}/etcd" "$bin/etcd"
fi
build etcd "1 minute" "$repo/hack/tools/etcd" go.etcd.io/etcd/server/v3
build pause "a few seconds" "$repo" ./hack/cluster/pause CGO_ENABLED=0
build kube-scheduler "5 minutes (most of it the packages all of them share)" "$k8s" k8s.io/kubernetes/cmd/kube-scheduler
build kube-proxy "1 minute" "$k8s" k8s.io/kubernetes/cmd/kube-proxy
build kube-apiserver "2 minutes (less when the envtest one was built)" "$k8s" k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager "1 minute" "$k8s" k8s.io/kubernetes/cmd/kube-controller-manager
build kubelet "1 minute" "$k8s" k8s.io/kubernetes/cmd/kubelet
build kubectl "1 minute" "$k8s" k8s.io/kubernetes/cmd/kubectl
# The sandbox image, from the pause binary.
if [ ! -s "$bin/pause.tar" ]; then
  (cd "$repo" && go run ./hack/image -binary "$bin/pause" -path /pause -name registry.k8s.io/pause -tag 3.10 \
    -user 65535:65535 -out "$bin/pause.tar" >/dev/null)
fi
[ "$built" = 0 ] || echo "cluster-build: done in $(( $(date +%s) - start ))s, cached in $bin" >&2
echo "$bin"
