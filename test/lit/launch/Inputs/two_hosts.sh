#!/bin/sh
# Runs a command on the first of two hosts made on this machine: network
# namespaces partita-host-a and partita-host-b (10.231.77.1 and .2, a veth
# between them), each with its own host name (a UTS namespace). mpirun
# reaches partita-host-b through netns_agent.sh as its launch agent, and the
# ranks talk over TCP across the veth, as across two machines.
#   two_hosts.sh CMD...   (root; iproute2)
# PARTITA_TEST_HIDE=HOST:DIR covers DIR with an empty folder on HOST, as if
# the file system there lacked it.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
a=partita-host-a b=partita-host-b
down() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
}
down # what an earlier, interrupted run left
trap down EXIT
ip netns add "$a"
ip netns add "$b"
ip link add pth-a netns "$a" type veth peer name pth-b netns "$b"
ip -n "$a" addr add 10.231.77.1/24 dev pth-a
ip -n "$b" addr add 10.231.77.2/24 dev pth-b
for h in "$a" "$b"; do
  ip -n "$h" link set lo up
done
ip -n "$a" link set pth-a up
ip -n "$b" link set pth-b up
export OMPI_MCA_plm_rsh_agent="$here/netns_agent.sh"
export OMPI_MCA_oob_tcp_if_include=10.231.77.0/24 OMPI_MCA_btl_tcp_if_include=10.231.77.0/24
# The command's exit status is the script's (the trap keeps it).
ip netns exec "$a" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$a" "$@"
