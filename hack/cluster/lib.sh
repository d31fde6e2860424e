# Shared settings of the local single-node cluster (sourced by up.sh,
# down.sh, load-image.sh and env.sh). Everything the cluster makes lives under
# $FLIGHTFEED_CLUSTER_DIR, apart from what the kernel keeps elsewhere (the
# bridge, pod network namespaces under /var/run/netns, iptables chains,
# cgroups, sysctls), which down.sh removes or restores from what up.sh
# recorded.
#
# Networking (the workplace's rule): the cluster uses loopback and the
# addresses of one bridge that up.sh creates, flightfeed0 = 10.222.0.1/16.
# That address is the node's IP, the API server's and the host's as the pods
# see it. Pods get 10.222.0.10–10.222.127.254 and no default route (only the
# Service range, through the bridge), and a FORWARD guard drops anything that
# would leave the bridge, so no packet from the cluster leaves the machine.
# No address is added to an existing interface.

: "${FLIGHTFEED_CLUSTER_DIR:=/var/lib/flightfeed-cluster}"
root=$FLIGHTFEED_CLUSTER_DIR
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}
# The binaries build.sh makes, kubectl among them (the machine's may be older
# than the server by more than the supported skew): first on PATH.
_tools=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
kube_bin="$cache/cluster/k8s-$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$_tools/kubernetes/go.mod")-etcd-$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$_tools/etcd/go.mod")"
export PATH="$kube_bin:$PATH"

bridge=flightfeed0
node_ip=10.222.0.1
bridge_cidr=10.222.0.0/16
pod_range_start=10.222.0.10
pod_range_end=10.222.127.254
service_cidr=10.222.128.0/20
kubernetes_service_ip=10.222.128.1
apiserver_port=6443
etcd_port=12379
node_name=flightfeed
sandbox_image=registry.k8s.io/pause:3.10
# Host services the pods reach at $node_ip (relayed to 127.0.0.1): PostgreSQL
# and MariaDB. A Kafka broker for the pods listens on $node_ip itself, since
# a broker advertises its own address.
: "${FLIGHTFEED_CLUSTER_RELAYS:=5432 3306}"

pki=$root/pki
logs=$root/logs
pids=$root/pids
run=$root/run
sock=$run/containerd.sock
export KUBECONFIG=$root/admin.kubeconfig

# Everything the cluster changes in the kernel's settings, restored by down.sh.
sysctls=(
  net.ipv4.ip_forward
  net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables
  vm.overcommit_memory
  vm.panic_on_oom
  kernel.panic
  kernel.panic_on_oops
  kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes
)

# Folders outside $root that the components insist on (containerd's shim
# sockets and runc state, the kubelet's device-plugin socket folder, libcni's
# result cache): removed by down.sh when up.sh found them absent and they hold
# no regular file (stale sockets of the stopped daemons do not count).
outside_dirs=(/run/containerd /var/lib/kubelet /var/lib/cni)

# Chains the cluster's components create (kube-proxy, kubelet, CNI, ours).
chain_pattern='^(KUBE-|CNI-|FLIGHTFEED-)'

clog() { echo "cluster: $*" >&2; }

# alive NAME: the daemon NAME that this cluster started is running (its
# recorded PID still runs the recorded executable).
alive() {
  local f=$pids/$1.pid pid exe
  [ -s "$f" ] || return 1
  read -r pid exe <"$f"
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]
}

ctr_() { ctr --address "$sock" --namespace k8s.io "$@"; }
