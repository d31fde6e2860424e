#!/usr/bin/env bash
# Brings up a single-node Kubernetes cluster on this machine: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and
# kube-proxy (built once by build.sh from Go modules), containerd + runc +
# the bridge CNI plugin from Debian's packages, certificates and kubeconfigs
# generated for this run. Needs root. Idempotent: a cluster that is up is
# left as it is; a half-up one is torn down (down.sh) and started again.
#
#   bash hack/cluster/up.sh            then: export KUBECONFIG=$(bash hack/cluster/env.sh)
#   bash hack/cluster/down.sh          removes everything up.sh made
#
# Progress goes to stderr, one line per step; the admin kubeconfig's path is
# printed on stdout.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"

t0=$(date +%s)
step() { clog "$* ($(( $(date +%s) - t0 ))s)"; }

[ "$(id -u)" = 0 ] || { clog "needs root (containerd, kubelet, the bridge, iptables)"; exit 1; }

if alive etcd && alive kube-apiserver && alive containerd && alive kubelet && alive kube-proxy &&
   alive kube-controller-manager && alive kube-scheduler &&
   kubectl get --raw /readyz >/dev/null 2>&1; then
  clog "already up (kubeconfig $KUBECONFIG)"
  echo "$KUBECONFIG"
  exit 0
fi
if [ -e "$root" ] || ip link show "$bridge" >/dev/null 2>&1; then
  step "a previous cluster is partly up: tearing it down first"
  bash "$here/down.sh"
fi

# ---- packages ---------------------------------------------------------------
missing=()
for p in containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables:iptables \
         conntrack:conntrack socat:socat openssl:openssl curl:curl; do
  what=${p%%:*} pkg=${p#*:}
  if [ "${what:0:1}" = / ]; then [ -e "$what" ] || missing+=("$pkg"); else command -v "$what" >/dev/null 2>&1 || missing+=("$pkg"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  step "installing ${missing[*]} from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- binaries -----------------------------------------------------------------
step "binaries (built once into $cache/cluster; the first build takes about 12 minutes on 2 idle cores, 20 on a busy machine)"
bin=$(bash "$here/build.sh")
[ "$bin" = "$kube_bin" ] || { clog "build.sh built into $bin, lib.sh expects $kube_bin"; exit 1; }

# ---- the network must be free --------------------------------------------------
for a in "$node_ip" "${kubernetes_service_ip}"; do
  if ip -4 route show table all to match "$a" | grep -v -e '^default' -e '^broadcast' -e '^local 127\.' | grep -q .; then
    clog "$a is already routed on this machine ($(ip -4 route show table all to match "$a" | head -n 1)): pick other ranges in hack/cluster/lib.sh"
    exit 1
  fi
done
for port in "$apiserver_port" "$etcd_port" $((etcd_port + 1)) 10250; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then clog "port $port is taken on loopback"; exit 1; fi
done

mkdir -p "$root" "$pki" "$logs" "$pids" "$run" "$root/cni/net.d" "$root/cni/ipam" "$root/kubelet"

# ---- record what down.sh restores --------------------------------------------------
step "recording the kernel settings, iptables rules and network namespaces to restore"
: >"$root/sysctls.saved"
for s in "${sysctls[@]}"; do
  v=$(sysctl -n "$s" 2>/dev/null) && printf '%s\t%s\n' "$s" "$v" >>"$root/sysctls.saved"
done
{ iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } | grep -E '^(\*|:|-A)' | sed 's/ \[[0-9]*:[0-9]*\]$//' >"$root/iptables.saved" || true
ls /var/run/netns 2>/dev/null >"$root/netns.saved" || true
for d in "${outside_dirs[@]}"; do [ -e "$d" ] || echo "$d"; done >"$root/dirs.absent"

# ---- network: the bridge and the FORWARD guard ------------------------------------
step "bridge $bridge ($node_ip) and the FORWARD guard"
ip link add "$bridge" type bridge
ip addr add "$node_ip/${bridge_cidr#*/}" dev "$bridge"
ip link set "$bridge" up
fwd_was=$(sysctl -n net.ipv4.ip_forward)
for ipt in iptables ip6tables; do
  # (a kernel without IPv6 has no ip6tables tables to guard)
  [ "$ipt" = iptables ] || $ipt -w -L FORWARD >/dev/null 2>&1 || continue
  $ipt -w -N FLIGHTFEED-FORWARD
  $ipt -w -A FLIGHTFEED-FORWARD -i "$bridge" -o "$bridge" -j RETURN
  $ipt -w -A FLIGHTFEED-FORWARD -i "$bridge" -j DROP
  $ipt -w -A FLIGHTFEED-FORWARD -o "$bridge" -j DROP
  # The bridge plugin turns forwarding on; the machine did not forward before,
  # so it still must not (nothing of the host's is routed through it).
  [ "$fwd_was" = 1 ] || $ipt -w -A FLIGHTFEED-FORWARD -j DROP
  $ipt -w -I FORWARD 1 -j FLIGHTFEED-FORWARD
done

# ---- certificates and kubeconfigs ------------------------------------------------------
step "certificates and kubeconfigs (new for this run)"
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -sha256 -days 30 \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" -subj "/CN=flightfeed-cluster-ca" 2>/dev/null
cert() { # name, subject, extendedKeyUsage, [subjectAltName]
  local name=$1 subj=$2 eku=$3 san=${4:-}
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -sha256 \
    -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj" 2>/dev/null
  {
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -sha256 -days 30 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}
cert apiserver "/CN=kube-apiserver" serverAuth \
  "IP:$node_ip,IP:$kubernetes_service_ip,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=flightfeed-admin" clientAuth
cert kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
cert kube-scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-proxy "/CN=system:kube-proxy" clientAuth
cert kubelet "/O=system:nodes/CN=system:node:$node_name" clientAuth
cert kubelet-serving "/CN=$node_name" serverAuth "IP:$node_ip,DNS:$node_name"
openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
chmod 600 "$pki"/*.key

kubeconfig() { # file, cert name
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: flightfeed
  cluster:
    server: https://$node_ip:$apiserver_port
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$2.crt")
    client-key-data: $(base64 -w0 <"$pki/$2.key")
contexts:
- name: flightfeed
  context: {cluster: flightfeed, user: $2, namespace: default}
current-context: flightfeed
EOF
  chmod 600 "$1"
}
for c in admin kube-controller-manager kube-scheduler kube-proxy kubelet; do
  kubeconfig "$root/$c.kubeconfig" "$c"
done

# ---- daemons ------------------------------------------------------------------------------
# start NAME EXECUTABLE ARGS...: runs a daemon detached from this shell (its
# own session, output to $logs/NAME.log) and records its PID and executable.
start() {
  local name=$1 exe=$2; shift 2
  setsid "$exe" "$@" >"$logs/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid $(readlink -f "$exe")" >"$pids/$name.pid"
}
wait_for() { # what, seconds, command...
  local what=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  clog "$what did not come up within ${secs}s; logs in $logs"
  tail -n 30 "$logs"/*.log >&2 || true
  return 1
}

step "etcd"
start etcd "$bin/etcd" --name=default --data-dir="$root/etcd" --unsafe-no-fsync \
  --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$((etcd_port + 1))" --initial-advertise-peer-urls="http://127.0.0.1:$((etcd_port + 1))" \
  --initial-cluster="default=http://127.0.0.1:$((etcd_port + 1))" --log-level=warn
wait_for etcd 30 curl -fsS "http://127.0.0.1:$etcd_port/health"

step "kube-apiserver"
start kube-apiserver "$bin/kube-apiserver" \
  --advertise-address="$node_ip" --bind-address="$node_ip" --secure-port="$apiserver_port" \
  --etcd-servers="http://127.0.0.1:$etcd_port" \
  --service-cluster-ip-range="$service_cidr" \
  --client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true --profiling=false --v=1

step "containerd (runc, bridge CNI, sandbox image $sandbox_image)"
cat >"$root/cni/net.d/10-flightfeed.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "flightfeed",
  "plugins": [{
    "type": "bridge", "bridge": "$bridge", "isGateway": true, "isDefaultGateway": false,
    "ipMasq": false, "hairpinMode": true,
    "ipam": {
      "type": "host-local", "dataDir": "$root/cni/ipam",
      "ranges": [[{"subnet": "$bridge_cidr", "rangeStart": "$pod_range_start", "rangeEnd": "$pod_range_end", "gateway": "$node_ip"}]],
      "routes": [{"dst": "$service_cidr", "gw": "$node_ip"}]
    }
  }]
}
EOF
mkdir -p "$root/containerd-hosts/docker.io" "$root/containerd-hosts/registry.k8s.io"
for r in docker.io registry.k8s.io; do
  # Never pull from the internet: every image the cluster runs is imported.
  printf 'server = "http://127.0.0.1:9"\n' >"$root/containerd-hosts/$r/hosts.toml"
done
cat >"$root/containerd.toml" <<EOF
version = 2
root = "$root/containerd"
state = "$run/containerd"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$sandbox_image"
  # No CAP_SYS_RESOURCE in this sandbox: without it every pod sandbox fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$root/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$root/containerd-hosts"
EOF
start containerd "$(command -v containerd)" --config "$root/containerd.toml"
wait_for containerd 30 ctr --address "$sock" version
ctr_ images import "$bin/pause.tar" >/dev/null

wait_for kube-apiserver 60 kubectl get --raw /readyz

step "kube-controller-manager, kube-scheduler"
start kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig="$root/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$root/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$root/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --use-service-account-credentials=true --service-cluster-ip-range="$service_cidr" \
  --v=1
start kube-scheduler "$bin/kube-scheduler" \
  --kubeconfig="$root/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$root/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$root/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false --v=1

step "kubelet"
cat >"$root/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
address: $node_ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
# No cluster DNS, and no resolv.conf from the host: pods resolve nothing
# outside the machine.
resolvConf: ""
failSwapOn: false
podCIDR: $bridge_cidr
maxPods: 50
# A throwaway node on a shared disk: never evict or collect images for space.
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
start kubelet "$bin/kubelet" --config="$root/kubelet.yaml" --kubeconfig="$root/kubelet.kubeconfig" \
  --hostname-override="$node_name" --node-ip="$node_ip" --root-dir="$root/kubelet" --v=1

step "kube-proxy"
cat >"$root/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $root/kube-proxy.kubeconfig}
mode: iptables
hostnameOverride: $node_name
bindAddress: $node_ip
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: $bridge_cidr
nodePortAddresses: ["$bridge_cidr"]
# Leave the kernel's conntrack and route_localnet settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
EOF
start kube-proxy "$bin/kube-proxy" --config="$root/kube-proxy.yaml" --v=1

# ---- relays to host services ------------------------------------------------------------
for port in $FLIGHTFEED_CLUSTER_RELAYS; do
  start "relay-$port" "$(command -v socat)" "TCP-LISTEN:$port,bind=$node_ip,reuseaddr,fork" "TCP:127.0.0.1:$port"
done

# ---- ready ---------------------------------------------------------------------------------
step "waiting for the node, the default ServiceAccount and the kubernetes Service rules"
wait_for "node $node_name" 90 kubectl wait --for=condition=Ready "node/$node_name" --timeout=2s
wait_for "the default ServiceAccount" 60 kubectl get serviceaccount default -n default
wait_for "kube-proxy's rules for the kubernetes Service" 60 sh -c "iptables-save -t nat | grep -q 'default/kubernetes:https'"
for d in etcd kube-apiserver containerd kube-controller-manager kube-scheduler kubelet kube-proxy; do
  alive "$d" || { clog "$d exited; its log:"; tail -n 30 "$logs/$d.log" >&2; exit 1; }
done
step "up: Kubernetes $(kubectl version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -n 1), node $node_name Ready; export KUBECONFIG=$KUBECONFIG PATH=$kube_bin:\$PATH"
echo "$KUBECONFIG"
