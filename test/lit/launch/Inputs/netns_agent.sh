#!/bin/sh
# mpirun's launch agent for two_hosts.sh: called as ssh would be (HOST, then
# the remote command as words for a shell), it runs the command in HOST's
# network namespace under HOST's name, hiding PARTITA_TEST_HIDE's folder there.
host="$1"
shift
hide=""
case "${PARTITA_TEST_HIDE:-}" in
"$host":*) hide="mount -t tmpfs partita-test-hidden '${PARTITA_TEST_HIDE#*:}' && " ;;
esac
exec ip netns exec "$host${PARTITA_TEST_NETNS_SUFFIX:-}" unshare --uts --mount --propagation private sh -c "hostname $host && $hide$*"
