#!/usr/bin/env bash
# linkcond kernel suite: proves with real packets that linkcondd's shaping matches the profiles.
# Runs inside a VM as root (host kernels here lack netem):
#   swift build && scripts/vm-run -- Tests/Kernel/suite.sh
# Binaries: $LINKCOND_BIN (default: <repo>/.build/debug, i.e. `swift build --show-bin-path`).
# Exits non-zero if any check fails; ends with a summary table.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE_LIMIT=${LC_SUITE_LIMIT:-900}
BIN=${LINKCOND_BIN:-$REPO/.build/debug}

fatal() { echo "suite: $*" >&2; exit 2; }

grep -q virtme /proc/cmdline || [[ ${LC_ALLOW_HOST:-} == 1 ]] ||
    fatal "refusing to run outside the test VM: scripts/vm-run -- $0 (LC_ALLOW_HOST=1 overrides)"
[[ $EUID == 0 ]] || fatal "must run as root inside the test VM (scripts/vm-run -- $0)"
for tool in ip tc ethtool python3 jq setpriv timeout awk; do
    command -v "$tool" >/dev/null || fatal "'$tool' not found; run scripts/setup"
done
[[ -x $BIN/linkcondd && -x $BIN/linkcond ]] ||
    fatal "no linkcondd/linkcond in $BIN; run 'swift build' on the host or set LINKCOND_BIN"
[[ -d $PROFILES ]] || fatal "profiles directory $PROFILES missing"

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
MODPROBE_ORIG=""
SESSION_PID=""
WATCHDOG_PID=""

cleanup() {
    local rc=$?
    set +e
    touch "$WORK/session.go"
    [[ -z $SESSION_PID ]] || kill "$SESSION_PID" 2>/dev/null
    daemon_stop TERM
    server_stop
    [[ -z $MODPROBE_ORIG ]] || echo "$MODPROBE_ORIG" >/proc/sys/kernel/modprobe
    topo_down
    [[ -z $WATCHDOG_PID ]] || kill "$WATCHDOG_PID" 2>/dev/null
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "suite: aborted at line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'echo "suite: interrupted" >&2; exit 130' INT TERM
(
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$SUITE_LIMIT" &
    sp=$!
    wait "$sp" && echo "suite: watchdog: over ${SUITE_LIMIT}s, aborting" >&2 && kill -TERM $$
) &
WATCHDOG_PID=$!
T0=$SECONDS

# json FILE FILTER: value or null.
json() { jq -r "$2" "$1" 2>/dev/null || echo null; }
# rtt_field FILE TARGET FIELD
rtt_field() { json "$1" ".[] | select(.target == \"$2\") | .$3 // null"; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "null" || b == "null" || a == "" || b == "") print "null"; else printf "%.1f", a - b }'; }

status_field() {
    timeout 30 "$BIN/linkcond" --socket "$SOCK" status --json >"$WORK/status.json" 2>/dev/null || true
    json "$WORK/status.json" "$1"
}

check_status() {
    local name=$1 want_active=$2 want_profile=$3 active profile st=1
    active=$(status_field '.active')
    profile=$(json "$WORK/status.json" '.profile.name // "null"')
    [[ $active == "$want_active" && $profile == "$want_profile" ]] && st=0
    check_bool "$name" "active=$want_active profile=$want_profile" "active=$active profile=$profile" $st
}

activate_ok() {
    lc_capture activate "$1"
    check_rc "activate '$1'" "$LC_RC" 0 "succeeds"
}

# ------------------------------------------------------------------ 1
log "1. kernel without sch_netem: activation fails cleanly"
modprobe -a veth sch_htb sch_ingress cls_u32 act_mirred
modprobe ifb numifbs=0
MODPROBE_ORIG=$(cat /proc/sys/kernel/modprobe)
echo /bin/false >/proc/sys/kernel/modprobe
netem_state=absent
[[ -d /sys/module/sch_netem ]] && netem_state=loaded
check_bool "sch_netem not loaded" "absent, autoload off" "$netem_state, modprobe=$(cat /proc/sys/kernel/modprobe)" \
    "$([[ $netem_state == absent ]]; echo $?)"
topo_up || fatal "topology setup failed"
snapshot "$WORK/snap.before"
note "interface before activation:"
sed 's/^/      /' "$WORK/snap.before"
daemon_start || fatal "linkcondd did not start (log above)"
lc_capture activate "Slow Net"
check_rc "no netem: activate fails" "$LC_RC" nonzero "non-zero exit"
check_contains "no netem: message" "$LC_ERR" "sch_netem"
check_snapshot "no netem: rolled back" "$WORK/snap.before"
check_status "no netem: status" false null
echo "$MODPROBE_ORIG" >/proc/sys/kernel/modprobe
MODPROBE_ORIG=""
modprobe -a sch_netem sch_htb sch_ingress cls_u32 act_mirred
[[ -d /sys/module/sch_netem ]] || fatal "modprobe sch_netem failed"

# ------------------------------------------------------------------ 2
log "2. baseline (no condition)"
server_start || fatal "probe server did not start"
TARGETS=(
    "udp:$S4:7" "udp:[$S6]:7" "udp:$S4:53" "udp:[$S6]:53"
    "tcpconnect:$S4:53" "tcpconnect:[$S6]:53" "tcp:$S4:22" "tcp:[$S6]:22"
)
targs=()
for t in "${TARGETS[@]}"; do targs+=(--target "$t"); done
probe_cli 120 rtt "${targs[@]}" --rounds 10 --interval 0.05 --timeout 2 >"$WORK/rtt.base.json" ||
    fatal "baseline rtt probe failed"
for t in "${TARGETS[@]}"; do
    m=$(rtt_field "$WORK/rtt.base.json" "$t" median_ms)
    r=$(rtt_field "$WORK/rtt.base.json" "$t" received)
    st=1
    [[ $r == 10 ]] && fcond "$m 50" 'a < b' && st=0
    record "baseline RTT $t" "10/10 replies, < 50 ms" "$r/10, median $m ms" "< 50 ms" "$([[ $st == 0 ]] && echo PASS || echo FAIL)"
done

# ------------------------------------------------------------------ 3
log "3. Slow Net: 32 kbit/s and 100 ms each way, DNS queries +200 ms"
activate_ok "Slow Net"
check_status "Slow Net: status" true "Slow Net"
{
    echo "# $IF_C"
    cli tc qdisc show dev "$IF_C" | sed "s/^/$IF_C: /"
    echo "# $IFB"
    cli tc qdisc show dev "$IFB" | sed "s/^/$IFB: /"
} >"$WORK/tc.slow" 2>&1 || true
sed 's/^/      /' "$WORK/tc.slow"
tree_ok=0
for pat in "$IF_C: qdisc htb 7a00: root" "$IF_C: qdisc netem 7a10: parent 7a00:10 .*delay 100ms" \
    "$IF_C: qdisc netem 7a11: parent 7a00:11 .*delay 300ms" "$IF_C: qdisc pfifo 7a02: parent 7a00:2" \
    "$IF_C: qdisc ingress ffff:" "$IFB: qdisc htb 7a00: root" "$IFB: qdisc netem 7a10: parent 7a00:10 .*delay 100ms"; do
    grep -q -- "$pat" "$WORK/tc.slow" || { note "tc readback: missing /$pat/"; tree_ok=1; }
done
check_bool "Slow Net: tc tree (tc readback)" "htb 7a00:, netem 7a10: 100ms, 7a11: 300ms, ingress, IFB $IFB" \
    "$([[ $tree_ok == 0 ]] && echo as-promised || echo 'see missing above')" $tree_ok

probe_cli 180 rtt "${targs[@]}" --rounds 10 --interval 0.3 --timeout 3 >"$WORK/rtt.slow.json" || true
for t in "${TARGETS[@]}"; do
    b=$(rtt_field "$WORK/rtt.base.json" "$t" median_ms)
    m=$(rtt_field "$WORK/rtt.slow.json" "$t" median_ms)
    r=$(rtt_field "$WORK/rtt.slow.json" "$t" received)
    extra=$(minus "$m" "$b")
    note "$t: median $m ms (baseline $b ms), $r/10 replies, samples $(json "$WORK/rtt.slow.json" ".[] | select(.target == \"$t\") | .samples_ms | map(tostring) | join(\" \")")"
    case $t in
        udp:*:7) check_rel "Slow Net extra RTT $t" "$extra" 200 15 ms " ($m - base $b)" ;;
        *:53) check_rel "Slow Net extra RTT $t (DNS)" "$extra" 400 15 ms " ($m - base $b)" ;;
        tcp:*:22)
            check_max "Slow Net TCP/22 exempt $t connect" "$extra" 20 ms "baseline (+0 ms)"
            e=$(minus "$(rtt_field "$WORK/rtt.slow.json" "$t" echo_median_ms)" "$(rtt_field "$WORK/rtt.base.json" "$t" echo_median_ms)")
            check_max "Slow Net TCP/22 exempt $t echo" "$e" 20 ms "baseline (+0 ms)"
            ;;
    esac
done

for dir in up down; do
    wait_drained 60 || true
    probe_cli 90 throughput --dir "$dir" --host "$S4" --ctl "$CTL" --duration 17 --skip 3 >"$WORK/tput.$dir.json" || true
    note "throughput $dir: $(cat "$WORK/tput.$dir.json")"
    g=$(json "$WORK/tput.$dir.json" '.goodput_bps')
    l=$(json "$WORK/tput.$dir.json" '.link_bps')
    w=$(json "$WORK/tput.$dir.json" '.window_s')
    label=$([[ $dir == up ]] && echo "upload client->server" || echo "download server->client")
    st=FAIL
    lo=27200 hi=36800
    [[ $l != null ]] && fcond "$l $lo $hi" 'a >= b && a <= c' && st=PASS
    record "Slow Net throughput $label" "32000 bit/s link" "$l bit/s link (goodput $g bit/s over ${w}s, x1514/1448)" "±15% [$lo, $hi]" $st
done

# ------------------------------------------------------------------ 4
log "4. switch Slow Net -> Nasty Net with a TCP session open; 90% loss each way"
ip netns exec "$NS_C" timeout 400 python3 "$PROBE" session --target "tcp:$S4:22" --until "$WORK/session.go" --wait 300 \
    >"$WORK/session.json" 2>"$WORK/session.err" &
SESSION_PID=$!
for _ in $(seq 150); do grep -q "session open" "$WORK/session.err" 2>/dev/null && break; sleep 0.2; done
root_bytes() { cli tc -s -j qdisc show dev "$1" 2>/dev/null | jq -r '.[] | select(.handle == "7a00:" and .root == true) | .bytes' 2>/dev/null || echo null; }
ifb_index() { cli ip -j link show "$IFB" 2>/dev/null | jq -r '.[0].ifindex' 2>/dev/null || echo null; }
before_c=$(root_bytes "$IF_C")
before_b=$(root_bytes "$IFB")
before_i=$(ifb_index)
activate_ok "Nasty Net"
check_status "Nasty Net: status" true "Nasty Net"
after_c=$(root_bytes "$IF_C")
after_b=$(root_bytes "$IFB")
after_i=$(ifb_index)
st=1
[[ $before_c != null && $after_c != null && $before_b != null && $after_b != null && $before_i == "$after_i" && $before_i != null ]] &&
    fcond "$after_c $before_c" 'a >= b' && fcond "$after_b $before_b" 'a >= b' && st=0
check_bool "switch keeps the tree (no teardown)" "root htb counters and IFB kept" \
    "veth-c root bytes $before_c->$after_c, IFB bytes $before_b->$after_b, IFB ifindex $before_i->$after_i" $st
cli tc qdisc show dev "$IF_C" | sed 's/^/      /'

probe_cli 120 loss --ctl "$CTL" --count 2000 --task "up:$S4" --task "down:$S4" \
    --task "up:$S6" --task "down:$S6" >"$WORK/loss.nasty.json" || true
read -r lo hi < <(binomial_interval 2000 0.10 3.29)
for task in "up:$S4" "down:$S4" "up:$S6" "down:$S6"; do
    got=$(json "$WORK/loss.nasty.json" ".[] | select(.task == \"$task\") | .received")
    loss=$(awk -v g="$got" 'BEGIN { if (g == "null" || g == "") print "?"; else printf "%.1f", 100 - g / 20 }')
    check_range "Nasty Net delivered ${task%%:*} ${task#*:}" "$got" "$lo" "$hi" "of 2000" \
        "90% loss: 200 of 2000 (binomial z=3.29)" " (loss $loss%)"
done

touch "$WORK/session.go"
wait "$SESSION_PID" 2>/dev/null || true
SESSION_PID=""
s_after=$(json "$WORK/session.json" '.after')
check_bool "TCP/22 session survives the switch" "echo works after switch" \
    "connected=$(json "$WORK/session.json" '.connected') before=$(json "$WORK/session.json" '.before') after=$s_after" \
    "$([[ $s_after == true ]]; echo $?)"

# ------------------------------------------------------------------ 5
log "5. Black Hole: requests leave, nothing comes back; SSH and ND keep working"
activate_ok "Black Hole"
check_status "Black Hole: status" true "Black Hole"
probe_cli 120 loss --ctl "$CTL" --count 1000 --task "up:$S4" --task "down:$S4" \
    --task "up:$S6" --task "down:$S6" >"$WORK/loss.bh.json" || true
for task in "up:$S4" "up:$S6"; do
    got=$(json "$WORK/loss.bh.json" ".[] | select(.task == \"$task\") | .received")
    check_range "Black Hole uplink delivered ${task#*:}" "$got" 990 1000 "of 1000" "all (uplink unaffected)"
done
for task in "down:$S4" "down:$S6"; do
    got=$(json "$WORK/loss.bh.json" ".[] | select(.task == \"$task\") | .received")
    check_range "Black Hole downlink delivered ${task#*:}" "$got" 0 0 "of 1000" "none"
done
probe_cli 120 rtt --target "udp:$S4:7" --target "udp:[$S6]:7" --target "tcp:$S4:22" --target "tcp:[$S6]:22" \
    --rounds 5 --interval 0.1 --timeout 1 >"$WORK/rtt.bh.json" || true
for t in "udp:$S4:7" "udp:[$S6]:7"; do
    r=$(rtt_field "$WORK/rtt.bh.json" "$t" received)
    check_range "Black Hole UDP echo replies $t" "$r" 0 0 "of 5" "none"
done
for t in "tcp:$S4:22" "tcp:[$S6]:22"; do
    r=$(rtt_field "$WORK/rtt.bh.json" "$t" received)
    e=$(minus "$(rtt_field "$WORK/rtt.bh.json" "$t" echo_median_ms)" "$(rtt_field "$WORK/rtt.base.json" "$t" echo_median_ms)")
    check_range "Black Hole TCP/22 reachable $t" "$r" 5 5 "of 5 connect+echo" "all"
    check_max "Black Hole TCP/22 extra RTT $t" "$e" 20 ms "baseline (+0 ms)"
done
ip -n "$NS_C" neigh flush all || true
ip -n "$NS_S" neigh flush all || true
nd=1
tcp_echo_ok "$S6" 22 && nd=0
neigh=$(ip -n "$NS_C" -6 neigh show "$S6" | tr '\n' ' ')
check_bool "Black Hole IPv6 ND after neigh flush" "TCP/22 over IPv6 connects" "echo $([[ $nd == 0 ]] && echo ok || echo failed); neigh: ${neigh:-none}" $nd
arp=1
tcp_echo_ok "$S4" 22 && arp=0
check_bool "Black Hole ARP after neigh flush" "TCP/22 over IPv4 connects" "echo $([[ $arp == 0 ]] && echo ok || echo failed)" $arp

# ------------------------------------------------------------------ 6
log "6. off and SIGTERM leave nothing behind"
lc_capture off
check_rc "off" "$LC_RC" 0 "succeeds"
check_snapshot "off: nothing left" "$WORK/snap.before"
check_status "off: status" false null
activate_ok "Slow Net"
daemon_stop TERM
check_rc "SIGTERM: daemon exit status" "$DAEMON_RC" 0 "exit 0"
check_snapshot "SIGTERM: nothing left" "$WORK/snap.before"

# ------------------------------------------------------------------ 7
log "7. a qdisc linkcond did not create"
daemon_start || fatal "linkcondd did not restart"
cli tc qdisc add dev "$IF_C" root handle 1: htb || note "could not add the foreign qdisc"
snapshot "$WORK/snap.foreign"
lc_capture activate "Slow Net"
check_rc "foreign qdisc: activate refused" "$LC_RC" nonzero "non-zero exit"
check_contains "foreign qdisc: message" "$LC_ERR" "did not create"
check_snapshot "foreign qdisc: untouched" "$WORK/snap.foreign"
lc_capture activate "Slow Net" --replace-foreign
check_rc "activate --replace-foreign" "$LC_RC" 0 "succeeds"
root=$(cli tc qdisc show dev "$IF_C" | awk '/ root /{ print $2, $3; exit }')
check_bool "--replace-foreign: root is linkcond's" "htb 7a00:" "${root:-none}" "$([[ $root == "htb 7a00:" ]]; echo $?)"
lc_capture off
check_rc "off after --replace-foreign" "$LC_RC" 0 "succeeds"
check_snapshot "off after --replace-foreign: default qdisc" "$WORK/snap.before"
cli tc qdisc del dev "$IF_C" root 2>/dev/null || true

# ------------------------------------------------------------------ 8
log "8. errors a user meets"
absent="$WORK/absent.sock"
run_capture 30 "$BIN/linkcond" --socket "$absent" status
note "linkcond --socket $absent status -> exit $RC: $OUT"
check_rc "no daemon: client fails" "$RC" nonzero "non-zero exit"
check_contains "no daemon: names the socket" "$OUT" "$absent"

lc_capture activate "slow nte"
check_rc "unknown profile: fails" "$LC_RC" nonzero "non-zero exit"
check_contains "unknown profile: suggestion" "$LC_ERR" "Slow Net"

run_capture 30 env LINKCOND_SOCKET="$SOCK" "$BIN/linkcond" status
check_rc "LINKCOND_SOCKET selects the socket" "$RC" 0 "status succeeds"

mkdir -p -m 1777 "$WORK/unpriv"
run_capture 30 ip netns exec "$NS_C" setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$BIN/linkcondd" --interface "$IF_C" --socket "$WORK/unpriv/linkcond.sock" --profiles "$PROFILES"
note "linkcondd as uid 65534 -> exit $RC: $OUT"
check_rc "unprivileged daemon: fails" "$RC" nonzero "non-zero exit"
check_contains "unprivileged daemon: message" "$OUT" "CAP_NET_ADMIN"

run_capture 30 ip netns exec "$NS_C" "$BIN/linkcondd" --interface nosuch --socket "$WORK/nosuch.sock" --profiles "$PROFILES"
note "linkcondd --interface nosuch -> exit $RC: $OUT"
check_rc "missing interface: daemon fails" "$RC" nonzero "non-zero exit"
check_contains "missing interface: message" "$OUT" "does not exist"

daemon_stop TERM
check_rc "final SIGTERM: daemon exit status" "$DAEMON_RC" 0 "exit 0"

# ------------------------------------------------------------------ summary
rc=0
summary_table || rc=1
printf 'suite time: %ds\n' $((SECONDS - T0))
if ((rc != 0)); then
    printf '\n--- linkcondd log (last 120 lines)\n'
    tail -n 120 "$DAEMON_LOG"
fi
exit $rc
