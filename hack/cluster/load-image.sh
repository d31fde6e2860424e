#!/usr/bin/env bash
# Imports an OCI archive (`make image` writes bin/flightfeed-image.tar) into
# the local cluster's containerd, where pods find it by name with
# imagePullPolicy IfNotPresent: nothing is pulled from a registry.
#
#   bash hack/cluster/load-image.sh bin/flightfeed-image.tar
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"
archive=${1:?usage: load-image.sh OCI-ARCHIVE}
alive containerd || { clog "the cluster is not up (bash hack/cluster/up.sh)"; exit 1; }
ctr_ images import "$archive" | sed 's/^/cluster: imported /' >&2
