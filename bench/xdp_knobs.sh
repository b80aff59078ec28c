#!/bin/bash
# AF_XDP on a veth: the knobs that move it (the kernel-bypass work;
# docs/perf/log/2026-11-24-af-xdp.md).
# For each variant, in interleaved rounds: a fresh veth pair between a server and a
# client namespace, `bareweb serve --xdp` on the server end with the variant's options
# and interface settings, and `wrk -t1 -c16` from the client for SECS seconds, keep-alive
# and a connection per request. Prints fetches/s and the server's CPU per fetch
# (utime + stime of its process over the run; softirq work it triggers in other contexts
# is not in it). Root; needs wrk and ethtool. Bounded: variants x rounds x 2 x SECS.
#
#   sudo [FILE=/files/1m.bin CONNS=4 MODES=1] bench/xdp_knobs.sh ROUNDS SECS VARIANT...
#   (FILE: the path fetched [/files/4k.html]; CONNS: wrk's connections [16]; MODES: 1 for
#   keep-alive only, "1 0" for both [both])
#   variants: base | busy (--xdp-busy-poll 50) | busydefer (busy + napi_defer_hard_irqs 2,
#   gro_flush_timeout 200 us) | threaded (the veth's NAPI in its own kernel thread) |
#   peerxdp (an XDP_PASS program on the client's end: its veth receives in NAPI, with GRO)
#   | q2 (two queue pairs, per-queue mode, two cores)
set -euo pipefail
ROUNDS=${1:-2}
SECS=${2:-3}
shift 2
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(base busy)
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BAREWEB_BIN:-$HERE/target/release/bareweb}
SITE=$HERE/examples/site
T=bwk$$
S=${T}s
C=${T}c
SERVER=10.99.7.2
FILE=${FILE:-/files/4k.html}
CONNS=${CONNS:-16}
MODES=${MODES:-1 0}
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip netns del "$S" 2>/dev/null || true
    ip netns del "$C" 2>/dev/null || true
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

one() { # variant keepalive(1/0)
    local v=$1 ka=$2 q=1 extra=()
    case $v in
        busy | busydefer) extra=(--xdp-busy-poll 50) ;;
        q2) q=2 ;;
    esac
    ip netns add "$S"
    ip netns add "$C"
    ip link add ${T}a netns "$C" numtxqueues $q numrxqueues $q type veth peer name ${T}b \
        netns "$S" numtxqueues $q numrxqueues $q
    ip -n "$C" addr add 10.99.7.1/24 dev ${T}a
    ip -n "$C" link set ${T}a up
    ip -n "$S" link set ${T}b up
    ip netns exec "$C" ethtool -K ${T}a tx off >/dev/null
    local sys=/sys/class/net/${T}b
    case $v in
        busydefer)
            ip netns exec "$S" sh -c "echo 2 > $sys/napi_defer_hard_irqs; echo 200000 > $sys/gro_flush_timeout" ;;
        peerxdp)
            ip netns exec "$C" /usr/bin/python3 "$HERE/tests/system/xdp_foreign.py" prog ${T}a \
                >/dev/null &
            PIDS+=($!)
            sleep 0.5 ;;
    esac
    ip netns exec "$S" "$BIN" serve "$SITE" --xdp ${T}b --ip $SERVER/24 --tcbs 8192 \
        "${extra[@]}" >/tmp/$T.log 2>&1 &
    local srv=$!
    for _ in $(seq 100); do
        ip netns exec "$C" curl -s -o /dev/null --max-time 1 http://$SERVER/ && break
        sleep 0.1
    done
    # A veth has NAPI only once an XDP program is attached: thread it now.
    [ "$v" = threaded ] && ip netns exec "$S" sh -c "echo 1 > $sys/threaded"
    local hdr=() mode=keepalive
    [ "$ka" = 1 ] || { hdr=(-H "Connection: close"); mode=conn-per-req; }
    local t0 out t1
    t0=$(cpu_ticks $srv)
    out=$(ip netns exec "$C" wrk -t1 -c"$CONNS" -d"${SECS}"s "${hdr[@]}" "http://$SERVER$FILE")
    t1=$(cpu_ticks $srv)
    kill -INT $srv
    wait $srv || true
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    PIDS=()
    local reqs rps
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    local hz
    hz=$(getconf CLK_TCK)
    echo "$v $mode $rps $(awk -v t=$((t1 - t0)) -v n="$reqs" -v hz="$hz" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')"
    ip netns del "$S"
    ip netns del "$C"
}

echo "# uptime: $(uptime)"
echo "# $FILE, $CONNS connections; variant mode fetches/s server_us/fetch"
for r in $(seq "$ROUNDS"); do
    for ka in $MODES; do
        for v in "${VARIANTS[@]}"; do one "$v" $ka; done
    done
    # rotate the order
    VARIANTS=("${VARIANTS[@]:1}" "${VARIANTS[0]}")
done
echo "# uptime: $(uptime)"
