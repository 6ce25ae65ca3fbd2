#!/usr/bin/env bash
# `run --isolated` sandboxes, in a lane of the kernel suite (LC_LANE) that runs side by side with
# conditions.sh and scopes.sh (Tests/Kernel/suite.sh starts them): two at once on different
# profiles beside the host's own traffic; what is left of them after their commands exit, a
# SIGKILL of their client, and a SIGKILL and restart of the daemon; a refusal at, and a SIGKILL
# before, each step of joining one to the host; a host firewall that drops forwarded packets;
# and the sandbox requests a group member may not make.
# Checks go to this lane's results file, which the suite merges.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/conditions-setup.sh"

# ------------------------------------------------------------------ 29
log "29. lane $LANE: run --isolated: two sandboxes at once, each under its own profile, the host's own traffic unshaped"
forwarding_now() { ip netns exec "$NS_C" sysctl -n "net.ipv4.conf.$IF_C.forwarding"; }
sandboxes_listed() { list_json | jq -r '[.conditions[]? | select(.sandbox) | "\(.profile.name // "off")"] | sort | join(",")'; }
# wait_listed N: until N sandboxes are listed, at most 60 s.
wait_listed() {
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        [[ $(list_json | jq '[.conditions[]? | select(.sandbox)] | length') == "$1" ]] && return 0
        snooze 0.2
    done
    return 1
}
# wait_no_leftovers: until the sandboxes' objects are gone, at most 30 s.
wait_no_leftovers() {
    local deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        [[ -z $(sandbox_leftovers) ]] && return 0
        snooze 0.2
    done
    return 1
}
isolated() { cli timeout 180 "$BIN/linkcond" --socket "$SOCK" run --isolated "$@"; }
daemon_start --enable-fault-injection
FORWARDING_BEFORE=$(forwarding_now)
check_equal "IPv4 forwarding on $IF_C reads as 0 or 1 (what the checks below compare with)" yes \
    "$([[ $FORWARDING_BEFORE == [01] ]] && echo yes || echo no)"
measure "$S4" "$S6"
BASE_HOST=$RTT4
isolated --profile "LC Test A" -- python3 "$PROBE" rtt --target "udp:$S4:7" --rounds 40 --interval 0.05 --timeout 1 \
    >"$WORK/iso-a.json" 2>"$WORK/iso-a.err" &
ISO_A=$!
isolated --profile "Black Hole" -- python3 "$PROBE" rtt --target "udp:$S4:7" --rounds 10 --interval 0.05 --timeout 1 \
    >"$WORK/iso-b.json" 2>"$WORK/iso-b.err" &
ISO_B=$!
wait_listed 2 || true
check_equal "both sandboxes listed while their commands run" "Black Hole,LC Test A" "$(sandboxes_listed)"
ADDRESSES=$(list_json | jq -r '[.conditions[]? | select(.sandbox) | .sandbox.address] | sort | join(" ")')
note "sandbox addresses: $ADDRESSES; on the host: $(sandbox_leftovers)"
measure "$S4" "$S6"
HOST_DURING=$RTT4
ISO_A_RC=0; wait "$ISO_A" || ISO_A_RC=$?
ISO_B_RC=0; wait "$ISO_B" || ISO_B_RC=$?
sed 's/^/      a: /' "$WORK/iso-a.err"; sed 's/^/      b: /' "$WORK/iso-b.err"
check_rc "run --isolated under LC Test A: the command's own status" "$ISO_A_RC" 0 "the probe's"
SANDBOX_A=$(rtt_field "$WORK/iso-a.json" "udp:$S4:7" median_ms)
SANDBOX_A_GOT=$(rtt_field "$WORK/iso-a.json" "udp:$S4:7" received)
EXTRA_A=$(minus "$SANDBOX_A" "$BASE_HOST")
record "sandbox under LC Test A reaches the server through NAT, +100 ms" "+100 ms, 40/40 replies" \
    "+$EXTRA_A ms ($SANDBOX_A - base $BASE_HOST), $SANDBOX_A_GOT/40" "-1 ms, +10 ms" \
    "$([[ $EXTRA_A != null && $SANDBOX_A_GOT == 40 ]] && fcond "$EXTRA_A" 'a >= 99 && a <= 110' && echo PASS || echo FAIL)"
check_equal "sandbox under Black Hole: no reply" "0" "$(rtt_field "$WORK/iso-b.json" "udp:$S4:7" received)"
EXTRA_HOST=$(minus "$HOST_DURING" "$BASE_HOST")
record "the host's own traffic to the same server meanwhile: unshaped" "+0 ms" "+$EXTRA_HOST ms ($HOST_DURING - base $BASE_HOST)" "<= +5 ms" \
    "$([[ $EXTRA_HOST != null ]] && fcond "$EXTRA_HOST" 'a <= 5' && echo PASS || echo FAIL)"
wait_no_leftovers || true
check_equal "after both commands exit: no veth or NAT table of theirs left" "" "$(sandbox_leftovers)"
check_equal "after both commands exit: only the default condition" "$IF_C=off" "$(conditions_now)"
check_equal "after both commands exit: IPv4 forwarding on $IF_C as it was" "$FORWARDING_BEFORE" "$(forwarding_now)"

log "29b. lane $LANE: a sandbox ends when its run client is killed, and at a daemon restart"
# Started directly, not through cli(): $! must be the client itself.
ip netns exec "$NS_C" "$BIN/linkcond" --socket "$SOCK" run --isolated --profile "LC Test A" -- sleep 171 >/dev/null 2>&1 &
RUN_PID=$!
wait_listed 1 || true
DURING=$(sandbox_leftovers)
check_equal "a running sandbox has its veth and NAT table" yes "$([[ $DURING == *lcsb* && $DURING == *linkcond_sandbox_* ]] && echo yes || echo no)"
kill -KILL "$RUN_PID"; wait "$RUN_PID" 2>/dev/null || true
wait_no_leftovers || true
check_equal "after SIGKILL of the run client: nothing of its sandbox left" "" "$(sandbox_leftovers)"
check_equal "after SIGKILL of the run client: its condition gone" "$IF_C=off" "$(conditions_now)"
check_equal "after SIGKILL of the run client: IPv4 forwarding on $IF_C as it was" "$FORWARDING_BEFORE" "$(forwarding_now)"
pkill -KILL -f "sleep 171" || true
ip netns exec "$NS_C" "$BIN/linkcond" --socket "$SOCK" run --isolated --profile "LC Test A" -- sleep 172 >/dev/null 2>&1 &
RUN_PID=$!
wait_listed 1 || true
daemon_stop KILL
check_equal "after SIGKILL of the daemon: the sandbox's objects are still there" yes "$([[ -n $(sandbox_leftovers) ]] && echo yes || echo no)"
daemon_start --enable-fault-injection
check_equal "after the restart: nothing of the sandbox left" "" "$(sandbox_leftovers)"
check_equal "after the restart: IPv4 forwarding on $IF_C as it was" "$FORWARDING_BEFORE" "$(forwarding_now)"
check_equal "after the restart: only the default condition" "$IF_C=off" "$(conditions_now)"
check_equal "the history has the restart ending the sandbox's condition" "true" \
    "$(timeout 10 curl -sf --unix-socket "$SOCK" 'http://linkcond/v1/history?limit=5' | jq -r '[.entries[] | select((.condition // "") | startswith("pid/")) | "\(.to) \(.reason)"] | any(. == "off startup")')"
kill -KILL "$RUN_PID" 2>/dev/null; wait "$RUN_PID" 2>/dev/null || true
pkill -KILL -f "sleep 172" || true

# A sandbox's build counts its plumbing first: the veth pair, two addresses, forwarding on its
# host end, three links up, the default route, forwarding on each uplink where it was off (the
# daemon's interface here: this namespace has no default route), then its NAT table; then its
# tree inside the sandbox, as a whole interface's (51).
run_isolated_in_background() {
    ip netns exec "$NS_C" "$BIN/linkcond" --socket "$SOCK" run --isolated --profile "LC Test A" -- sleep "$1" >/dev/null 2>"$WORK/iso-bg.err" &
    RUN_PID=$!
}
plumbing_steps=$((9 + $(forwarding_now | awk '{ print ($1 == 0) }')))
before=$(executed_steps)
run_isolated_in_background 173
wait_listed 1 || true
sandbox_steps=$(( $(executed_steps) - before ))
check_equal "a sandbox's build: steps (counted by the daemon), $plumbing_steps of plumbing and a whole interface's 51" \
    $((plumbing_steps + 51)) "$sandbox_steps"
kill -KILL "$RUN_PID"; wait "$RUN_PID" 2>/dev/null || true
pkill -KILL -f "sleep 173" || true
wait_no_leftovers || true

# core_stacks: every thread's stack in each core dumped since the last call, to the log, then
# the cores removed.
core_stacks() {
    local core exe
    for core in "$WORK"/core.*; do
        [[ -e $core ]] || continue
        exe=${core##*/core.}
        exe=${exe%.*}
        note "$exe dumped core ($core):"
        gdb -batch -ex 'thread apply all bt 16' "$([[ -x $BIN/$exe ]] && echo "$BIN/$exe" || command -v "$exe")" "$core" 2>&1 |
            grep -E '^(#|Thread|Program terminated)' | sed 's/^/      /' || true
        rm -f "$core"
    done
}

# count_if_gone STEP: once the sandbox's objects are gone (at most 30 s), counts it clean when
# nothing of it is left, only the default condition is, and forwarding is as it was; notes the
# first that is not.
count_if_gone() {
    wait_no_leftovers || true
    if [[ -z $(sandbox_leftovers) && $(conditions_now) == "$IF_C=off" && $(forwarding_now) == "$FORWARDING_BEFORE" ]]; then
        clean=$((clean + 1))
    else
        first_bad=${first_bad:-"; first: step $1, left $(sandbox_leftovers), conditions $(conditions_now), forwarding $(forwarding_now)"}
    fi
}

# A refusal at each step of the plumbing: the run fails at once, saying why, and nothing of the
# sandbox is left, forwarding as it was.
# A run here once died of SIGTRAP (status 133) without a word, 1 in some hundred: the runs of
# this loop may dump core, and a core's stacks go to the log.
sysctl -qw kernel.core_pattern="$WORK/core.%e.%p" || true
refused=0 clean=0 first_bad=""
for k in $(seq 0 $((plumbing_steps - 1))); do
    timeout 30 curl -sf --unix-socket "$SOCK" -X PUT -d "{\"failAtStep\": $k}" http://linkcond/v1/debug/fault >/dev/null
    rc=0
    (ulimit -c unlimited && exec ip netns exec "$NS_C" timeout 60 "$BIN/linkcond" --socket "$SOCK" run --isolated --profile "LC Test A" -- true) \
        >/dev/null 2>"$WORK/iso-fail.err" || rc=$?
    if [[ $rc != 0 ]] && grep -q "fault injected" "$WORK/iso-fail.err"; then
        refused=$((refused + 1))
    else
        first_bad=${first_bad:-"; first: step $k, status $rc: $(head -c 300 "$WORK/iso-fail.err")"}
        core_stacks
    fi
    count_if_gone "$k"
done
check_range "a sandbox's plumbing: a refusal at each of its $plumbing_steps steps fails the run, naming the fault" "$refused" "$plumbing_steps" "$plumbing_steps" "of $plumbing_steps" "all" "$first_bad"
check_range "after each: nothing of the sandbox left, only the default condition, forwarding as it was" "$clean" "$plumbing_steps" "$plumbing_steps" "of $plumbing_steps" "all" "$first_bad"

# The daemon SIGKILLs itself before each step of the plumbing and before chosen steps of the
# tree: each time the run client ends by itself rather than hang, and the restarted daemon
# leaves nothing of the sandbox.
killed=0 clean=0 returned=0 first_bad=""
ks=$( { seq 0 $((plumbing_steps - 1)); printf '%s\n' "$plumbing_steps" $((plumbing_steps + 15)) $((plumbing_steps + 30)) $((sandbox_steps - 1)); } |
    awk -v n="$sandbox_steps" '$1 < n && !seen[$1]++' | tr '\n' ' ' | sed 's/ $//')
for k in $ks; do
    arm_kill "$k"
    run_isolated_in_background 174
    for _ in $(seq 600); do kill -0 "$DAEMON_PID" 2>/dev/null || break; snooze 0.1; done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        first_bad=${first_bad:-"; first: step $k never reached"}
        kill -KILL "$RUN_PID" 2>/dev/null; wait "$RUN_PID" 2>/dev/null || true
        continue
    fi
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=""
    killed=$((killed + 1))
    for _ in $(seq 300); do kill -0 "$RUN_PID" 2>/dev/null || break; snooze 0.1; done
    if kill -0 "$RUN_PID" 2>/dev/null; then
        first_bad=${first_bad:-"; first: step $k, the run client still waiting after 30 s"}
        kill -KILL "$RUN_PID" 2>/dev/null
    else
        returned=$((returned + 1))
    fi
    wait "$RUN_PID" 2>/dev/null || true
    pkill -KILL -f "sleep 174" || true
    daemon_start --enable-fault-injection
    count_if_gone "$k"
done
n=$(wc -w <<<"$ks")
check_range "a sandbox's build ($sandbox_steps steps): SIGKILL before steps $ks" "$killed" "$((plumbing_steps + 4))" "$n" "of $n" "each" "$first_bad"
check_range "after each: the run client ended by itself within 30 s" "$returned" "$killed" "$killed" "of $killed" "all" "$first_bad"
check_range "after each restart: nothing of the sandbox left, only the default condition, forwarding as it was" "$clean" "$killed" "$killed" "of $killed" "all" "$first_bad"

# A host firewall that drops forwarded packets, laid out as Docker's (iptables-nft): the sandbox
# reaches nothing and its run says so, with the rules that let it through; with them (in nft's
# words), it reaches the server and nothing is said.
ip netns exec "$NS_C" nft -f - <<'NFT'
table ip filter {
    chain DOCKER-USER {
    }
    chain FORWARD {
        type filter hook forward priority filter; policy drop;
        jump DOCKER-USER
    }
}
NFT
probe_from_sandbox() {
    ip netns exec "$NS_C" timeout 120 "$BIN/linkcond" --socket "$SOCK" run --isolated --profile "LC Test A" -- \
        python3 "$PROBE" rtt --target "udp:$S4:7" --rounds 3 --interval 0.05 --timeout 1 >"$WORK/iso-fw.json" 2>"$WORK/iso-fw.err" || true
    printf '%s %s' "$(rtt_field "$WORK/iso-fw.json" "udp:$S4:7" received)" \
        "$(grep -c "warning: the host's firewall drops forwarded packets (nft table ip filter, chain FORWARD, policy drop; Docker sets it).*iptables -I DOCKER-USER -i lcsb+ -j ACCEPT" "$WORK/iso-fw.err")"
}
check_equal "behind Docker's FORWARD drop: the sandbox gets no reply, and its run warns, naming the chain and the fix" "0 1" "$(probe_from_sandbox)"
ip netns exec "$NS_C" nft insert rule ip filter DOCKER-USER oifname '"lcsb*"' ct state established,related accept
ip netns exec "$NS_C" nft insert rule ip filter DOCKER-USER iifname '"lcsb*"' accept
check_equal "with the fix's rules in DOCKER-USER: 3 of 3 replies, and no warning" "3 0" "$(probe_from_sandbox)"
ip netns exec "$NS_C" nft delete table ip filter
wait_no_leftovers || true
check_equal "and nothing of either sandbox left" "|$IF_C=off|$FORWARDING_BEFORE" "$(sandbox_leftovers)|$(conditions_now)|$(forwarding_now)"
daemon_stop TERM

log "29c. lane $LANE: sandbox requests from a group member: someone else's process, a namespace in use, a flood"
groupadd -f linkcond
modprobe dummy
member=(setpriv --reuid=65534 --regid=65534 --groups="$(getent group linkcond | cut -d: -f3)")
daemon_start --enable-fault-injection
# sandbox_lease PID [SECONDS]: a member's sandbox lease on PID's namespace, as run --isolated
# asks for it; prints the error code, or the first event of a lease that was granted.
sandbox_lease() {
    ip netns exec "$NS_C" "${member[@]}" curl -sN --max-time "${2:-20}" --unix-socket "$SOCK" -X POST \
        -d "{\"profile\": \"Black Hole\", \"condition\": \"pid/$1/eth0\", \"sandbox\": true}" http://linkcond/v1/leases |
        jq -r '.error.code // .event' 2>/dev/null | head -1
}
LINKS_BEFORE=$(ip -n "$NS_C" -o link show | wc -l)
check_equal "pid 1 (root's, the host's namespace): refused" "sandbox-not-yours" "$(sandbox_lease 1)"
ip netns exec "$NS_C" "${member[@]}" sleep 300 &
OWN_IN_HOST=$!
snooze 0.5
check_equal "the member's own process in the host's namespace: refused" "sandbox-namespace-in-use" "$(sandbox_lease "$OWN_IN_HOST")"
"${member[@]}" unshare -rn sh -c 'ip link add d0 type dummy && exec sleep 300' &
OWN_WITH_DEVICE=$!
snooze 1
check_equal "the member's own fresh namespace with a device in it: refused" "sandbox-namespace-in-use" \
    "$(sandbox_lease "$OWN_WITH_DEVICE")"
check_equal "a process that does not exist: refused" "true" "$(code=$(sandbox_lease 4194304); [[ -n $code && $code != active ]] && echo true || echo "$code")"
kill "$OWN_IN_HOST" "$OWN_WITH_DEVICE" 2>/dev/null; wait "$OWN_IN_HOST" "$OWN_WITH_DEVICE" 2>/dev/null || true
check_equal "after the refusals: nothing built" "$IF_C=off|$LINKS_BEFORE|" \
    "$(conditions_now)|$(ip -n "$NS_C" -o link show | wc -l)|$(sandbox_leftovers)"
# A flood: 16 sandboxes at once, each on a fresh namespace of the member's, held by open
# connections (a member's connections, and with them its sandboxes, stop at 64).
FLOOD_PIDS=()
for i in $(seq 16); do
    "${member[@]}" unshare -rn sleep 300 &
    FLOOD_PIDS+=($!)
done
snooze 1
HOLDERS=()
for pid in "${FLOOD_PIDS[@]}"; do
    sandbox_lease "$pid" 170 >"$WORK/flood.$pid" &
    HOLDERS+=($!)
done
wait_listed 16 || true
check_equal "a flood of 16 sandbox leases: each granted, with its own veth and NAT table" "16 16 16" \
    "$(list_json | jq '[.conditions[]? | select(.sandbox)] | length') $(sandbox_leftovers | tr ' ' '\n' | grep -c lcsb) $(sandbox_leftovers | tr ' ' '\n' | grep -c linkcond_sandbox)"
pkill -KILL -f "max-time 170 --unix-socket $SOCK" || true
for pid in "${HOLDERS[@]}"; do wait "$pid" 2>/dev/null || true; done
wait_no_leftovers || true
check_equal "their connections closed: every sandbox gone, forwarding as it was" "|$IF_C=off|$FORWARDING_BEFORE" \
    "$(sandbox_leftovers)|$(conditions_now)|$(forwarding_now)"
kill "${FLOOD_PIDS[@]}" 2>/dev/null; wait "${FLOOD_PIDS[@]}" 2>/dev/null || true
check_equal "the daemon is still running" running "$(kill -0 "$DAEMON_PID" 2>/dev/null && echo running || echo dead)"
daemon_stop TERM

