#!/bin/sh
# Runs a command on the first of two hosts made on this machine: network
# namespaces partita-host-a-PID and partita-host-b-PID (10.231.77.1 and .2, a
# veth between them; PID keeps two runs apart), named partita-host-a and
# partita-host-b (each its own UTS namespace). mpirun
# reaches partita-host-b through netns_agent.sh as its launch agent, and the
# ranks talk over TCP across the veth, as across two machines.
#   two_hosts.sh CMD...   (root; iproute2)
# PARTITA_TEST_HIDE=HOST:DIR covers DIR with an empty folder on HOST, as if
# the file system there lacked it.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
export PARTITA_TEST_NETNS_SUFFIX="-$$" # netns_agent.sh maps a host name to its namespace
a=partita-host-a b=partita-host-b
na="$a$PARTITA_TEST_NETNS_SUFFIX" nb="$b$PARTITA_TEST_NETNS_SUFFIX"
# What an earlier run left when it was killed: its shell is gone.
for ns in $(ip netns list | sed -n 's/^\(partita-host-[ab]-[0-9]*\).*/\1/p'); do
  kill -0 "${ns##*-}" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
done
down() {
  ip netns del "$na" 2>/dev/null || true
  ip netns del "$nb" 2>/dev/null || true
}
trap down EXIT
ip netns add "$na"
ip netns add "$nb"
ip link add pth-a netns "$na" type veth peer name pth-b netns "$nb"
ip -n "$na" addr add 10.231.77.1/24 dev pth-a
ip -n "$nb" addr add 10.231.77.2/24 dev pth-b
for h in "$na" "$nb"; do
  ip -n "$h" link set lo up
done
ip -n "$na" link set pth-a up
ip -n "$nb" link set pth-b up
export OMPI_MCA_plm_rsh_agent="$here/netns_agent.sh"
export OMPI_MCA_oob_tcp_if_include=10.231.77.0/24 OMPI_MCA_btl_tcp_if_include=10.231.77.0/24
# The command's exit status is the script's (the trap keeps it).
ip netns exec "$na" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$a" "$@"
