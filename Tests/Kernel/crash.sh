#!/usr/bin/env bash
# Crash safety and rollback, in a lane of the kernel suite (LC_LANE) so that they can run side by
# side with the rest (Tests/Kernel/suite.sh starts three). Parts, any of:
#   build, switch, teardown  the daemon SIGKILLs itself before each single netlink step of that
#                            change, and is restarted: the old condition or the new, never half;
#                            build:FIRST-LAST (and so on) before steps FIRST to LAST alone, so
#                            that two lanes can share the build's restarts
#   random                   SIGKILL from outside at random moments of LC_CRASH_ROUNDS changes
#   faults                   a netlink failure injected at every step of a build and of a switch
# Checks go to this lane's results file, which the suite merges into its summary.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:?set LINKCOND_BIN}
PROFILES=${LINKCOND_PROFILES:?set LINKCOND_PROFILES}
CRASH_ROUNDS=${LC_CRASH_ROUNDS:-20}
# A change may take over 20 s in a crash lane, which runs at the lowest priority beside the
# others (in CI a kill armed at one step of a build never came, most likely the build cut off at
# 20 s): a limit for a daemon that hangs, not a timed check.
PUT_TIMEOUT=60
PARTS=" $* "
part() { [[ $PARTS == *" $1 "* || $PARTS == *" $1:"* ]]; }
# part_steps NAME: "FIRST LAST" when the part was given as NAME:FIRST-LAST, else nothing.
part_steps() {
    local token range
    for token in $PARTS; do
        [[ $token == "$1:"* ]] || continue
        range=${token#*:}
        echo "${range%-*} ${range#*-}"
    done
}

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
cleanup() {
    set +e
    daemon_stop TERM
    topo_down
}
trap cleanup EXIT
topo_up
daemon_start --enable-fault-injection

declare -A REF REF_TEXT
for profile in "Nasty Net" "Black Hole" "Slow Net"; do
    timeout 20 curl -s --unix-socket "$SOCK" -X PUT -d "{\"profile\": \"$profile\"}" http://linkcond/v1/condition >/dev/null
    REF[$profile]=$(tree_signature)
    REF_TEXT[$profile]=$(tree_text)
done
REF[off]=none
timeout 20 curl -s --unix-socket "$SOCK" -X DELETE http://linkcond/v1/condition >/dev/null
note "lane $LANE: reference trees: $(for p in "${!REF[@]}"; do printf '%s=%s ' "${p// /_}" "${REF[$p]}"; done)"

# ------------------------------------------------------------------ helpers
arm() { timeout 30 curl -sf --unix-socket "$SOCK" -X PUT -d "{\"failAtStep\": $1, \"fault\": \"${2:-fail}\"}" http://linkcond/v1/debug/fault >/dev/null || note "could not arm a fault at step $1: the daemon did not answer"; }
# disarm: no fault armed (a request without failAtStep; the daemon refuses a null field).
disarm() { timeout 30 curl -sf --unix-socket "$SOCK" -X PUT -d '{}' http://linkcond/v1/debug/fault >/dev/null || note "could not disarm the fault: the daemon did not answer"; }
executed_steps() {
    local reply
    reply=$(timeout 30 curl -sf --unix-socket "$SOCK" http://linkcond/v1/debug/fault) || { echo null; return 0; }
    jq -r '.executedSteps // "null"' <<<"$reply"
}
# steps_of FROM TO: how many netlink steps the change FROM -> TO takes, counted by the daemon.
steps_of() {
    local before after
    put_condition "$1"
    before=$(executed_steps)
    put_condition "$2"
    after=$(executed_steps)
    awk -v a="$before" -v b="$after" 'BEGIN { if (a == "null" || b == "null") print "null"; else print b - a }'
}
# The step counts of Tests/ShapingTests/TransitionTests.swift (KernelSuiteStepCountTests): a
# plan that changes shape must change both, so that the loops below cannot quietly shrink.
declare -A EXPECTED_STEPS=(["off>Slow Net"]=51 ["Slow Net>Nasty Net"]=11 ["Nasty Net>off"]=3)
CRASHES=0
CONSISTENT=0
FIRST_INCONSISTENT=""
PROBED=0
HALF_AT_KILL=0
# after_crash FROM TO: the daemon just died; restart it, check the tree is FROM's or TO's, and
# that packets arriving on the interface are shaped exactly when a condition is in force.
after_crash() {
    local from=$1 to=$2 at_kill after after_text now ifbs downlink wanted again differing steps
    local -a ifb_lines
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=""
    CRASHES=$((CRASHES + 1))
    at_kill=$(tree_signature)
    [[ $at_kill != "${REF[$from]}" && $at_kill != "${REF[$to]}" ]] && HALF_AT_KILL=$((HALF_AT_KILL + 1))
    daemon_start --enable-fault-injection || { echo "crash.sh: linkcondd did not restart after SIGKILL (crash $CRASHES, $from -> $to)" >&2; exit 2; }
    after_text=$(tree_text)
    after=$(text_signature "$after_text")
    now=$(current_profile)
    mapfile -t ifb_lines < <(ip -n "$NS_C" -o link show type ifb)
    ifbs=${#ifb_lines[@]}
    if [[ ($after == "${REF[$from]}" && $now == "$from") || ($after == "${REF[$to]}" && $now == "$to") ]] && ((ifbs <= 1)); then
        CONSISTENT=$((CONSISTENT + 1))
    else
        steps=$(executed_steps)
        snooze 3
        again=$(tree_signature)
        differing=$(diff <(printf '%s\n' "${REF_TEXT[$now]:-}") <(printf '%s\n' "$after_text") | grep '^[<>]' | head -10 || true)
        note "crash $CRASHES: $from -> $to, tree at the kill $at_kill; after restart tree $after, status $now, $ifbs IFB(s); 3 s later $again, daemon steps $steps -> $(executed_steps); $now's reference (<) against the first read (>):"
        [[ -n $FIRST_INCONSISTENT ]] || FIRST_INCONSISTENT="; first: crash $CRASHES, $from -> $to, status $now, tree $after (3 s later $again), $ifbs IFB(s)$(
            [[ -z $differing ]] || printf ', %s' "$(head -1 <<<"$differing" | cut -c 1-70)")"
        [[ -z $differing ]] || sed 's/^/      /' <<<"$differing"
        note "crash $CRASHES: what the restarted daemon said of the tree it found:"
        awk '/^--- linkcondd start/ { n = 0; delete kept } /startup:/ { kept[++n] = $0 } END { for (i = 1; i <= n && i <= 12; i++) print "      " kept[i] }' "$DAEMON_LOG"
    fi
    wanted=$([[ $now == off ]] && echo unshaped || echo shaped)
    downlink=$(downlink_state)
    if [[ $downlink == "$wanted" ]]; then
        PROBED=$((PROBED + 1))
    else
        note "crash $CRASHES: $from -> $to, now $now: downlink packets $downlink, expected $wanted"
    fi
}

# ------------------------------------------------------------------ 11
# Only in a lane that was given one of the kill parts.
if part build || part switch || part teardown || part random; then
    log "11. lane $LANE ($*): SIGKILL of the daemon while it applies, then a restart: the old condition or the new, never half"
    # At every single step of a build, a switch and a teardown: the daemon SIGKILLs itself there.
    KILLED_AT_EVERY_STEP=0
    EXPECTED_HALF=0
    declare -A CHANGE_PART=(["off>Slow Net"]=build ["Slow Net>Nasty Net"]=switch ["Nasty Net>off"]=teardown)
    for change in "off>Slow Net" "Slow Net>Nasty Net" "Nasty Net>off"; do
        part "${CHANGE_PART[$change]}" || continue
        from=${change%%>*}
        to=${change##*>}
        steps=$(steps_of "$from" "$to")
        check_equal "steps of $from -> $to (counted by the daemon)" "${EXPECTED_STEPS[$change]}" "$steps"
        [[ $steps =~ ^[0-9]+$ ]] || steps=0
        first=0
        last=$((steps - 1))
        range=$(part_steps "${CHANGE_PART[$change]}")
        [[ -z $range ]] || read -r first last <<<"$range"
        ((last < steps)) || last=$((steps - 1))
        count=$((last >= first ? last - first + 1 : 0))
        killed=0
        slowest=0
        for k in $(seq "$first" "$last"); do
            put_condition "$from"
            arm "$k" kill
            began=$SECONDS
            code=$(condition_request "$to")
            if kill -0 "$DAEMON_PID" 2>/dev/null; then
                note "$from -> $to: no kill at step $k of $steps: HTTP ${code:-none} after $((SECONDS - began)) s, daemon steps $(executed_steps), status $(current_profile)"
                disarm
                continue
            fi
            killed=$((killed + 1))
            ((SECONDS - began <= slowest)) || slowest=$((SECONDS - began))
            after_crash "$from" "$to"
        done
        note "$from -> $to: the slowest change until the kill took $slowest s (limit $PUT_TIMEOUT s)"
        if [[ -n $range ]]; then
            check_range "$from -> $to: killed before each of steps $first to $last" "$killed" "$count" "$count" "of $count" \
                "every step of the range (of $steps)"
        else
            check_range "$from -> $to: killed before each step" "$killed" "$steps" "$steps" "of $steps" "every step"
        fi
        KILLED_AT_EVERY_STEP=$((KILLED_AT_EVERY_STEP + killed))
        # A kill before step 0 leaves the old tree untouched; one before any later step, a half-done one.
        EXPECTED_HALF=$((EXPECTED_HALF + count - (first == 0 && count > 0 ? 1 : 0)))
    done
    # Kills before the first step leave the old tree; every later one, until the change is done,
    # leaves a half-built or half-switched one: the restarts had real work to do.
    if ((KILLED_AT_EVERY_STEP > 0)); then
        check_range "SIGKILL before each step: a half-done tree at the kill" "$HALF_AT_KILL" "$EXPECTED_HALF" "$KILLED_AT_EVERY_STEP" "of $KILLED_AT_EVERY_STEP" \
            "all but the kills before a change's first step"
    fi
    # And at random moments, from outside, while a change is under way or not.
    choices=("Slow Net" "Nasty Net" "Black Hole" "off")
    current=$(current_profile)
    part random || CRASH_ROUNDS=0
    for round in $(seq "$CRASH_ROUNDS"); do
        next=$current
        while [[ $next == "$current" ]]; do next=${choices[RANDOM % 4]}; done
        put_condition "$next" &
        client=$!
        snooze "0.$(printf '%03d' $((RANDOM % 200)))"
        kill -KILL "$DAEMON_PID" 2>/dev/null || true
        wait "$client" 2>/dev/null || true
        after_crash "$current" "$next"
        current=$(current_profile)
    done
    check_equal "SIGKILL + restart: rounds" "$((KILLED_AT_EVERY_STEP + CRASH_ROUNDS)) kills" "$CRASHES kills"
    check_range "SIGKILL + restart: consistent" "$CONSISTENT" "$CRASHES" "$CRASHES" "of $CRASHES" "all: old or new condition, filters included, no orphan IFB" \
        "$FIRST_INCONSISTENT"
    check_range "SIGKILL + restart: downlink packets shaped exactly when a condition is in force" "$PROBED" "$CRASHES" "$CRASHES" "of $CRASHES" "all"
    put_condition off
fi

# ------------------------------------------------------------------ 12
part faults || { log "lane $LANE: done"; exit 0; }
log "12. lane $LANE: a netlink failure at every step rolls back"
# fail_at_every_step FROM TO: fails each step of the change FROM -> TO in turn; after each
# failure the tree must still be FROM's. Sets STEPS and ROLLED_BACK.
fail_at_every_step() {
    local from=$1 to=$2 k code
    STEPS=$(steps_of "$from" "$to")
    [[ $STEPS =~ ^[0-9]+$ ]] || STEPS=0
    ROLLED_BACK=0
    local began tree slowest=0
    for k in $(seq 0 $((STEPS - 1))); do
        put_condition "$from"
        arm "$k" fail
        began=$SECONDS
        code=$(REPLY_FILE="$WORK/put.json" condition_request "$to")
        ((SECONDS - began <= slowest)) || slowest=$((SECONDS - began))
        tree=$(tree_signature)
        if [[ $code == 500 && $tree == "${REF[$from]}" ]]; then
            ROLLED_BACK=$((ROLLED_BACK + 1))
        else
            note "$from -> $to failing at step $k of $STEPS: HTTP ${code:-none} after $((SECONDS - began)) s, tree $tree (${from}'s ${REF[$from]}), status $(current_profile): $(head -c 300 "$WORK/put.json" 2>/dev/null | tr -s ' \n' ' ')"
        fi
    done
    disarm
    note "$from -> $to failing at each step: the slowest change took $slowest s (limit $PUT_TIMEOUT s)"
}
fail_at_every_step off "Slow Net"
check_equal "build: steps (counted by the daemon)" "${EXPECTED_STEPS["off>Slow Net"]}" "$STEPS"
check_range "build fails at each step: rolled back" "$ROLLED_BACK" "$STEPS" "$STEPS" "of $STEPS steps" "nothing left each time"
fail_at_every_step "Slow Net" "Nasty Net"
check_equal "switch: steps (counted by the daemon)" "${EXPECTED_STEPS["Slow Net>Nasty Net"]}" "$STEPS"
check_range "switch fails at each step: Slow Net kept" "$ROLLED_BACK" "$STEPS" "$STEPS" "of $STEPS steps" "previous condition each time"
put_condition "Slow Net"
arm 3 fail
lc_capture activate "Nasty Net"
check_contains "injected failure: the client names the kernel's reason" "$LC_ERR" "fault injected"
named='the kernel refused to (add|change|delete|create) .+ on [^ :]+: '
check_bool "injected failure: the client names the object" "refused to <step> on <device>" \
    "$(grep -oE "$named" <<<"$LC_ERR" | head -1)" "$([[ $LC_ERR =~ $named ]]; echo $?)"
disarm
put_condition off
log "lane $LANE: done"
