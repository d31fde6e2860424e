#!/usr/bin/env bash
# Tears down what hack/cluster/up.sh made, completely, even after a failed or
# partial up: pods are stopped through the kubelet (so the CNI plugin
# releases their network), then every daemon by its recorded PID, containerd's
# shims by PID, mounts under the cluster's folder, the pods' network
# namespaces, the bridge, every iptables chain of kube-proxy, the kubelet, CNI
# and ours, the pod cgroups; the kernel settings get their recorded values
# back. Finally it checks that nothing is left and says what is. Idempotent.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"

[ "$(id -u)" = 0 ] || { clog "needs root"; exit 1; }
t0=$(date +%s)
step() { clog "down: $* ($(( $(date +%s) - t0 ))s)"; }

# stop NAME...: SIGTERM to each daemon's recorded PID at once, then waits up
# to 10 s for all of them and sends SIGKILL to any still running.
stop() {
  local name pid exe i left
  local -a run=()
  for name in "$@"; do
    if alive "$name"; then
      read -r pid exe <"$pids/$name.pid"
      kill -TERM "$pid" 2>/dev/null && run+=("$name:$pid")
    fi
    rm -f "$pids/$name.pid"
  done
  for ((i = 0; i < 100; i++)); do
    left=0
    for p in "${run[@]}"; do [ -d "/proc/${p#*:}" ] && left=1; done
    if [ "$left" = 0 ]; then
      [ "$i" -lt 20 ] || clog "down: $* took $((i / 10))s to stop"
      return 0
    fi
    sleep 0.1
  done
  for p in "${run[@]}"; do
    if [ -d "/proc/${p#*:}" ]; then
      clog "down: ${p%%:*} did not stop within 10s of SIGTERM: SIGKILL"
      kill -KILL "${p#*:}" 2>/dev/null
    fi
  done
  sleep 0.2
}

# 1. Pods, through the kubelet, so each sandbox's network is torn down by CNI.
if alive kube-apiserver && alive kubelet && alive containerd && kubectl get --raw /readyz >/dev/null 2>&1; then
  step "stopping every pod"
  kubectl delete deployments,statefulsets,daemonsets,replicasets,jobs,cronjobs --all --all-namespaces \
    --wait=false >/dev/null 2>&1 || true
  kubectl delete pods --all --all-namespaces --grace-period=10 --wait=false >/dev/null 2>&1 || true
  for _ in $(seq 1 150); do
    [ -z "$(kubectl get pods -A -o name 2>/dev/null)" ] && [ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
    sleep 0.2
  done
fi

# 2. The control plane and node daemons.
step "stopping the daemons"
# With relays and helpers started beside the cluster (the demo's broker).
others=()
for f in "$pids"/*.pid; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .pid)
  case " etcd kube-apiserver containerd kubelet kube-proxy kube-controller-manager kube-scheduler " in
    *" $n "*) ;;
    *) others+=("$n") ;;
  esac
done
stop "${others[@]}" kube-proxy kube-scheduler kube-controller-manager kubelet

# 3. Whatever containers are left, then containerd and its shims.
if alive containerd; then
  for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
  sleep 0.5
  for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1; done
  for id in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$id" >/dev/null 2>&1; done
fi
stop containerd
# Shims outlive containerd by design; ours name our socket on their command line.
for f in $(grep -lsaF -- "$sock" /proc/[0-9]*/cmdline); do
  p=${f#/proc/}; p=${p%/cmdline}
  [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(command -v containerd-shim-runc-v2)" ] || continue
  step "stopping containerd shim $p"
  kill -KILL "$p" 2>/dev/null
done
stop kube-apiserver
stop etcd

# 4. Mounts under the cluster's folder (pod volumes, rootfs, shm), deepest first.
if [ -d "$root" ]; then
  step "unmounting"
  for _ in 1 2 3; do
    mapfile -t mounts < <(awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/self/mounts | sort -r)
    [ ${#mounts[@]} -gt 0 ] || break
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  done
fi

# 5. Network namespaces made while the cluster ran (containerd's cni-*).
if [ -d /var/run/netns ]; then
  for ns in /var/run/netns/cni-*; do
    [ -e "$ns" ] || continue
    n=$(basename "$ns")
    if [ ! -e "$root/netns.saved" ] || ! grep -qx -- "$n" "$root/netns.saved"; then
      step "removing network namespace $n"
      ip netns delete "$n" 2>/dev/null || { umount "$ns" 2>/dev/null; rm -f "$ns"; }
    fi
  done
  rmdir /var/run/netns 2>/dev/null || true
fi

# 6. The bridge and whatever veth is still attached to it.
if ip link show "$bridge" >/dev/null 2>&1; then
  step "removing bridge $bridge"
  for v in $(ip -o link show master "$bridge" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link delete "$v" 2>/dev/null || true
  done
  ip link delete "$bridge"
fi

# 7. iptables: every rule jumping to a chain of ours, then those chains.
step "removing iptables chains"
for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null 2>&1 || continue
  for table in filter nat mangle raw; do
    save=$("$ipt-save" -t "$table" 2>/dev/null) || continue
    # Rules in built-in chains that jump to one of ours.
    while IFS= read -r rule; do
      eval "$ipt -w -t $table -D ${rule#-A }" 2>/dev/null || true
    done < <(printf '%s\n' "$save" | grep -E '^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) ' | grep -E -- '-j (KUBE-|CNI-|FLIGHTFEED-)')
    chains=$(printf '%s\n' "$save" | sed -n 's/^:\([^ ]*\) .*/\1/p' | grep -E "$chain_pattern")
    for c in $chains; do "$ipt" -w -t "$table" -F "$c" 2>/dev/null; done
    for c in $chains; do "$ipt" -w -t "$table" -X "$c" 2>/dev/null; done
  done
done

# 8. Pod cgroups the kubelet made (cgroup v1: one tree per controller).
for h in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$h" ] || continue
  find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
done

# 9. Kernel settings as they were.
if [ -s "$root/sysctls.saved" ]; then
  step "restoring kernel settings"
  while IFS=$'\t' read -r key value; do
    [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] || sysctl -qw "$key=$value" >/dev/null 2>&1 ||
      clog "could not restore $key=$value"
  done <"$root/sysctls.saved"
fi

# Folders outside $root that were not there before up, if they hold no regular file.
if [ -s "$root/dirs.absent" ]; then
  while read -r d; do
    [ -d "$d" ] && [ -z "$(find "$d" -type f -print -quit 2>/dev/null)" ] && rm -rf --one-file-system "$d"
  done <"$root/dirs.absent"
fi

# 10. The folder, and a last look for anything left behind.
left=()
for p in /proc/[0-9]*; do
  exe=$(readlink "$p/exe" 2>/dev/null) || continue
  case "$exe" in "$cache"/cluster/*|*/containerd|*/containerd-shim-runc-v2) left+=("process ${p#/proc/} ($exe)") ;; esac
done
for f in $(grep -lsaF -- "$root/" /proc/[0-9]*/cmdline); do
  # (grep itself matches while it runs; it is gone by now)
  [ -e "$f" ] && left+=("process ${f%/cmdline} ($({ tr '\0' ' ' <"$f"; } 2>/dev/null | cut -c1-100))")
done
while read -r m; do left+=("mount $m"); done < <(awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/self/mounts)
ip link show "$bridge" >/dev/null 2>&1 && left+=("bridge $bridge")
for ipt in iptables ip6tables; do
  command -v "$ipt-save" >/dev/null 2>&1 || continue
  while read -r c; do left+=("$ipt chain $c"); done < <("$ipt-save" 2>/dev/null | sed -n 's/^:\([^ ]*\) .*/\1/p' | grep -E "$chain_pattern")
done
if [ -s "$root/iptables.saved" ]; then
  # Any rule now that was not there before up.sh.
  while read -r r; do left+=("iptables rule: $r"); done < <(
    { iptables-save 2>/dev/null; ip6tables-save 2>/dev/null; } | grep -E '^-A' | sort -u |
      comm -23 - <(grep -E '^-A' "$root/iptables.saved" | sort -u))
fi
if [ -e "$root/netns.saved" ]; then
  while read -r n; do grep -qx -- "$n" "$root/netns.saved" || left+=("netns $n"); done < <(ls /var/run/netns 2>/dev/null)
fi
if [ ${#left[@]} -gt 0 ]; then
  clog "down: left behind (keeping $root for a look):"
  printf '  %s\n' "${left[@]}" >&2
  exit 1
fi
if [ -d "$root" ]; then
  # Logs of the last run stay readable until the next up.
  last="${root%/}.last-logs"
  rm -rf "$last" && mkdir -p "$last" && cp -a "$logs/." "$last/" 2>/dev/null || true
  rm -rf --one-file-system "$root"
fi
step "nothing left (logs of the last run in ${root%/}.last-logs)"
