# Shell helpers for measurements in the test VM, for the benchmarks (Benchmarks/run.sh) and the
# demo (Benchmarks/demo.sh): a topology, the probe server and client (the kernel suite's
# Tests/Kernel/harness/probe.py), a daemon, and recorded checks. Source from bash; needs root
# inside the VM. The kernel suite itself is pytest (Tests/Kernel).
# shellcheck shell=bash

KDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$KDIR/.." && pwd)
PROBE="$REPO/Tests/Kernel/harness/probe.py"

# A lane is a topology of its own (namespaces, veth pair, addresses, daemon, work directory), so
# that independent parts of the suite can run side by side in one VM: LC_LANE=1, 2, ... (empty
# for the main one).
LANE=${LC_LANE:-}
NS_C=lc-cli$LANE
NS_S=lc-srv$LANE
IF_C=veth-c$LANE
IF_S=veth-s$LANE
IFB=lc-veth-c$LANE
C4=10.77.${LANE:-0}.1
S4=10.77.${LANE:-0}.2
C6=fd77:${LANE:-0}::1
S6=fd77:${LANE:-0}::2

WORK=${LC_WORK:-/tmp/lc-kernel$LANE}
SOCK="$WORK/linkcond.sock"
CTL="$WORK/probe.sock"
RESULTS="$WORK/results.tsv"
DAEMON_LOG="$WORK/linkcondd.log"
DAEMON_PID=""
SERVER_PID=""
NS_ANCHOR=""

# snooze SECONDS: sleep without starting a process (a wait for input from a FIFO nobody writes
# to), for the polling loops: under emulation each `sleep` is a program started, which costs
# more than the wait. The FIFO lives in the work directory and is opened for the read alone: no
# descriptor is inherited, nothing is left.
snooze() {
    local fifo=$WORK/.snooze
    [[ -p $fifo ]] || mkfifo -m 0600 "$fifo" 2>/dev/null || { sleep "$1"; return 0; }
    read -r -t "$1" _ <>"$fifo" || true
}

# wait_for_path FILE [SECONDS]: waits (60 s unless told) for FILE to appear, such as a
# `probe.py stream --ready FILE`'s mark that packets flow.
wait_for_path() {
    local _
    for _ in $(seq $((${2:-60} * 10))); do [[ -e $1 ]] && return 0; snooze 0.1; done
    note "$1 did not appear within ${2:-60} s"
}
log() { printf '\n=== [%ds] %s\n' "$SECONDS" "$*"; }
note() { printf '    %s\n' "$*"; }

cli() { ip netns exec "$NS_C" "$@"; }
srv() { ip netns exec "$NS_S" "$@"; }

# ------------------------------------------------------------------ topology

topo_up() {
    topo_down
    ip netns add "$NS_C"
    ip netns add "$NS_S"
    # A process that lives in the client namespace, so that its counters can be read from
    # /proc/PID/net without starting one (udp_noports).
    ip netns exec "$NS_C" sleep infinity </dev/null >/dev/null 2>&1 &
    NS_ANCHOR=$!
    ip -n "$NS_C" link set lo up
    ip -n "$NS_S" link set lo up
    link_up "$IF_C" "$IF_S" "$C4" "$S4" "$C6" "$S6"
}

# link_up CLIENT_IF SERVER_IF C4 S4 C6 S6: a veth pair from the client namespace to the
# server's, addressed (/24, /64), without offloads (the shaping sees packets as they are sent).
link_up() {
    ip link add "$1" netns "$NS_C" type veth peer name "$2" netns "$NS_S"
    ip -n "$NS_C" addr add "$3/24" dev "$1"
    ip -n "$NS_S" addr add "$4/24" dev "$2"
    ip -n "$NS_C" addr add "$5/64" dev "$1" nodad
    ip -n "$NS_S" addr add "$6/64" dev "$2" nodad
    cli ethtool -K "$1" tso off gso off gro off >/dev/null
    srv ethtool -K "$2" tso off gso off gro off >/dev/null
    ip -n "$NS_C" link set "$1" up
    ip -n "$NS_S" link set "$2" up
    local i
    for i in $(seq 100); do
        if cli ip link show "$1" | grep -q 'state UP' && srv ip link show "$2" | grep -q 'state UP'; then
            return 0
        fi
        snooze 0.1
    done
    echo "topology: $1 / $2 did not come up" >&2
    return 1
}

# tcp_echo_ok HOST PORT: one echo round trip over TCP, without starting Python.
tcp_echo_ok() {
    cli timeout 10 bash -c 'exec 3<>"/dev/tcp/$1/$2" && echo lc-echo >&3 && read -r -t 8 x <&3 && [[ $x == lc-echo ]]' _ "$1" "$2"
}

topo_down() {
    [[ -z $NS_ANCHOR ]] || { kill "$NS_ANCHOR" 2>/dev/null; wait "$NS_ANCHOR" 2>/dev/null; }
    NS_ANCHOR=""
    ip netns del "$NS_C" 2>/dev/null || true
    ip netns del "$NS_S" 2>/dev/null || true
}

# Everything a user could see of the interface: qdiscs, ingress filters, link details, IFB devices.
snapshot() {
    {
        echo "# tc qdisc show dev $IF_C"
        cli tc qdisc show dev "$IF_C"
        echo "# tc filter show dev $IF_C ingress"
        cli tc filter show dev "$IF_C" ingress 2>&1
        echo "# ip -d link show dev $IF_C"
        # ip names the peer's namespace by reading every namespace's id: one that another
        # lane adds or deletes meanwhile makes it complain or fall back to the id. Neither
        # is a change to this interface.
        cli ip -d link show dev "$IF_C" 2>/dev/null
        echo "# ip link show type ifb"
        cli ip link show type ifb
    } 2>&1 | sed -E -e 's/direct_packets_stat [0-9]+/direct_packets_stat N/' -e 's/link-netns(id)? [^ ]+/link-netns PEER/' >"$1"
}

# check_snapshot NAME BEFORE_FILE: compares the interface now with BEFORE_FILE.
check_snapshot() {
    local name=$1 before=$2 now="$WORK/snap.now"
    snapshot "$now"
    if diff -u "$before" "$now" >"$WORK/snap.diff"; then
        record "$name" "interface as before" "identical" "exact" PASS
    else
        record "$name" "interface as before" "differs" "exact" FAIL
        sed 's/^/      /' "$WORK/snap.diff"
    fi
}

# What `run --isolated` sandboxes leave in the client namespace: their ends of the veth pairs,
# their NAT tables; empty when none.
sandbox_leftovers() {
    { ip -n "$NS_C" -o link show | grep -o 'lcsb[0-9]*'; ip netns exec "$NS_C" nft list tables | grep -o 'linkcond_sandbox_[0-9]*'; } |
        sort -u | tr '\n' ' ' | sed 's/ $//' || true
}

# ------------------------------------------------------------------ probe server

server_start() {
    rm -f "$CTL"
    # not through srv(): $! must be the process itself, so signals reach it
    # A safety net against a server outliving its VM run; the benchmarks need longer.
    ip netns exec "$NS_S" timeout "${PROBE_SERVER_LIFETIME:-1800}" python3 "$PROBE" serve --ctl "$CTL" 2>>"$WORK/probe-server.log" &
    SERVER_PID=$!
    local i
    for i in $(seq 300); do
        [[ -S $CTL ]] && tcp_echo_ok "$S4" 22 && tcp_echo_ok "$S6" 22 && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        snooze 0.1
    done
    echo "probe server did not start:" >&2
    cat "$WORK/probe-server.log" >&2
    return 1
}

server_stop() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}

# probe_cli SECONDS ARGS...: run probe.py in the client namespace with a hard time limit.
probe_cli() {
    local t=$1
    shift
    cli timeout "$t" python3 "$PROBE" "$@"
}

# lane_begin: a lane's own start: an empty work directory and results file, its topology,
# server and daemon stopped however it ends, and PROFILES a copy of LINKCOND_PROFILES that the
# lane writes its own profiles into.
lane_begin() {
    rm -rf "$WORK"
    mkdir -p "$WORK"
    : >"$RESULTS"
    trap lane_end EXIT
    PROFILES="$WORK/profiles"
    mkdir -p "$PROFILES"
    cp "${LINKCOND_PROFILES:?set LINKCOND_PROFILES}"/*.yaml "$PROFILES/"
}
lane_end() {
    set +e
    daemon_stop TERM
    server_stop
    topo_down
}

# write_profile NAME BODY: the profile NAME (its other lines BODY) in PROFILES, in a file named
# after it in lower case with dashes, as play_trace's KEY is.
write_profile() {
    printf 'name: %s\n%s\n' "$1" "$2" >"$PROFILES/$(tr ' ' - <<<"${1,,}").yaml"
}

# trace_profiles BEFORE: the shipped traces in PROFILES at a quarter of their rates (what the
# emulated VM's Python senders can offer both ways at once: at most 8 Mbit/s and 700 frames a
# second were offered, 2026-11-26), and BEFORE, the fixed profile at their 3 Mbit/s peak that
# play_trace holds before each.
trace_profiles() {
    "$REPO/scripts/make-traces" --divide 4 "$PROFILES" >/dev/null
    write_profile "$1" $'downlink: { bandwidth: 3mbit, delay: 10ms }\nuplink: { bandwidth: 3mbit, delay: 10ms }'
}

# trace_profile NAME DOWN UP: a profile playing the trace DOWN on the downlink and UP on the
# uplink, each behind a 10 ms delay.
trace_profile() {
    write_profile "$1" "downlink: { trace: $2.trace, delay: 10ms }"$'\n'"uplink: { trace: $3.trace, delay: 10ms }"
}

# play_trace PROFILE SECONDS BEFORE OFFER_BPS: SECONDS of the trace-driven profile PROFILE under
# full-size UDP frames both ways at OFFER_BPS, offered from before it begins, behind the fixed
# profile BEFORE (so that the trace's first window is a change in place and the shaper's queue
# is already full). The switches go through curl: the client took seconds of the emulated CPUs
# that the senders need (a trace's first second was 11% short while it ran, before the VM's root
# was cached). The flow stops
# 1.5 s after the trace's SECONDS, counted from the start the daemon reports, however long the
# switch took. Leaves $WORK/KEY.arrivals.json (probe.py udprate --arrivals) and
# $WORK/KEY.status.json (GET /v1/status right after, with the trace's start), KEY being PROFILE
# in lower case with dashes.
play_trace() {
    local key flow_pid start
    key=$(tr ' ' - <<<"${1,,}")
    put_condition "$3"
    rm -f "$WORK/$key.flowing" "$WORK/$key.played"
    probe_cli $(($2 + 160)) udprate --dir both --host "$S4" --ctl "$CTL" --bps "$4" --offer 1 \
        --duration $(($2 + 60)) --until "$WORK/$key.played" --skip 0 --grace 2 --arrivals \
        --ready "$WORK/$key.flowing" >"$WORK/$key.arrivals.json" &
    flow_pid=$!
    wait_for_path "$WORK/$key.flowing"
    snooze 1
    put_condition "$1"
    timeout 20 curl -s --unix-socket "$SOCK" http://linkcond/v1/status >"$WORK/$key.status.json" || true
    note "$1: $(jq -c '.trace' "$WORK/$key.status.json")"
    start=$(jq -r '.trace.monotonicStartMilliseconds // empty' "$WORK/$key.status.json" 2>/dev/null || true)
    python3 -c 'import sys, time; time.sleep(max(0.0, float(sys.argv[1]) / 1000 + float(sys.argv[2]) - time.monotonic()))' \
        "${start:-0}" "$(($2 + 1)).5" || true
    touch "$WORK/$key.played"
    wait "$flow_pid" || true
    put_condition "$3"
}

# ------------------------------------------------------------------ daemon

BIN=${LINKCOND_BIN:-}
PROFILES=${LINKCOND_PROFILES:-$REPO/profiles}

# lc ARGS...: the client, with a time limit; stdout and stderr go to the caller.
lc() { timeout 30 "$BIN/linkcond" --socket "$SOCK" "$@"; }

# condition_request NAME|off [ID]: a change through curl, to the daemon's default condition or to
# the condition ID (`eth0@10.0.0.5:53/udp`, percent-encoded here); prints the HTTP status, 000
# when the daemon closed the connection without one (it may die under a change on purpose) and
# nothing when PUT_TIMEOUT seconds (20 unless set) ran out first. The reply goes to REPLY_FILE,
# when set.
condition_request() {
    local url=http://linkcond/v1/condition id=${2:-}
    local -a request=(-X PUT -d "{\"profile\": \"$1\"}")
    if [[ -n $id ]]; then
        id=${id//@/%40}
        id=${id//:/%3A}
        url=http://linkcond/v1/conditions/${id//\//%2F}
    fi
    [[ $1 != off ]] || request=(-X DELETE)
    timeout "${PUT_TIMEOUT:-20}" curl -s -o "${REPLY_FILE:-/dev/null}" -w '%{http_code}' --unix-socket "$SOCK" "${request[@]}" "$url" 2>/dev/null || true
}

# put_condition NAME|off [ID]: condition_request, whose verdict is not this function's.
put_condition() { condition_request "$@" >/dev/null; }

# lc_capture ARGS...: runs the client; sets LC_RC, LC_OUT, LC_ERR.
lc_capture() {
    LC_RC=0
    timeout 30 "$BIN/linkcond" --socket "$SOCK" "$@" >"$WORK/lc.out" 2>"$WORK/lc.err" || LC_RC=$?
    LC_OUT=$(cat "$WORK/lc.out")
    LC_ERR=$(cat "$WORK/lc.err")
    printf '    $ linkcond %s -> exit %s\n' "$*" "$LC_RC"
    [[ -z $LC_OUT ]] || printf '%s\n' "$LC_OUT" | sed -n '1,20s/^/      out: /p'
    [[ -z $LC_ERR ]] || printf '%s\n' "$LC_ERR" | sed -n '1,20s/^/      err: /p'
}

# daemon_start [EXTRA LINKCONDD ARGS...]: state and history stay in $WORK.
daemon_start() {
    rm -f "$SOCK"
    echo "--- linkcondd start $(date +%T) $*" >>"$DAEMON_LOG"
    # With DAEMON_HOSTS, the daemon reads that file as /etc/hosts (the addresses of the host names
    # it looks up), bound over it in a mount namespace of its own that still sees new mounts
    # (`ip netns add`); the same process, so signals reach the daemon.
    local hosts=()
    [[ -z ${DAEMON_HOSTS:-} ]] ||
        hosts=(unshare --mount --propagation slave sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$DAEMON_HOSTS")
    ip netns exec "$NS_C" "${hosts[@]}" "$BIN/linkcondd" --interface "$IF_C" --socket "$SOCK" --profiles "$PROFILES" \
        --state-dir "$WORK/state" --history-file "$WORK/history.jsonl" \
        --log-level debug "$@" 2>>"$DAEMON_LOG" >>"$DAEMON_LOG" &
    DAEMON_PID=$!
    # A liveness wait, not a timed check: a crash lane runs at the lowest priority beside three
    # others under emulation, where a start once took over 30 s (LC_START_TIMEOUT, seconds).
    local deadline=$((SECONDS + ${LC_START_TIMEOUT:-120})) rc state
    while ((SECONDS < deadline)); do
        # curl rather than the client: it starts in milliseconds even under emulation.
        if [[ -S $SOCK ]] && timeout 5 curl -sf --unix-socket "$SOCK" http://linkcond/v1/status >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
            rc=0
            wait "$DAEMON_PID" 2>/dev/null || rc=$?
            state="it exited with status $rc"
            DAEMON_PID=""
            break
        fi
        snooze 0.1
    done
    [[ -n ${state:-} ]] || state="still running after ${LC_START_TIMEOUT:-120} s: state $(awk '{ print $3 }' "/proc/$DAEMON_PID/stat" 2>/dev/null), waiting in $(cat "/proc/$DAEMON_PID/wchan" 2>/dev/null), socket $([[ -S $SOCK ]] && echo there || echo absent)"
    echo "linkcondd did not become ready ($state); log tail:" >&2
    tail -30 "$DAEMON_LOG" >&2
    return 1
}

# daemon_stop [SIGNAL]: sets DAEMON_RC (124 if it had to be killed).
daemon_stop() {
    local sig=${1:-TERM} i
    DAEMON_RC=""
    [[ -n $DAEMON_PID ]] || return 0
    kill -"$sig" "$DAEMON_PID" 2>/dev/null || true
    for i in $(seq 150); do
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        snooze 0.1
    done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -KILL "$DAEMON_PID" 2>/dev/null || true
        wait "$DAEMON_PID" 2>/dev/null || true
        DAEMON_RC=124
    else
        DAEMON_RC=0
        wait "$DAEMON_PID" 2>/dev/null || DAEMON_RC=$?
    fi
    DAEMON_PID=""
}

# run_capture SECONDS CMD...: sets RC and OUT (stdout+stderr together).
run_capture() {
    local t=$1
    shift
    RC=0
    OUT=$(timeout "$t" "$@" 2>&1) || RC=$?
}

# tc_of_tree ARGS...: tc in the namespace of the tree read: the client namespace, or with
# TREE_PID set, the namespace of that process (a container's, which has no name).
tc_of_tree() {
    if [[ -n ${TREE_PID:-} ]]; then nsenter -t "$TREE_PID" -n tc "$@"; else tc -n "$NS_C" "$@"; fi
}

# tree_text: every qdisc, class and filter linkcond could have on the interface and its IFB, as
# tc reads them back (no statistics), one line per object, sorted. Filter handles, u32 hash-table
# numbering and action indexes are what the kernel numbers by creation order, so they are left
# out: a rebuilt tree and a re-adopted one compare equal when they hold the same objects.
# Text, not `tc -j`: iproute2 6.1 prints invalid JSON for htb classes.
tree_text() {
    local batch='qdisc show dev %s\nclass show dev %s\nfilter show dev %s parent 7a00:\nfilter show dev %s parent ffff:\n'
    # One tc per device (a process start costs much under emulation), one awk for both. tc says
    # "failed" for a device or parent that is not there (no IFB when off): that is an answer.
    {
        # shellcheck disable=SC2059
        printf "$batch" "$IF_C" "$IF_C" "$IF_C" "$IF_C" | tc_of_tree -force -batch - 2>/dev/null || true
        echo "@@ifb"
        # Only an IFB that exists: tc asked for a device that does not falls back to an ioctl, for
        # which the kernel runs modprobe twice (ifb_bulk_total). The namespace's devices are read
        # without a process; a namespace without an anchor is asked as before.
        local devices=/proc/${TREE_PID:-${NS_ANCHOR:-none}}/net/dev
        if [[ ! -r $devices || $(<"$devices") =~ (^|[[:space:]])"$IFB": ]]; then
            # shellcheck disable=SC2059
            printf "$batch" "$IFB" "$IFB" "$IFB" "$IFB" | tc_of_tree -force -batch - 2>/dev/null || true
        fi
    } | awk -v dev="$IF_C: " '
        BEGIN { prefix = dev }
        /^@@ifb$/ { flush(); prefix = "ifb: "; next }
        /^qdisc noqueue 0: / { next }
        /^(qdisc|class) / { flush(); emit($0); next }
        /^filter/ { flush(); record = $0; next }
        /^[ \t]*$/ { next }
        /^[ \t]/ { if (record != "") { sub(/^[ \t]+/, " "); record = record $0 } else emit($0); next }
        { flush(); emit($0) }
        END { flush() }
        function flush() { if (record != "") emit(record); record = "" }
        # Filters are joined into one line each before the kernel-numbered parts are dropped.
        function emit(line) {
            sub(/ fh [0-9a-f:]+/, "", line); sub(/ order [0-9]+/, "", line)
            sub(/ key ht [0-9a-f]+ bkt [0-9a-f]+/, "", line)
            gsub(/ index [0-9]+ ref [0-9]+ bind [0-9]+/, "", line); gsub(/ (not_)?in_hw/, "", line)
            sub(/ direct_packets_stat [0-9]+/, "", line); sub(/ +$/, "", line)
            if (line !~ / ht divisor /) print prefix line
        }' | sort
}

# tree_signature: "none" when linkcond has nothing on the interface, else a digest of tree_text:
# every qdisc, class and filter on the interface and its IFB.
tree_signature() {
    text_signature "$(tree_text)"
}

# text_signature TEXT: tree_signature of a tree_text already read.
text_signature() {
    local digest
    if [[ -z $1 ]]; then
        echo none
    else
        digest=$(printf '%s' "$1" | sha1sum)
        echo "${digest:0:12}"
    fi
}

# ifb_bulk_total: packets the IFB's bulk netem (7a10:) sent, dropped or holds; -1 without an IFB.
# Parsed in the shell from tc's text: jq alone takes most of a second to start under emulation.
# Picked from every qdisc of the namespace: tc asked for a device that does not exist falls back
# to an ioctl, for which the kernel runs modprobe twice with the name (the SIGKILL loop's probes
# of an unshaped downlink ran it about a thousand times in a suite).
ifb_bulk_total() {
    local text line handle="" total=0 seen=0
    text=$(tc -n "$NS_C" -s qdisc show 2>/dev/null) || { echo -1; return; }
    while IFS= read -r line; do
        if [[ $line =~ ^qdisc\ [a-z_]+\ ([0-9a-f]+:)\ dev\ ([^ ]+) ]]; then
            handle=""
            [[ ${BASH_REMATCH[2]} != "$IFB" ]] || handle=${BASH_REMATCH[1]}
        elif [[ $handle == 7a10: && $line =~ Sent\ [0-9]+\ bytes\ ([0-9]+)\ pkt\ \(dropped\ ([0-9]+) ]]; then
            total=$((total + BASH_REMATCH[1] + BASH_REMATCH[2]))
            seen=1
        elif [[ $handle == 7a10: && $line =~ backlog\ [0-9]+[a-zA-Z]*\ ([0-9]+)p ]]; then
            total=$((total + BASH_REMATCH[1]))
        fi
    done <<<"$text"
    ((seen)) && echo "$total" || echo -1
}

# udp_noports: datagrams the client namespace's UDP stack found no socket for, IPv4 and IPv6,
# read through the namespace's anchor process (topo_up) without starting a process.
udp_noports() {
    local v4=0 v6=0 key value
    local -a f
    while read -r -a f; do
        [[ ${f[0]} == Udp: && ${f[1]} =~ ^[0-9]+$ ]] && v4=${f[2]}
    done <"/proc/$NS_ANCHOR/net/snmp"
    while read -r key value; do
        [[ $key == Udp6NoPorts ]] && v6=$value
    done <"/proc/$NS_ANCHOR/net/snmp6"
    echo "$v4 $v6"
}

# downlink_state: sends 3 IPv4 and 3 IPv6 datagrams from the server to a closed port of the
# client (downlink) and says where they went: "shaped" when all six passed the IFB's bulk netem
# (sent, queued or dropped by it), "unshaped" when there is no ingress qdisc and no IFB and all
# six reached the client's UDP stack, else what was seen.
downlink_state() {
    local before after ifb_before ifb_after v4 v6
    ifb_before=$(ifb_bulk_total)
    before=$(udp_noports)
    srv bash -c 'for i in 1 2 3; do echo probe >"/dev/udp/$1/9"; echo probe >"/dev/udp/$2/9"; done' _ "$C4" "$C6" 2>/dev/null || true
    # Until the six probes are counted one way or the other (a busy VM may take a while).
    for _ in $(seq 15); do
        snooze 0.2
        ifb_after=$(ifb_bulk_total)
        after=$(udp_noports)
        v4=$(( ${after% *} - ${before% *} ))
        v6=$(( ${after#* } - ${before#* } ))
        ((ifb_before >= 0 && ifb_after - ifb_before >= 6)) && break
        ((ifb_after < 0 && v4 >= 3 && v6 >= 3)) && break
    done
    if ((ifb_before >= 0 && ifb_after - ifb_before >= 6)); then
        echo shaped
    elif ((ifb_after < 0 && v4 == 3 && v6 == 3)) &&
        [[ $(tc -n "$NS_C" qdisc show dev "$IF_C" ingress 2>/dev/null) != *ingress* ]]; then
        echo unshaped
    else
        echo "unclear(ifb+$((ifb_after - ifb_before)),v4+$v4,v6+$v6)"
    fi
}

# foreign_threads PID: how many of linkcondd's threads are not its own main thread, event loop or
# NIO's blocking pool, and their names: libdispatch's workers, say, whose pool monitor would wake
# an idle daemon every second for as long as it lives.
# "no threads read" when there is no such process (a daemon that died must not pass for a clean one).
foreign_threads() {
    local comm name read_any="" others=()
    for comm in /proc/"${1:-none}"/task/*/comm; do
        read -r name 2>/dev/null <"$comm" || continue
        read_any=yes
        [[ $name == linkcondd || $name == NIO-SGLTN-* || $name == SGLTN-TP-* ]] || others+=("$name")
    done
    [[ -n $read_any ]] || { echo "no threads read (process ${1:-none})"; return; }
    echo "${#others[@]}${others[*]:+ (${others[*]})}"
}

# current_profile: the name of the profile in force, as the daemon says, or "off".
# Read in the shell (no jq): "off" when the status says "active": false, else the profile
# object's own "name"; nothing when the daemon does not answer, twice, within 20 s (a lane at the
# lowest priority may get little CPU while the main part of the suite is busy), or says neither.
current_profile() {
    local status
    status=$(timeout 20 curl -sf --unix-socket "$SOCK" http://linkcond/v1/status) ||
        status=$(timeout 20 curl -sf --unix-socket "$SOCK" http://linkcond/v1/status) || return 0
    if [[ $status =~ \"active\"[[:space:]]*:[[:space:]]*false ]]; then
        echo off
    elif [[ $status =~ \"profile\"[[:space:]]*:[[:space:]]*\{(.*) ]] &&
        [[ ${BASH_REMATCH[1]} =~ \"name\"[[:space:]]*:[[:space:]]*\"([^\"]*)\" ]]; then
        echo "${BASH_REMATCH[1]}"
    fi
}

# bulk_netem: the uplink bulk netem as tc shows it, a quick probe of which profile is in force.
bulk_netem() {
    # awk reads to the end: a reader that stops early would SIGPIPE tc under pipefail.
    cli tc qdisc show dev "$IF_C" | awk '/netem 7a10:/ && !found++ { print } END { if (!found) print "none" }'
}

# seconds_until EXPECTED LIMIT: seconds until bulk_netem shows EXPECTED, or "null".
seconds_until() {
    local expected=$1 limit=$2 t0 i
    t0=$(date +%s.%N)
    for i in $(seq $((limit * 10))); do
        if [[ $(bulk_netem) == "$expected" ]]; then
            awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
            return
        fi
        snooze 0.05
    done
    echo null
}

# wait_drained [SECONDS]: until no queue on the interface or the IFB holds a packet. A bulk
# transfer leaves up to a full netem queue behind it, which takes seconds to leave a 32 kbit/s
# link; the next measurement's handshake would wait behind it.
wait_drained() {
    local limit=${1:-60} i queued
    for i in $(seq $((limit * 5))); do
        queued=$( {
            cli tc -s -j qdisc show dev "$IF_C"
            cli tc -s -j qdisc show dev "$IFB" 2>/dev/null || echo '[]'
        } | jq -s '[.[][] | .qlen // 0] | add // 0')
        [[ $queued == 0 ]] && return 0
        snooze 0.2
    done
    echo "queues still hold $queued packets after ${limit}s" >&2
    return 1
}

# ------------------------------------------------------------------ assertions

# record CHECK PROMISED MEASURED TOLERANCE PASS|FAIL
# json FILE FILTER: value or null.
json() { jq -r "$2" "$1" 2>/dev/null || echo null; }
# rtt_field FILE TARGET FIELD
rtt_field() { json "$1" ".[] | select(.target == \"$2\") | .$3 // null"; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "null" || b == "null" || a == "" || b == "") print "null"; else printf "%.1f", a - b }'; }

record() {
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RESULTS"
    printf '%s  %s: measured %s, expected %s (tolerance %s)\n' "$5" "$1" "$3" "$2" "$4"
}

# awk-evaluated condition over numbers: fcond "a b" 'a < b'
fcond() { awk -v v="$1" "BEGIN { split(v, x, \" \"); a = x[1]; b = x[2]; c = x[3]; d = x[4]; exit !($2) }"; }

# check_rel NAME MEASURED EXPECTED PCT UNIT [DETAIL]: |measured - expected| <= pct% of expected.
check_rel() {
    local name=$1 m=$2 e=$3 pct=$4 unit=$5 detail=${6:-} st=FAIL lo hi
    lo=$(awk -v e="$e" -v p="$pct" 'BEGIN { printf "%.4g", e * (1 - p / 100) }')
    hi=$(awk -v e="$e" -v p="$pct" 'BEGIN { printf "%.4g", e * (1 + p / 100) }')
    if [[ $m != null && -n $m ]] && fcond "$m $lo $hi" 'a >= b && a <= c'; then st=PASS; fi
    record "$name" "$e $unit" "$m $unit$detail" "±$pct% [$lo, $hi]" "$st"
}

# check_range NAME MEASURED LO HI UNIT PROMISED [DETAIL]
check_range() {
    local name=$1 m=$2 lo=$3 hi=$4 unit=$5 promised=$6 detail=${7:-} st=FAIL
    if [[ $m != null && -n $m ]] && fcond "$m $lo $hi" 'a >= b && a <= c'; then st=PASS; fi
    record "$name" "$promised" "$m $unit$detail" "[$lo, $hi] $unit" "$st"
}

# check_max NAME MEASURED MAX UNIT PROMISED
check_max() {
    local name=$1 m=$2 max=$3 unit=$4 promised=$5 st=FAIL
    if [[ $m != null && -n $m ]] && fcond "$m $max" 'a <= b'; then st=PASS; fi
    record "$name" "$promised" "$m $unit" "<= $max $unit" "$st"
}

# check_rc NAME RC WANT(0|nonzero) PROMISED
check_rc() {
    local name=$1 rc=$2 want=$3 st=FAIL
    if [[ $want == 0 && $rc == 0 ]] || [[ $want == nonzero && $rc != 0 && $rc != 124 ]]; then st=PASS; fi
    record "$name" "$4" "exit $rc" "exit ${want/nonzero/!=0}" "$st"
}

# check_contains NAME TEXT NEEDLE: case-insensitive substring.
check_contains() {
    local name=$1 text=$2 needle=$3 st=FAIL shown
    if grep -qiF -- "$needle" <<<"$text"; then st=PASS; fi
    shown=$(printf '%s' "$text" | tr '\n\t' '  ' | cut -c1-90)
    record "$name" "mentions '$needle'" "\"$shown\"" "substring" "$st"
}

# check_equal NAME EXPECTED MEASURED: exact match.
check_equal() {
    local st=FAIL
    [[ $3 == "$2" ]] && st=PASS
    record "$1" "$2" "$3" "exact" "$st"
}

# check_tree NAME SIGNATURE [PROMISED]: the tree in force, read once, is SIGNATURE's.
check_tree() {
    local now st=FAIL
    now=$(tree_signature)
    [[ $now == "$2" ]] && st=PASS
    record "$1" "${3:-$2}" "$now" "exact" "$st"
}

# check_bool NAME PROMISED MEASURED CONDITION_EXIT_STATUS
check_bool() {
    local st=FAIL
    [[ $4 == 0 ]] && st=PASS
    record "$1" "$2" "$3" "exact" "$st"
}

# binomial_interval N P Z -> "lo hi" for the count of successes.
binomial_interval() {
    awk -v n="$1" -v p="$2" -v z="$3" 'BEGIN {
        m = n * p; s = sqrt(n * p * (1 - p))
        lo = m - z * s; hi = m + z * s; if (lo < 0) lo = 0
        printf "%d %d\n", int(lo + 0.999999), int(hi) }'
}

summary_table() {
    local total pass fail
    total=$(wc -l <"$RESULTS")
    fail=$(awk -F'\t' '$5 == "FAIL"' "$RESULTS" | wc -l)
    pass=$((total - fail))
    printf '\n%s\n' "================================ linkcond kernel suite summary"
    {
        printf 'CHECK\tPROMISED\tMEASURED\tTOLERANCE\tRESULT\n'
        cat "$RESULTS"
    } | awk -F'\t' '
        { for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
        END {
            split("48 44 64 26 6", cap, " ")
            for (i = 1; i <= 5; i++) if (w[i] > cap[i]) w[i] = cap[i]
            for (r = 1; r <= n; r++) {
                line = ""
                for (i = 1; i <= 5; i++) line = line sprintf("%-" w[i] "s  ", substr(c[r, i], 1, w[i]))
                print line
            }
        }'
    printf '%d checks: %d passed, %d failed\n' "$total" "$pass" "$fail"
    [[ $fail == 0 ]]
}
