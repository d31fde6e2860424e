#!/usr/bin/env bash
# Prints the local cluster's admin kubeconfig path:
#   export KUBECONFIG=$(bash hack/cluster/env.sh)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"
echo "$KUBECONFIG"
