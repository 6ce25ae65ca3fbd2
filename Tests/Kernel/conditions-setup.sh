# The setup shared by the kernel suite's two condition lanes (conditions.sh and scopes.sh, which
# the suite runs side by side): the lane's topology with a second link, the probe server, two
# profiles of pure delay, and the measuring helpers. Each lane starts its own daemon.
# shellcheck shell=bash

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:?set LINKCOND_BIN}
SHIPPED_PROFILES=${LINKCOND_PROFILES:?set LINKCOND_PROFILES}

# The second link: veth-e<lane> in the client namespace, veth-t<lane> in the server's.
IF_E=veth-e$LANE
IF_T=veth-t$LANE
IFB_E=lc-veth-e$LANE
E4=10.78.${LANE:-0}.1
T4=10.78.${LANE:-0}.2
E6=fd78:${LANE:-0}::1
T6=fd78:${LANE:-0}::2

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
CONTAINER_PID=""
LOCAL_SERVER_PID=""
cleanup() {
    set +e
    [[ -z $CONTAINER_PID ]] || kill -KILL "$CONTAINER_PID" 2>/dev/null
    [[ -z $LOCAL_SERVER_PID ]] || kill -KILL "$LOCAL_SERVER_PID" 2>/dev/null
    ip netns del "lc-named$LANE" 2>/dev/null
    for ns in "lc-gw$LANE" "lc-sw$LANE" "lc-d1$LANE" "lc-d2$LANE"; do ip netns del "$ns" 2>/dev/null; done
    daemon_stop TERM
    server_stop
    topo_down
}
trap cleanup EXIT

# Two profiles of pure delay, so that each link's added round trip names its condition.
PROFILES="$WORK/profiles"
mkdir -p "$PROFILES"
cp "$SHIPPED_PROFILES"/*.yaml "$PROFILES/"
cat >"$PROFILES/lc-test-a.yaml" <<'YAML'
name: LC Test A
uplink: { delay: 40ms }
downlink: { delay: 60ms }
YAML
cat >"$PROFILES/lc-test-b.yaml" <<'YAML'
name: LC Test B
uplink: { delay: 10ms }
downlink: { delay: 15ms }
YAML
# For the counters: everything up dropped by loss; a rate so low that a burst fills the queue
# and drains for seconds.
cat >"$PROFILES/lc-test-drop.yaml" <<'YAML'
name: LC Test Drop
uplink: { loss: 100% }
downlink: { delay: 20ms }
YAML
cat >"$PROFILES/lc-test-queue.yaml" <<'YAML'
name: LC Test Queue
uplink: { bandwidth: 4kbit }
YAML

# Loaded already when the suite runs this; standalone, the lane loads what it needs.
modprobe ifb numifbs=0
modprobe -a veth sch_netem sch_htb sch_ingress cls_u32 cls_flower act_mirred
topo_up
link_up "$IF_E" "$IF_T" "$E4" "$T4" "$E6" "$T6"
server_start

# The trees of each link, by the same reading the rest of the suite uses.
tree_c() { tree_signature; }
tree_e() { (IF_C=$IF_E IFB=$IFB_E tree_signature); }
# rtt_ms HOST6?: the median UDP echo round trip to the server over one link, and the replies.
measure() {
    probe_cli 120 rtt --target "udp:$1:7" --target "udp:[$2]:7" --rounds 10 --interval 0.05 --timeout 1 >"$WORK/rtt.json" || true
    RTT4=$(rtt_field "$WORK/rtt.json" "udp:$1:7" median_ms)
    RTT6=$(rtt_field "$WORK/rtt.json" "udp:[$2]:7" median_ms)
    GOT=$(( $(rtt_field "$WORK/rtt.json" "udp:$1:7" received | sed 's/null/0/') + $(rtt_field "$WORK/rtt.json" "udp:[$2]:7" received | sed 's/null/0/') ))
}
# How much later than BASE + ADDED a shaped round trip may come: it passes two netem delay lines,
# each firing late under the VM's software emulation, more so while other lanes run beside this
# one (+2 to +6 ms measured beside the crash lanes; +10.3 ms, a median of 10, beside the
# impairment lane's 600 frames a second, 2026-11-27). The profiles here differ by 75 ms.
LATE_MS=12
# check_added NAME BASE ADDED_MS: both families' round trips are BASE + ADDED, from 1 ms less
# (the baseline's own spread: netem never sends early) to LATE_MS more.
check_added() {
    local name=$1 base=$2 added=$3 family rtt extra st
    for family in 4 6; do
        rtt=$([[ $family == 4 ]] && echo "$RTT4" || echo "$RTT6")
        extra=$(minus "$rtt" "$base")
        st=FAIL
        [[ $extra != null ]] && fcond "$extra $added $LATE_MS" 'a >= b - 1 && a <= b + c' && st=PASS
        record "$name, IPv$family" "+$added ms" "+$extra ms ($rtt - base $base)" "-1 ms, +$LATE_MS ms" "$st"
    done
}
# Every condition's document (what `linkcond status --all --json` prints), read with curl: these
# reads are not what is under test.
list_json() { timeout 30 curl -sf --unix-socket "$SOCK" http://linkcond/v1/conditions 2>/dev/null || echo '{}'; }
conditions_now() { list_json | jq -r '[.conditions[]? | "\(.id)=\(.profile.name // "off")"] | join(" ")'; }
executed_steps() { timeout 10 curl -sf --unix-socket "$SOCK" http://linkcond/v1/debug/fault | jq -r '.executedSteps // "null"'; }
# arm_kill STEP: the daemon SIGKILLs itself before its netlink step STEP from now (0: the next).
arm_kill() { timeout 30 curl -sf --unix-socket "$SOCK" -X PUT -d "{\"failAtStep\": $1, \"fault\": \"kill\"}" http://linkcond/v1/debug/fault >/dev/null; }

