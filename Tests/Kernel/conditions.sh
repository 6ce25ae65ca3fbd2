#!/usr/bin/env bash
# Conditions on several interfaces at once, in a lane of the kernel suite (LC_LANE) that runs
# side by side with the rest (Tests/Kernel/suite.sh starts it, beside scopes.sh). The client
# namespace has two links to the server: its own veth pair (the daemon's default interface) and a
# second one (--interface). Each link gets a condition of its own, measured with real packets;
# switching, removing, a SIGKILL and a restart of the daemon, and `run --interface` on one leave
# the other exactly as it was. Then a condition inside a container's network namespace (a process
# in a namespace of its own, reached by its PID) and inside a named one (`ip netns`), each ended
# by the end of its namespace.
# Checks go to this lane's results file, which the suite merges.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/conditions-setup.sh"
# Metrics on TCP too, inside the client namespace (its own loopback).
METRICS_ADDRESS=127.0.0.1:9464
DAEMON_ARGS=(--enable-fault-injection --metrics-listen "$METRICS_ADDRESS")
daemon_start "${DAEMON_ARGS[@]}"

# ------------------------------------------------------------------ 21
log "21. lane $LANE: a condition on each of two interfaces, each measured against its own profile"
measure "$S4" "$S6"
BASE_C=$RTT4
measure "$T4" "$T6"
BASE_E=$RTT4
record "baseline round trip over both links" "< 50 ms, 20/20 replies" "$BASE_C ms / $BASE_E ms, $GOT/20" "< 50 ms" \
    "$(fcond "$BASE_C $BASE_E" 'a < 50 && b < 50' && [[ $GOT == 20 ]] && echo PASS || echo FAIL)"
IDLE_E=$(tree_e)
lc activate "LC Test A" >/dev/null
lc_capture activate --interface "$IF_E" "LC Test B"
check_rc "activate --interface $IF_E" "$LC_RC" 0 "succeeds"
check_contains "activate --interface: answers with that interface's condition" "$LC_OUT" "$IF_E: LC Test B"
measure "$S4" "$S6"
check_added "default interface $IF_C under A" "$BASE_C" 100
measure "$T4" "$T6"
check_added "second interface $IF_E under B" "$BASE_E" 25
check_equal "status lists both conditions, the default first" "$IF_C=LC Test A $IF_E=LC Test B" "$(conditions_now)"
lc_capture status
check_contains "status (text) shows the second condition" "$LC_OUT" "$IF_E: LC Test B"
check_equal "status --all --json lists both, as GET /v1/conditions does (what the lanes read with curl)" \
    "$IF_C=LC Test A $IF_E=LC Test B" \
    "$(lc status --all --json | jq -r '[.conditions[]? | "\(.id)=\(.profile.name // "off")"] | join(" ")')"

# ------------------------------------------------------------------ 22
log "22. lane $LANE: switching or removing one condition leaves the other exactly as it was"
SIG_E=$(tree_e)
SIG_C=$(tree_c)
before=$(executed_steps)
lc activate "Nasty Net" >/dev/null
lc activate "LC Test A" >/dev/null
with_other=$(( $(executed_steps) - before ))
check_equal "switching the default condition twice: the other's tree" "$SIG_E" "$(tree_e)"
lc off --interface "$IF_E" >/dev/null
check_equal "off --interface $IF_E: its tree gone" "$IDLE_E" "$(tree_e)"
check_equal "off --interface $IF_E: the default's tree" "$SIG_C" "$(tree_c)"
check_equal "off --interface: the condition leaves the list" "$IF_C=LC Test A" "$(conditions_now)"
before=$(executed_steps)
lc activate "Nasty Net" >/dev/null
lc activate "LC Test A" >/dev/null
alone=$(( $(executed_steps) - before ))
check_equal "netlink steps of the same two switches with and without another condition" "$alone" "$with_other"

lc activate --interface "$IF_E" "100% Loss" >/dev/null
measure "$T4" "$T6"
check_equal "100% Loss on $IF_E: replies over it" "0" "$GOT"
measure "$S4" "$S6"
check_added "meanwhile the default interface, still under A" "$BASE_C" 100

# ------------------------------------------------------------------ 23
log "23. lane $LANE: SIGKILL of the daemon and a restart re-adopt both conditions"
SIG_E=$(tree_e)
SIG_C=$(tree_c)
ifb_e_index=$(cli cat "/sys/class/net/$IFB_E/ifindex" 2>/dev/null || echo none)
daemon_stop KILL
daemon_start "${DAEMON_ARGS[@]}"
check_equal "after a restart: both conditions back" "$IF_C=LC Test A $IF_E=100% Loss" "$(conditions_now)"
check_equal "after a restart: the default's tree untouched" "$SIG_C" "$(tree_c)"
check_equal "after a restart: the second's tree untouched" "$SIG_E" "$(tree_e)"
check_equal "after a restart: the second's IFB is the same device (re-adopted, not rebuilt)" "$ifb_e_index" \
    "$(cli cat "/sys/class/net/$IFB_E/ifindex" 2>/dev/null || echo none)"
lc_capture history -n 20
check_contains "history names the interface of each change" "$LC_OUT" "$IF_E  off -> 100% Loss"

# ------------------------------------------------------------------ 24
log "24. lane $LANE: run --interface holds a lease on that interface only, for as long as the command runs"
lc off --interface "$IF_E" >/dev/null
run_capture 120 "$BIN/linkcond" --socket "$SOCK" run --interface "$IF_E" --profile "LC Test B" -- \
    ip netns exec "$NS_C" python3 "$PROBE" rtt --target "udp:$T4:7" --rounds 10 --interval 0.05 --timeout 1
check_rc "run --interface $IF_E: exit status" "$RC" 0 "the command's own, 0"
RTT4=$(printf '%s' "$OUT" | sed -n '/^\[/,$p' | jq -r '.[0].median_ms // "null"' 2>/dev/null || echo null)
RTT6=$RTT4
extra=$(minus "$RTT4" "$BASE_E")
check_range "run --interface $IF_E: the command's round trip, added" "$extra" 24 35 ms "+25 ms (B), -1 ms, +10 ms"
check_equal "after run: the second interface is clean" "$IDLE_E" "$(tree_e)"
check_equal "after run: the default is untouched" "$SIG_C" "$(tree_c)"

lc_capture activate --interface nosuch0 "LC Test B"
check_rc "activate on an interface that does not exist" "$LC_RC" nonzero "refused"
check_contains "activate on an interface that does not exist: says so" "$LC_ERR" "no interface 'nosuch0'"

# ------------------------------------------------------------------ 25
log "25. lane $LANE: off --all, and a stop with two conditions in force, leave nothing"
lc activate --interface "$IF_E" "LC Test B" >/dev/null
lc_capture off --all
check_rc "off --all" "$LC_RC" 0 "succeeds"
check_equal "off --all: both trees gone" "none none" "$(tree_c) $(tree_e)"
check_equal "off --all: only the default condition is listed, off" "$IF_C=off" "$(conditions_now)"
lc activate "LC Test A" >/dev/null
lc activate --interface "$IF_E" "LC Test B" >/dev/null
daemon_stop TERM
check_rc "SIGTERM with two conditions: exit status" "$DAEMON_RC" 0 "exit 0"
ifbs=$(cli ip -o link show type ifb | grep -c 'lc-' || true)
check_equal "SIGTERM with two conditions: nothing left on either, no IFB of ours" "none none 0" "$(tree_c) $(tree_e) $ifbs"
left=$(ls "$WORK/state" 2>/dev/null | tr '\n' ' ')
check_equal "SIGTERM: no state file left" "none" "${left:-none}"

# ------------------------------------------------------------------ 26
log "26. lane $LANE: a condition inside a container's network namespace, by its PID, and inside a named one"
# The container: a process in a network namespace of its own, as Docker makes one, linked to
# the server namespace by a veth pair. Nothing holds the namespace but the process.
IF_K=veth-k$LANE
K4=10.79.${LANE:-0}.1
U4=10.79.${LANE:-0}.2
K6=fd79:${LANE:-0}::1
U6=fd79:${LANE:-0}::2
unshare --net sleep 600 </dev/null >/dev/null 2>&1 &
CONTAINER_PID=$!
container() { nsenter -t "$CONTAINER_PID" -n "$@"; }
for _ in $(seq 50); do
    [[ $(readlink "/proc/$CONTAINER_PID/ns/net" 2>/dev/null) != "$(readlink /proc/self/ns/net)" ]] && break
    snooze 0.1
done
ip link add "veth-u$LANE" netns "$NS_S" type veth peer name "$IF_K" netns "$CONTAINER_PID"
container ip link set lo up
container ip addr add "$K4/24" dev "$IF_K"
container ip addr add "$K6/64" dev "$IF_K" nodad
ip -n "$NS_S" addr add "$U4/24" dev "veth-u$LANE"
ip -n "$NS_S" addr add "$U6/64" dev "veth-u$LANE" nodad
container ethtool -K "$IF_K" tso off gso off gro off >/dev/null
srv ethtool -K "veth-u$LANE" tso off gso off gro off >/dev/null
container ip link set "$IF_K" up
ip -n "$NS_S" link set "veth-u$LANE" up
measure_container() {
    container timeout 120 python3 "$PROBE" rtt --target "udp:$U4:7" --target "udp:[$U6]:7" --rounds 10 --interval 0.05 --timeout 1 \
        >"$WORK/rtt.json" 2>/dev/null || true
    RTT4=$(rtt_field "$WORK/rtt.json" "udp:$U4:7" median_ms)
    RTT6=$(rtt_field "$WORK/rtt.json" "udp:[$U6]:7" median_ms)
    GOT=$(( $(rtt_field "$WORK/rtt.json" "udp:$U4:7" received | sed 's/null/0/') + $(rtt_field "$WORK/rtt.json" "udp:[$U6]:7" received | sed 's/null/0/') ))
}
# The root and the ingress qdisc of an interface, as "kind handle" pairs.
root_and_ingress() { awk '$4 == "root" || $2 == "ingress" { printf "%s %s ", $2, $3 }'; }
ID_K="pid/$CONTAINER_PID/$IF_K"
for _ in $(seq 100); do container ip link show "$IF_K" | grep -q 'state UP' && break; snooze 0.1; done

daemon_start "${DAEMON_ARGS[@]}"
lc activate "LC Test A" >/dev/null
SIG_C=$(tree_c)
measure_container
BASE_K=$RTT4
record "container link: baseline round trip" "< 50 ms, 20/20 replies" "$BASE_K ms, $GOT/20" "< 50 ms" \
    "$(fcond "$BASE_K" 'a < 50' && [[ $GOT == 20 ]] && echo PASS || echo FAIL)"
lc_capture activate --pid "$CONTAINER_PID" --interface "$IF_K" "LC Test B"
check_rc "activate --pid --interface $IF_K" "$LC_RC" 0 "succeeds"
measure_container
check_added "inside the container, under B" "$BASE_K" 25
check_equal "the container's condition in status, by its id" "$IF_C=LC Test A $ID_K=LC Test B" "$(conditions_now)"
check_equal "linkcondd's own interface meanwhile: its tree" "$SIG_C" "$(tree_c)"
check_equal "the tree and the IFB are inside the container, nothing of them in linkcondd's namespace" \
    "htb 7a00: ingress ffff: / IFB lc-$IF_K inside / none here" \
    "$(container tc qdisc show dev "$IF_K" | root_and_ingress)/ $(container ip -o link show "lc-$IF_K" >/dev/null 2>&1 && echo "IFB lc-$IF_K inside" || echo "no IFB inside") / $(cli ip -o link show "lc-$IF_K" >/dev/null 2>&1 && echo "lc-$IF_K here" || echo "none here")"
lc_capture activate --pid "$DAEMON_PID" --interface "$IF_C" "LC Test B"
check_rc "activate --pid of linkcondd itself: its own interface under another name" "$LC_RC" nonzero "refused"
check_contains "activate --pid of linkcondd itself: names the id to use" "$LC_ERR" "use $IF_C"

# A SIGKILL and a restart: the condition is re-adopted inside the container.
tree_k() { (TREE_PID=$CONTAINER_PID IF_C=$IF_K IFB=lc-$IF_K tree_signature); }
TREE_K=$(tree_k)
daemon_stop KILL
daemon_start "${DAEMON_ARGS[@]}"
check_equal "after a restart: the container's condition back" "$IF_C=LC Test A $ID_K=LC Test B" "$(conditions_now)"
check_equal "after a restart: the container's tree" "$TREE_K" "$(tree_k)"

# The daemon SIGKILLs itself before chosen steps of a build inside the container (before the
# IFB, just after it, among the classes, the filters, the ingress redirects), and is
# restarted: the container's condition is the old one (off) or the new one, whole.
container_condition() { list_json | jq -r --arg id "$ID_K" '[.conditions[]? | select(.id == $id) | .profile.name][0] // "off"'; }
steps_k=$(lc off --pid "$CONTAINER_PID" --interface "$IF_K" >/dev/null; before=$(executed_steps)
    lc activate --pid "$CONTAINER_PID" --interface "$IF_K" "LC Test B" >/dev/null; echo $(( $(executed_steps) - before )))
killed=0 consistent=0 first_bad=""
for k in 0 1 2 10 20 30 40 $((steps_k - 1)); do
    lc off --pid "$CONTAINER_PID" --interface "$IF_K" >/dev/null
    arm_kill "$k"
    timeout 30 curl -s --unix-socket "$SOCK" -X PUT -d '{"profile": "LC Test B"}' "http://linkcond/v1/conditions/$ID_K" >/dev/null 2>&1 || true
    kill -0 "$DAEMON_PID" 2>/dev/null && continue
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=""
    killed=$((killed + 1))
    daemon_start "${DAEMON_ARGS[@]}"
    now=$(container_condition)
    tree=$(tree_k)
    if [[ ($now == off && $tree == none) || ($now == "LC Test B" && $tree == "$TREE_K") ]]; then
        consistent=$((consistent + 1))
    else
        first_bad=${first_bad:-"; first: step $k, status $now, tree $tree"}
    fi
done
check_range "SIGKILL before 8 steps of a build inside the container ($steps_k steps): killed" "$killed" 8 8 "of 8" "each time"
check_range "SIGKILL inside the container + restart: consistent" "$consistent" "$killed" "$killed" "of $killed" \
    "all: off with nothing left, or LC Test B whole" "$first_bad"
# The process a condition was named by exits while the container lives on (a `docker exec`'s
# PID, say): the condition ends, and nothing of linkcond's stays in the living namespace.
lc off --pid "$CONTAINER_PID" --interface "$IF_K" >/dev/null
nsenter -t "$CONTAINER_PID" -n sleep 600 </dev/null >/dev/null 2>&1 &
EXEC_PID=$!
for _ in $(seq 50); do
    [[ $(readlink "/proc/$EXEC_PID/ns/net" 2>/dev/null) == "$(readlink "/proc/$CONTAINER_PID/ns/net")" ]] && break
    snooze 0.1
done
lc_capture activate --pid "$EXEC_PID" --interface "$IF_K" "LC Test B"
check_rc "activate --pid of a second process in the container" "$LC_RC" 0 "succeeds"
check_equal "the second process's condition: the container's tree" "$TREE_K" "$(tree_k)"
kill -KILL "$EXEC_PID"
wait "$EXEC_PID" 2>/dev/null || true
t0=$SECONDS
until [[ $(conditions_now) == "$IF_C=LC Test A" ]] || ((SECONDS - t0 > 10)); do snooze 0.2; done
check_range "the process named exits, the container lives: its condition leaves the list within" "$((SECONDS - t0))" 0 10 s "seconds"
check_equal "the process named exits: nothing of linkcond's left in the living container" "tree none, no IFB" \
    "tree $(tree_k), $(container ip -o link show "lc-$IF_K" >/dev/null 2>&1 && echo "IFB lc-$IF_K" || echo "no IFB")"
lc_capture history -n 3
check_contains "history: removed through another process of the container" "$LC_OUT" "removed through /proc/"
lc activate --pid "$CONTAINER_PID" --interface "$IF_K" "LC Test B" >/dev/null

# The container stops: its namespace ends, and with it the condition.
kill -KILL "$CONTAINER_PID"
wait "$CONTAINER_PID" 2>/dev/null || true
CONTAINER_PID=""
t0=$SECONDS
until [[ $(conditions_now) == "$IF_C=LC Test A" ]] || ((SECONDS - t0 > 10)); do snooze 0.2; done
check_range "the container stops: its condition leaves the list within" "$((SECONDS - t0))" 0 10 s "seconds (the daemon looks every second)"
lc_capture history -n 5
check_contains "history says the namespace ended" "$LC_OUT" "namespace-ended"
check_equal "linkcondd's own interface meanwhile: its tree" "$SIG_C" "$(tree_c)"

# A named namespace (ip netns): shaped from inside; deleting it ends the condition too.
NAMED=lc-named$LANE
ip netns add "$NAMED"
ip link add "veth-n$LANE" netns "$NAMED" type veth peer name "veth-m$LANE" netns "$NS_S"
ip -n "$NAMED" link set "veth-n$LANE" up
lc_capture activate --netns "$NAMED" --interface "veth-n$LANE" "Slow Net"
check_rc "activate --netns $NAMED" "$LC_RC" 0 "succeeds"
check_equal "inside the named namespace: linkcond's root and ingress" "htb 7a00: ingress ffff: " \
    "$(tc -n "$NAMED" qdisc show dev "veth-n$LANE" | root_and_ingress)"
lc_capture activate --netns nosuch --interface eth0 "Slow Net"
check_contains "a namespace that does not exist: says so" "$LC_ERR" "ip netns list"
ip netns del "$NAMED"
t0=$SECONDS
until [[ $(conditions_now) == "$IF_C=LC Test A" ]] || ((SECONDS - t0 > 10)); do snooze 0.2; done
check_range "ip netns del: its condition leaves the list within" "$((SECONDS - t0))" 0 10 s "seconds (the daemon looks every second)"
# The daemon looked each second while those conditions lived: on its event loop's timer, never
# through Task.sleep, whose first use starts libdispatch's pool and its once-a-second monitor.
check_equal "after the namespace watch's seconds: threads in linkcondd not its own (libdispatch's workers)" "0" "$(foreign_threads "$DAEMON_PID")"
# ------------------------------------------------------------------ 26b
log "26b. lane $LANE: each direction's counters (GET /v1/stats, status): carried, dropped, queued, rate"
# The default condition's counters now, from the daemon, as one JSON object.
stats_now() { timeout 10 curl -s --unix-socket "$SOCK" http://linkcond/v1/stats | jq -c --arg id "$IF_C" '.conditions[] | select(.id == $id)'; }
# counted FIELD BEFORE AFTER: how much FIELD grew between two readings.
counted() { jq -n -r --argjson a "${2:-null}" --argjson b "${3:-null}" "if \$a == null or \$b == null then \"null\" else (\$b$1 - \$a$1) end"; }
# 200 datagrams each way, 90-byte IPv4 frames (48 bytes of payload): up, 100% loss drops them
# all; down, delay alone carries them all. A few of the host's own packets (neighbour
# discovery) may be counted besides.
lc activate "LC Test Drop" >/dev/null
before=$(stats_now)
probe_cli 90 loss --ctl "$CTL" --count 200 --gap 0.002 --task "up:$S4" --task "down:$S4" >"$WORK/counters.loss.json" || true
after=$(stats_now)
check_equal "counters: the server got none of the 200 sent up, the client all 200 sent down" "0 200" \
    "$(jq -r '[.[].received] | map(tostring) | join(" ")' "$WORK/counters.loss.json" 2>/dev/null)"
check_range "counters: uplink, dropped by the profile's 100% loss" "$(counted .uplink.droppedPackets "$before" "$after")" 200 210 packets "the 200 sent"
check_equal "counters: uplink, those drops are the loss's, none the queue's (droppedByLoss, droppedByQueue)" \
    "$(counted .uplink.droppedPackets "$before" "$after") 0" \
    "$(counted .uplink.droppedByLoss "$before" "$after") $(counted .uplink.droppedByQueue "$before" "$after")"
check_range "counters: uplink, carried under 100% loss" "$(counted .uplink.packets "$before" "$after")" 0 5 packets "none of them"
check_range "counters: downlink, carried" "$(counted .downlink.packets "$before" "$after")" 200 210 packets "the 200 sent"
check_range "counters: downlink, bytes carried" "$(counted .downlink.bytes "$before" "$after")" 15200 18900 bytes "200 frames of 76-90 bytes"
check_range "counters: downlink, dropped" "$(counted .downlink.droppedPackets "$before" "$after")" 0 0 packets "none"
lc_capture status
check_contains "status shows the counters on a traffic line" "$LC_OUT" "traffic: down "
# metric NAME DIRECTION [MORE LABELS]: one sample of the condition's.
metric() { timeout 10 curl -s --unix-socket "$SOCK" http://linkcond/metrics | awk -v k="$1{condition=\"$IF_C\",direction=\"$2\"${3:+,$3}}" '$1 == k { print $2 }'; }
check_equal "GET /metrics: the same counters, for Prometheus (uplink dropped by loss and by the queue, downlink packets)" \
    "$(jq -r '"\(.uplink.droppedByLoss) \(.uplink.droppedByQueue) \(.downlink.packets)"' <<<"$after")" \
    "$(metric linkcond_dropped_packets_total up 'reason="loss"') $(metric linkcond_dropped_packets_total up 'reason="queue"') $(metric linkcond_packets_total down)"
# The same series (names and labels: a counter may move between the two reads).
series() { grep -v '^#' | awk '{ print $1 }' | sort; }
check_equal "--metrics-listen $METRICS_ADDRESS: the same series over TCP; the rest of the API is not there" "same 404" \
    "$(cmp -s <(cli timeout 10 curl -s "http://$METRICS_ADDRESS/metrics" | series) \
        <(timeout 10 curl -s --unix-socket "$SOCK" http://linkcond/metrics | series) && echo same || echo different) \
$(cli timeout 10 curl -s -o /dev/null -w '%{http_code}' "http://$METRICS_ADDRESS/v1/status")"
# Hostile bytes to the metrics listener, which any process on the machine may reach (here any in
# the client namespace): answered with a 4xx JSON error or a scrape, none hung, and it still
# serves afterwards.
cli setpriv --reuid=65534 --regid=65534 --clear-groups timeout 300 "$(command -v /usr/bin/python3 || command -v python3)" "$KDIR/hostile.py" \
    --tcp "$METRICS_ADDRESS" --count 900 >"$WORK/hostile-tcp.json" || true
note "hostile, metrics listener: $(jq -c '{requests, answers, by_status, failures, seconds}' "$WORK/hostile-tcp.json" 2>/dev/null)"
{ jq -c '.examples[]?' "$WORK/hostile-tcp.json" 2>/dev/null || true; } | head -5 | sed 's/^/      /'
check_equal "hostile bytes to --metrics-listen: every answer a 4xx JSON error or a scrape, none hung; it serves on" "0 broken, 200" \
    "$(jq -r .failures "$WORK/hostile-tcp.json" 2>/dev/null || echo null) broken, $(cli timeout 10 curl -s -o /dev/null -w '%{http_code}' "http://$METRICS_ADDRESS/metrics")"
# A burst of 300 into 4 kbit/s: htb lets its 1600-byte bucket through, the queue below netem
# holds 32 (its least), the rest is dropped; the queue then drains at the rate for about five
# seconds. The packets reach the queue, and its drops are counted, when the link next takes one
# (at 4 kbit/s a 90-byte frame every 180 ms): the first reading waits that long.
lc activate "LC Test Queue" >/dev/null
before=$(stats_now)
probe_cli 90 loss --ctl "$CTL" --count 300 --gap 0.0003 --grace 0.1 --task "up:$S4" >/dev/null || true
snooze 0.4
first=$(stats_now)
snooze 1.5
second=$(stats_now)
# `linkcond watch` into a file meanwhile: plain lines, one per update, rates and drops.
lc watch --interval 1 --count 2 >"$WORK/watch.out" 2>&1 &
watch_pid=$!
snooze 6
drained=$(stats_now)
wait "$watch_pid" || true
note "watch: $(tr '\n' '|' <"$WORK/watch.out")"
check_equal "watch, not on a terminal: one plain line per update for the condition" "2 2" \
    "$(wc -l <"$WORK/watch.out") $(grep -c " $IF_C LC Test Queue; down " "$WORK/watch.out")"
check_equal "watch: the uplink's drops on its last line, since the condition's objects were made, as GET /v1/stats counts them" \
    "$(jq -r '.uplink.droppedPackets' <<<"$drained")" \
    "$(tail -1 "$WORK/watch.out" | sed -n 's/.*; up [^;]* bytes \([0-9]*\) dropped.*/\1/p' | grep . || echo null)"
note "counters: before $before; after the burst $first; 1.5 s later $second; drained $drained"
check_range "counters: a full queue's drops" "$(counted .uplink.droppedPackets "$before" "$first")" 200 280 packets "300 less the bucket's and the queue's"
check_equal "counters: those drops are the queue's, none the loss's (droppedByQueue, droppedByLoss)" \
    "$(counted .uplink.droppedPackets "$before" "$first") 0" \
    "$(counted .uplink.droppedByQueue "$before" "$first") $(counted .uplink.droppedByLoss "$before" "$first")"
check_range "counters: queued just after the burst" "$(jq -r '.uplink.queuedPackets // "null"' <<<"$first")" 1 32 packets "up to the queue's 32"
check_rel "counters: the rate while the queue drains, over the time between two reads" "$(jq -r '.uplink.bitsPerSecond // "null"' <<<"$second")" 4000 25 bit/s
check_range "counters: carried, dropped and queued add up to what was sent" \
    "$(jq -n -r --argjson a "$before" --argjson b "$drained" '($b.uplink.packets - $a.uplink.packets) + ($b.uplink.droppedPackets - $a.uplink.droppedPackets) + $b.uplink.queuedPackets')" \
    300 310 packets "the 300 sent"
lc activate "LC Test A" >/dev/null
# `run` says what its command's traffic met when it ends, and writes it for CI with
# --json-summary: 100 datagrams up under 100% loss, each dropped.
lc_capture run --profile "LC Test Drop" --json-summary "$WORK/run-summary.json" -- \
    ip netns exec "$NS_C" python3 "$PROBE" loss --ctl "$CTL" --count 100 --gap 0.002 --task "up:$S4"
check_contains "run: one line on stderr when the command ends" "$LC_ERR" "LC Test Drop on $IF_C for "
check_equal "run --json-summary: the condition, profile, status and how it ended" "$IF_C LC Test Drop 0 released" \
    "$(jq -r '"\(.condition) \(.profile) \(.exitStatus) \(.ended)"' "$WORK/run-summary.json" 2>/dev/null)"
check_range "run --json-summary: uplink packets dropped by the loss while the command ran" \
    "$(json "$WORK/run-summary.json" .uplink.droppedByLoss)" 100 105 packets "the 100 it sent"
check_equal "run --json-summary: and none by the queue; all the drops" "0 $(json "$WORK/run-summary.json" .uplink.droppedByLoss)" \
    "$(json "$WORK/run-summary.json" .uplink.droppedByQueue) $(json "$WORK/run-summary.json" .uplink.droppedPackets)"
check_equal "run: the condition from before is back" "LC Test A" \
    "$(list_json | jq -r --arg id "$IF_C" '.conditions[] | select(.id == $id) | .profile.name // "off"')"

daemon_stop TERM
check_equal "SIGTERM after both namespaces ended: no state file left" "none" "$(ls "$WORK/state" 2>/dev/null | tr '\n' ' ' | sed 's/ $//' | grep . || echo none)"

