#!/bin/bash
# A/B of two bareweb binaries on one core (regression check): each serves the example site
# in its own network namespace (prefix bwsab), wrk -t1 -c16 fetches /files/4k.html for 5 s,
# keep-alive and connection per request, interleaved A B for ROUNDS rounds. Needs root, wrk.
#
#   sudo bench/ab_one_core.sh OLD_BAREWEB NEW_BAREWEB [ROUNDS]
#
# Build the baseline from another commit with e.g.
#   git archive main | tar -x -C /tmp/base && (cd /tmp/base && CARGO_TARGET_DIR=/tmp/base-target cargo build --release -p bareweb)
set -euo pipefail
A=$1; B=$2; ROUNDS=${3:-6}
SITE=$(cd "$(dirname "$0")/.." && pwd)/examples/site
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for n in a b; do ip netns del "bwsab$$$n" 2>/dev/null || true; done
}
trap cleanup EXIT
for n in a b; do ip netns add "bwsab$$$n"; ip -n "bwsab$$$n" link set lo up; done
ip netns exec "bwsab$$a" "$A" serve "$SITE" --tap bw0 --ip 10.0.0.2/24 --tcbs 4096 >/dev/null 2>&1 & PIDS+=($!)
ip netns exec "bwsab$$b" "$B" serve "$SITE" --tap bw0 --ip 10.0.0.2/24 --tcbs 4096 >/dev/null 2>&1 & PIDS+=($!)
for n in a b; do
    for _ in $(seq 1 50); do
        ip netns exec "bwsab$$$n" curl -s -o /dev/null --max-time 1 http://10.0.0.2/ && break
        sleep 0.1
    done
done
for r in $(seq 1 "$ROUNDS"); do
    for mode in keep-alive conn-per-request; do
        for n in a b; do
            if [ "$mode" = conn-per-request ]; then H=(-H "Connection: close"); else H=(); fi
            R=$(ip netns exec "bwsab$$$n" timeout 20 wrk -t1 -c16 -d5s "${H[@]}" http://10.0.0.2/files/4k.html |
                awk '/Requests\/sec/ {print $2}')
            echo "round $r $mode $n $R"
        done
    done
done
