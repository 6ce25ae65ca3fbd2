#!/usr/bin/env bash
# Trace-driven links on a real kernel, in a lane of the kernel suite (LC_LANE) or alone in the
# VM: with full-size UDP frames offered above the trace's peak in both directions at once, the
# throughput delivered in each 1 s window is within 10% of the trace's capacity there, an
# outage lets at most one frame through, and 100 ms windows' errors are reported. Each shipped
# synthetic trace (traces/: steps, ramp, outage) plays in both directions, at a quarter of its
# rates (scripts/make-traces --divide 4): the emulated VM's Python senders fall short of
# 12 Mbit/s each way (at most 8 Mbit/s and 700 frames a second were offered, 2026-11-26).
# Checks go to this lane's results file, which the suite merges.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:?set LINKCOND_BIN}
CHECK="$KDIR/trace_check.py"
# Offered load: 1.3 times the divided traces' 3 Mbit/s peak, so that the shaper's queue never runs dry.
OFFER_BPS=3900000
# A window may differ from the trace's capacity by this much (1 s windows).
TOLERANCE=0.10

lane_begin
# In force before each trace, at the traces' peak: the trace's first window is then a change in
# place, as every later one is, and the flow is already queued behind the shaper.
trace_profiles "LC Before Trace"
trace_profile "LC Trace A" steps outage
trace_profile "LC Trace B" ramp steps
trace_profile "LC Trace C" outage ramp

modprobe ifb numifbs=0
modprobe -a veth sch_netem sch_htb sch_ingress cls_u32 cls_flower act_mirred
topo_up
server_start
snapshot "$WORK/snap.before"
daemon_start

# judge_trace PROFILE DIRECTION TRACE SECONDS: the direction's windows against the trace.
judge_trace() {
    local key start result
    key=$(tr ' ' - <<<"${1,,}")
    start=$(json "$WORK/$key.status.json" '.trace.monotonicStartMilliseconds')
    result="$WORK/$key.$2.json"
    python3 "$CHECK" "$PROFILES/$3.trace" "$WORK/$key.arrivals.json" "$2" "$start" --until-s "$4" >"$result" 2>"$result.err" || echo '{}' >"$result"
    note "$3 $2: $(jq -c '{sent, received, judged, largest_error, mean_error, outage_windows, most_frames_in_an_outage, fine_error_quantiles}' "$result" 2>/dev/null)"
    note "$3 $2 windows (from ms, capacity, delivered): $(jq -r '[.windows[] | "\(.from_ms):\(.capacity_bps)/\(.delivered_bps)"] | join(" ")' "$result" 2>/dev/null)"
    check_range "trace $3 $2: 1 s windows judged" "$(json "$result" .judged)" "$5" 1000 windows "every second of the trace but the last"
    check_max "trace $3 $2: each 1 s window's throughput against the trace's capacity (largest error)" \
        "$(json "$result" .largest_error)" "$TOLERANCE" "" "within ±10%"
    if [[ $3 == outage ]]; then
        check_max "trace $3 $2: frames delivered in a second of the outage" "$(json "$result" .most_frames_in_an_outage)" 1 frames \
            "at most 1 (the outage's rate is one packet over its length)"
    fi
}

# ------------------------------------------------------------------ 41
log "41. lane $LANE: trace-driven links, both directions at once, against the traces' capacities"
"$REPO/scripts/make-traces" "$WORK/made" >/dev/null
check_equal "the shipped traces are what scripts/make-traces writes" "" "$(diff -rq "$REPO/traces" "$WORK/made" 2>&1)"
check_equal "the shipped traces load with a profile" "LC Trace A" "$(lc show "LC Trace A" --json 2>/dev/null | jq -r .name)"
# 11 s of each: two loops of steps, an outage whole with a second of the trace on each side, and
# the ramp's climb from 1.2 to 11.4 Mbit/s (÷4).
for run in "A down steps up outage" "B down ramp up steps" "C down outage up ramp"; do
    read -r letter _ down _ up <<<"$run"
    play_trace "LC Trace $letter" 11 "LC Before Trace" "$OFFER_BPS"
    judge_trace "LC Trace $letter" down "$down" 11 10
    judge_trace "LC Trace $letter" up "$up" 11 10
done

# ------------------------------------------------------------------ 42
log "42. lane $LANE: a trace's rate changes in place, and nothing is left behind"
# The tree without the classes' rates: its objects, and every leaf's values.
tree_objects() { tree_text | sed -E 's/ rate .*//'; }
lc activate "LC Trace A" >/dev/null
objects_before=$(tree_objects)
tree_before=$(tree_text)
# The steps change the downlink's rate every second: read the tree until it has changed.
tree_after=$tree_before
for _ in $(seq 50); do
    snooze 0.2
    tree_after=$(tree_text)
    [[ $tree_after == "$tree_before" ]] || break
done
check_equal "while a trace plays, the tree's objects and leaves stay as they are" "$(text_signature "$objects_before")" \
    "$(text_signature "$(tree_objects)")"
check_bool "while a trace plays, its classes' rates change (within 10 s)" "changed" "$([[ $tree_before != "$tree_after" ]] && echo changed || echo same)" \
    "$([[ $tree_before != "$tree_after" ]]; echo $?)"
lc off >/dev/null
daemon_stop TERM
check_snapshot "after the trace lane: the host as it was" "$WORK/snap.before"
