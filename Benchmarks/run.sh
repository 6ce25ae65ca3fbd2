#!/usr/bin/env bash
# linkcond benchmarks, inside the test VM as root (scripts/bench starts it): switch latency next
# to a tc script and tcconfig, hitless switching, fidelity of every value, and the daemon's
# footprint. Results go to $LC_BENCH_OUT as JSON; Benchmarks/report.py turns them into tables
# and plots.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:-$REPO/.build/release}
OUT=${LC_BENCH_OUT:?set LC_BENCH_OUT to a directory the host can read}
TCSET_DIR=${LC_TCCONFIG_BIN:-}
SWITCHES=${LC_BENCH_SWITCHES:-500}
[[ $EUID == 0 ]] || { echo "bench: needs root (inside the VM)" >&2; exit 2; }
[[ -x $BIN/linkcondd && -x $BIN/linkcond-bench ]] || { echo "bench: no release build in $BIN" >&2; exit 2; }

mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
FIDELITY="$OUT/fidelity.jsonl"
BENCH="$BIN/linkcond-bench"
PROBE_SERVER_LIFETIME=10800  # the whole run, not the kernel suite's 30 minutes
cleanup() {
    set +e
    daemon_stop TERM
    server_stop
    srv pkill iperf3
    topo_down
}
trap cleanup EXIT

# --------------------------------------------------------------- setting up
log "setup"
modprobe -a sch_netem sch_htb sch_ingress ifb cls_u32 cls_flower act_mirred veth
topo_up
server_start
srv iperf3 -s -D --logfile "$WORK/iperf3.log"
PROFILES="$WORK/profiles"
mkdir -p "$PROFILES"
cp "$REPO"/profiles/*.yaml "$PROFILES/"
SHIPPED=()
# LC_BENCH_SHIPPED narrows the shipped profiles measured to those whose file names match its
# globs ("devtools-* webpagetest-*"); LC_BENCH_GRID=0 leaves out the fidelity grid (the
# baseline stays).
read -ra shipped_globs <<<"${LC_BENCH_SHIPPED:-*}"
for glob in "${shipped_globs[@]}"; do
    for file in "$REPO"/profiles/$glob.yaml; do
        [[ -f $file ]] && SHIPPED+=("$(basename "$file" .yaml)")
    done
done
# The shipped profiles as switch-latency's cycle, for the parts that switch through them.
cycle=()
for stem in "${SHIPPED[@]}"; do cycle+=(--profile "$stem"); done

# Grid profiles: one value at a time, each direction alone where the direction matters.
BANDWIDTHS=(32kbit 128kbit 512kbit 2Mbit 10Mbit 50Mbit 100Mbit 250Mbit 500Mbit)
DELAYS=(1ms 5ms 20ms 50ms 100ms 250ms 500ms 1000ms)
LOSSES=(0% 1% 5% 10% 25% 50% 75% 90% 100%)
for b in "${BANDWIDTHS[@]}"; do
    printf 'name: grid bw %s\ndownlink: { bandwidth: %s }\nuplink: { bandwidth: %s }\n' "$b" "$b" "$b" >"$PROFILES/grid-bw-$b.yaml"
done
for d in "${DELAYS[@]}"; do
    printf 'name: grid up delay %s\nuplink: { delay: %s }\n' "$d" "$d" >"$PROFILES/grid-up-delay-$d.yaml"
    printf 'name: grid down delay %s\ndownlink: { delay: %s }\n' "$d" "$d" >"$PROFILES/grid-down-delay-$d.yaml"
done
for l in "${LOSSES[@]}"; do
    printf 'name: grid loss %s\ndownlink: { loss: %s }\nuplink: { loss: %s }\n' "${l%\%}" "$l" "$l" >"$PROFILES/grid-loss-${l%\%}.yaml"
done
# The shipped traces at a quarter of their rates (what the VM's Python senders can offer both
# ways at once), each in both directions of a profile, and the fixed profile before each.
TRACE_NAMES=(steps ramp outage walk)
trace_profiles "bench before trace"
for t in "${TRACE_NAMES[@]}"; do
    trace_profile "bench trace $t" "$t" "$t"
done

{
    echo "{"
    echo "  \"guest_kernel\": \"$(uname -r)\","
    echo "  \"guest_cpus\": $(nproc),"
    echo "  \"cpu_model\": \"$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)\","
    echo "  \"date\": \"$(date -u +%FT%TZ)\""
    echo "}"
} >"$OUT/machine.json"

start_daemon() {
    ip netns exec "$NS_C" "$BENCH" startup --socket "$SOCK" --out "$WORK/startup.json" -- \
        "$BIN/linkcondd" --interface "$IF_C" --socket "$SOCK" --profiles "$PROFILES" \
        --state-dir "$WORK/state" --history-file "$WORK/history.jsonl" --log-level warning "$@" >/dev/null
    DAEMON_PID=$(jq -r .pid "$WORK/startup.json")
}
rss_kib() { awk -v f="${1:-VmRSS}" '$1 == f ":" { print $2 }' "/proc/$DAEMON_PID/status"; }
# idle_minute: the daemon left alone for 60 s, once its threads have settled: a pool's idle
# threads end seconds after the work, and a thread that ends moves the process's CPU ticks (its
# time is folded into the process's) and takes its context switches out of the sum. From s0/c0
# to s1/c1: the context switches of the threads alive at both ends, and the process's CPU
# ticks; settled_seconds, how long the threads took to stop ending or starting (at most 120 s),
# and threads_ended, those that ended during the minute all the same.
idle_minute() {
    thread_ids() { ls "/proc/$DAEMON_PID/task" | sort -n | tr '\n' ' '; }
    per_thread_switches() {
        local task
        for task in /proc/"$DAEMON_PID"/task/*; do
            awk -v t="${task##*/}" '/ctxt_switches/ { s += $2 } END { print t, s }' "$task/status" 2>/dev/null || true
        done
    }
    cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }
    local before steady=0 waited=0 first last
    before=$(thread_ids)
    while ((steady < 10 && waited < 120)); do
        sleep 1
        waited=$((waited + 1))
        if [[ $(thread_ids) == "$before" ]]; then steady=$((steady + 1)); else steady=0; before=$(thread_ids); fi
    done
    settled_seconds=$waited
    first=$(per_thread_switches); c0=$(cpu_ticks)
    sleep 60
    last=$(per_thread_switches); c1=$(cpu_ticks)
    s0=0
    s1=$(awk 'NR == FNR { before[$1] = $2; next } ($1 in before) { s += $2 - before[$1] } END { print s + 0 }' \
        <(echo "$first") <(echo "$last"))
    threads_ended=$(awk 'NR == FNR { after[$1] = 1; next } !($1 in after) { n++ } END { print n + 0 }' \
        <(echo "$last") <(echo "$first"))
}

# LC_BENCH_PARTS picks parts (default all): switching (footprint, latency, tc, tcconfig), hitless,
# conditions (many at once, one per interface), matches (many peers of one interface),
# sandboxes (many run --isolated sandboxes), metrics (scrapes on the real kernel, memory and idle
# with counters read and the metrics listener open), scenario (a timed scenario played under a TCP
# download and a UDP stream), traces (trace-driven links against their traces), captures (a packet
# trace's loss-free rate, the shaped traffic's throughput with and without one, the daemon's
# memory under a reader that stops reading), fidelity.
PARTS=" ${LC_BENCH_PARTS:-switching hitless conditions matches sandboxes metrics scenario traces captures fidelity} "
part() { [[ $PARTS == *" $1 "* ]]; }
# The daemon counts its netlink requests with fault injection on (never armed here).
executed_steps() { curl -sf --unix-socket "$SOCK" http://linkcond/v1/debug/fault | jq -r .executedSteps; }
now_ns() { date +%s%N; }

if part switching; then
# --------------------------------------------------------------- footprint: start-up
log "footprint: start-up time and memory"
startups=()
for i in 1 2 3 4 5; do
    start_daemon
    startups+=("$(jq .milliseconds "$WORK/startup.json")")
    [[ $i == 5 ]] || daemon_stop TERM
done
rss_start=$(rss_kib)
rss_start_anon=$(rss_kib RssAnon)
rss_start_file=$(rss_kib RssFile)
note "start-up: ${startups[*]} ms; RSS after start ${rss_start} KiB"

# --------------------------------------------------------------- switch latency
log "switch latency: linkcond, $SWITCHES switches through the shipped profiles"
ip netns exec "$NS_C" "$BENCH" switch-latency --socket "$SOCK" "${cycle[@]}" --count "$SWITCHES" --out "$OUT/latency-linkcond.json"

log "footprint: memory after 10000 switches, then idle"
ip netns exec "$NS_C" "$BENCH" switch-latency --socket "$SOCK" "${cycle[@]}" --count 10000 --out "$OUT/latency-linkcond-10k.json"
rss_10k=$(rss_kib)
rss_10k_anon=$(rss_kib RssAnon)
lc off >/dev/null
idle_minute
threads=$(ls "/proc/$DAEMON_PID/task" | wc -l)
{
    echo "{"
    echo "  \"startup_ms\": [$(IFS=,; echo "${startups[*]}")],"
    echo "  \"rss_start_kib\": $rss_start,"
    echo "  \"rss_start_anon_kib\": $rss_start_anon,"
    echo "  \"rss_start_file_kib\": $rss_start_file,"
    echo "  \"rss_after_10000_switches_kib\": $rss_10k,"
    echo "  \"rss_after_10000_switches_anon_kib\": $rss_10k_anon,"
    echo "  \"idle_seconds\": 60,"
    echo "  \"idle_context_switches\": $((s1 - s0)),"
    echo "  \"idle_cpu_ticks\": $((c1 - c0)),"
    echo "  \"idle_settled_seconds\": $settled_seconds,"
    echo "  \"idle_threads_ended\": $threads_ended,"
    echo "  \"clock_ticks_per_second\": $(getconf CLK_TCK),"
    echo "  \"threads\": $threads"
    echo "}"
} >"$OUT/footprint.json"
cat "$OUT/footprint.json"

# --------------------------------------------------------------- tc script and tcconfig
daemon_stop TERM
log "switch latency: the same steps as a tc script"
"$BENCH" tc-scripts --interface "$IF_C" --profiles "$PROFILES" "${cycle[@]/--profile/--cycle}" --out "$WORK/scripts"
cli sh "$WORK/scripts/tc-build.sh"
ip netns exec "$NS_C" "$BENCH" switch-command --method "tc script" "${cycle[@]}" --count "${LC_BENCH_TC_SWITCHES:-100}" \
    --out "$OUT/latency-tc.json" "sh $WORK/scripts/tc-switch-{}.sh"
cli sh "$WORK/scripts/tc-teardown.sh"

if [[ -n $TCSET_DIR && -x $TCSET_DIR/tcset ]]; then
    log "switch latency: tcconfig (tcset --change per direction)"
    ip netns exec "$NS_C" env PATH="$TCSET_DIR:$PATH" "$BENCH" switch-command --method tcconfig "${cycle[@]}" \
        --count "${LC_BENCH_TCCONFIG_SWITCHES:-10}" --out "$OUT/latency-tcconfig.json" "sh $WORK/scripts/tcconfig-{}.sh"
    cli "$TCSET_DIR/tcdel" "$IF_C" --all >/dev/null 2>&1 || true
else
    note "tcconfig not installed (LC_TCCONFIG_BIN); skipping it"
fi
cli tc qdisc del dev "$IF_C" root 2>/dev/null || true
cli tc qdisc del dev "$IF_C" ingress 2>/dev/null || true
fi

# --------------------------------------------------------------- hitless switching
start_daemon
for stem in "${SHIPPED[@]}"; do "$BIN/linkcond" --socket "$SOCK" show "$stem" --json; done | jq -s . >"$OUT/profiles.json"
if part hitless; then
log "hitless: 200 switches under a steady UDP stream each way and a TCP transfer"
hitless_profiles=()
for stem in "${SHIPPED[@]}"; do hitless_profiles+=(--profile "$stem"); done
rm -f "$WORK/trickle.stop"
probe_cli 900 trickle --host "$S4" --ctl "$CTL" --chunk 64 --gap 0.2 --until "$WORK/trickle.stop" >"$OUT/hitless-tcp.json" &
trickle_pid=$!
probe_cli 900 stream --host "$S4" --ctl "$CTL" --dir both --rate 25 --duration "${LC_BENCH_STREAM_SECONDS:-130}" >"$OUT/hitless-stream.json" &
stream_pid=$!
sleep 3
ip netns exec "$NS_C" "$BENCH" hitless --socket "$SOCK" "${hitless_profiles[@]}" --switches "${LC_BENCH_HITLESS_SWITCHES:-200}" \
    --out "$OUT/hitless-switches.json"
wait "$stream_pid" || true
lc off >/dev/null
touch "$WORK/trickle.stop"
wait "$trickle_pid" || true
cat "$OUT/hitless-tcp.json"
fi
# --------------------------------------------------------------- many conditions
CONDITION_SWITCHES=${LC_BENCH_CONDITION_SWITCHES:-200}
# The k-th condition of a scale run: one per interface (the default one, then dummies lcdK), or
# one per peer of the default interface (10.200.(k / 256).(k % 256)).
condition_on_interface() { if (($1 == 0)); then echo "$IF_C"; else echo "lcd$1"; fi; }
condition_on_peer() { echo "@10.200.$(($1 / 256)).$(($1 % 256))"; }
put_profile() { curl -sf --unix-socket "$SOCK" -X PUT -d "{\"profile\": \"$1\"}" "http://linkcond/v1/conditions/${2/@/%40}" >/dev/null; }
# scale_conditions NAME ID_OF SELECT: holds Slow Net on 1, then 16, 64 and 256 conditions (the
# k-th named by `ID_OF k`), and at each size switches the first 200 times between Slow Net and
# Nasty Net over one connection (linkcond-bench switch-latency), counting the daemon's netlink
# requests; then removes them all with one DELETE /v1/conditions. SELECT (jq) picks the listed
# conditions that count. Results: $OUT/NAME.json.
scale_conditions() {
    local name=$1 id_of=$2 select=$3 held=0 first n t0 t1 listed before after
    : >"$WORK/$name.jsonl"
    for n in 1 16 64 256; do
        first=$held
        t0=$(now_ns)
        while ((held < n)); do
            put_profile slow-net "$($id_of "$held")"
            held=$((held + 1))
        done
        t1=$(now_ns)
        listed=$(curl -sf --unix-socket "$SOCK" http://linkcond/v1/conditions | jq "[.conditions[] | select($select)] | length")
        # switch-latency first activates the last profile, then measures: made here, before the
        # count, every counted switch is a real change.
        put_profile nasty-net "$($id_of 0)"
        before=$(executed_steps)
        ip netns exec "$NS_C" "$BENCH" switch-latency --socket "$SOCK" --condition "$($id_of 0)" --profile slow-net --profile nasty-net \
            --count "$CONDITION_SWITCHES" --out "$WORK/$name-$n.json"
        after=$(executed_steps)
        jq -c --argjson n "$n" --argjson listed "$listed" --argjson steps "$(( after - before ))" --argjson switches "$CONDITION_SWITCHES" \
            --argjson added "$(( held - first ))" --argjson addNs "$(( t1 - t0 ))" \
            '{conditions: $n, active: $listed, stepsPerSwitch: ($steps / $switches), p50Milliseconds, p90Milliseconds, p99Milliseconds,
              added: $added, addMillisecondsPerCondition: (if $added > 0 then $addNs / $added / 1e6 else null end)}' \
            "$WORK/$name-$n.json" >>"$WORK/$name.jsonl"
        tail -n 1 "$WORK/$name.jsonl"
    done
    # Through curl: the client's own wait for an answer is shorter than 256 teardowns under emulation.
    t0=$(now_ns)
    timeout 600 curl -sf --unix-socket "$SOCK" -X DELETE http://linkcond/v1/conditions >/dev/null
    t1=$(now_ns)
    jq -s --argjson offNs "$(( t1 - t0 ))" '{scale: ., offAllMilliseconds: ($offNs / 1e6)}' "$WORK/$name.jsonl" >"$OUT/$name.json"
    cat "$OUT/$name.json"
}
if part conditions; then
log "conditions: 1, 16, 64 and 256 at once, one per interface; switching one of them"
# 255 dummy interfaces besides the default one, made in one batch (a process each is slow under
# emulation). The daemon counts its netlink requests only with fault injection on (never armed).
modprobe dummy numdummies=0
for i in $(seq 255); do printf 'link add lcd%d type dummy\nlink set lcd%d up\n' "$i" "$i"; done >"$WORK/dummies.batch"
cli ip -batch "$WORK/dummies.batch"
daemon_stop TERM
start_daemon --enable-fault-injection
scale_conditions conditions condition_on_interface '.active'
daemon_stop TERM
for i in $(seq 255); do printf 'link del lcd%d\n' "$i"; done | cli ip -batch -
start_daemon
fi

# --------------------------------------------------------------- many peers of one interface
if part matches; then
log "matches: 1, 16, 64 and 256 conditions on peers of one interface; switching one of them"
daemon_stop TERM
start_daemon --enable-fault-injection
scale_conditions matches condition_on_peer '.active and .peer != null'
daemon_stop TERM
start_daemon
fi

# --------------------------------------------------------------- many sandboxes
if part sandboxes; then
log "sandboxes: 1, 16, 64 and 256 run --isolated sandboxes at once; switching the default condition beside them"
# Each sandbox is held by a connection, as run --isolated holds it, and the daemon takes at most
# 128 of root's and 64 of any other user's (ControlLimits): 64 each for root and three members
# of the linkcond group, each member's in user namespaces of its own as without sudo.
groupadd -f linkcond
LC_GID=$(getent group linkcond | cut -d: -f3)
HOLDER_UIDS=(0 65534 65533 65532)
daemon_stop TERM
start_daemon --enable-fault-injection
lc activate slow-net >/dev/null
sandboxes_listed() { curl -sf --unix-socket "$SOCK" http://linkcond/v1/conditions | jq '[.conditions[] | select(.sandbox)] | length'; }
sandbox_links() { ip -n "$NS_C" -o link show | grep -c 'lcsb[0-9]' || true; }
HOLDERS=()
held=0
holder_index=0
: >"$WORK/sandboxes.jsonl"
for n in 1 16 64 256; do
    first=$holder_index
    while ((held < n)); do
        uid=${HOLDER_UIDS[$((held / 64))]}
        count=$(( n - held < 64 - held % 64 ? n - held : 64 - held % 64 ))
        out="$WORK/holder-$holder_index.json"
        : >"$out"
        if ((uid == 0)); then
            python3 "$REPO/Benchmarks/sandboxes.py" --socket "$SOCK" --count "$count" >"$out" &
        else
            setpriv --reuid="$uid" --regid="$uid" --groups="$LC_GID" /usr/bin/python3 "$REPO/Benchmarks/sandboxes.py" \
                --socket "$SOCK" --count "$count" --user-namespace >"$out" &
        fi
        HOLDERS+=($!)
        for _ in $(seq 6000); do [[ -s $out ]] && break; kill -0 "${HOLDERS[-1]}" 2>/dev/null || break; sleep 0.1; done
        [[ -s $out ]] || { echo "bench: sandbox holder $holder_index (uid $uid) failed" >&2; exit 1; }
        held=$((held + count))
        holder_index=$((holder_index + 1))
    done
    creates=$(for ((i = first; i < holder_index; i++)); do jq -c '.createMilliseconds[]' "$WORK/holder-$i.json"; done | jq -s -c .)
    listed=$(sandboxes_listed)
    links=$(sandbox_links)
    lc activate nasty-net >/dev/null
    before=$(executed_steps)
    ip netns exec "$NS_C" "$BENCH" switch-latency --socket "$SOCK" --profile slow-net --profile nasty-net \
        --count "$CONDITION_SWITCHES" --out "$WORK/sandboxes-$n.json"
    after=$(executed_steps)
    jq -c --argjson n "$n" --argjson listed "$listed" --argjson links "$links" --argjson steps "$(( after - before ))" \
        --argjson switches "$CONDITION_SWITCHES" --argjson creates "$creates" \
        '{sandboxes: $n, listed: $listed, hostLinks: $links, stepsPerSwitch: ($steps / $switches), p50Milliseconds, p90Milliseconds,
          p99Milliseconds, added: ($creates | length),
          createMeanMilliseconds: (if ($creates | length) > 0 then ($creates | add / length) else null end),
          createMaxMilliseconds: ($creates | max)}' "$WORK/sandboxes-$n.json" >>"$WORK/sandboxes.jsonl"
    tail -n 1 "$WORK/sandboxes.jsonl"
done
# Every holder closes its connections at once: each lease ends, and with it its sandbox.
t0=$(now_ns)
kill -TERM "${HOLDERS[@]}"
for pid in "${HOLDERS[@]}"; do wait "$pid" || true; done
for _ in $(seq 6000); do [[ $(sandboxes_listed) == 0 && $(sandbox_links) == 0 ]] && break; sleep 0.1; done
t1=$(now_ns)
jq -s --argjson endNs "$(( t1 - t0 ))" --argjson left "$(sandboxes_listed)" --argjson links "$(sandbox_links)" \
    '{scale: ., endAllMilliseconds: ($endNs / 1e6), leftListed: $left, leftLinks: $links}' "$WORK/sandboxes.jsonl" >"$OUT/sandboxes.json"
cat "$OUT/sandboxes.json"
daemon_stop TERM
start_daemon
fi

# --------------------------------------------------------------- counters and metrics
if part metrics; then
log "metrics: GET /metrics and /v1/stats with 2, 17 and 65 conditions; memory after 10000 switches with scrapes between; idle with the listener open"
daemon_stop TERM
METRICS_ADDRESS=127.0.0.1:9464
start_daemon --metrics-listen "$METRICS_ADDRESS"
metrics_rss_start=$(rss_kib)
# The default condition and 1, 16, 64 peers' conditions under Slow Net, each kind of request
# timed 200 times at each size over one connection; then all of them removed.
ip netns exec "$NS_C" "$BENCH" metrics-scale --socket "$SOCK" --count 200 --out "$WORK/metrics-scale.json"
scrape() { cli curl -sf "http://$METRICS_ADDRESS/metrics" >/dev/null && curl -sf --unix-socket "$SOCK" http://linkcond/v1/stats >/dev/null; }
scrapes=0
for round in $(seq 10); do
    ip netns exec "$NS_C" "$BENCH" switch-latency --socket "$SOCK" "${cycle[@]}" --count 1000 --out "$WORK/metrics-switches-$round.json" >/dev/null
    for _ in 1 2 3 4 5; do
        scrape || { echo "bench: a scrape between the switches failed" >&2; exit 1; }
        scrapes=$((scrapes + 1))
    done
done
metrics_rss_10k=$(rss_kib)
metrics_rss_10k_anon=$(rss_kib RssAnon)
lc off >/dev/null
idle_minute
jq -n --slurpfile scale "$WORK/metrics-scale.json" --argjson rssStart "$metrics_rss_start" \
    --argjson rss10k "$metrics_rss_10k" --argjson rss10kAnon "$metrics_rss_10k_anon" --argjson scrapes "$scrapes" \
    --argjson switches "$(cat "$WORK"/metrics-switches-*.json | jq -s 'map(.count) | add')" \
    --argjson idleSwitches "$((s1 - s0))" --argjson idleTicks "$((c1 - c0))" \
    --argjson idleSettled "$settled_seconds" --argjson idleThreadsEnded "$threads_ended" \
    '{scale: $scale[0], rssStartKiB: $rssStart, rssAfterSwitchesKiB: $rss10k, rssAfterSwitchesAnonKiB: $rss10kAnon,
      switches: $switches, scrapesBetween: $scrapes, idleSeconds: 60, idleContextSwitches: $idleSwitches, idleCpuTicks: $idleTicks,
      idleSettledSeconds: $idleSettled, idleThreadsEnded: $idleThreadsEnded}' \
    >"$OUT/metrics.json"
cat "$OUT/metrics.json"
daemon_stop TERM
start_daemon
fi

# --------------------------------------------------------------- a scenario played
if part scenario; then
log "scenario: 8 timed steps of 2 s under a TCP download and a UDP stream, one-way delays and delivered bytes"
# The daemon reads scenarios from the directory beside its profiles; reloaded, not restarted.
SCENARIOS="$WORK/scenarios"
mkdir -p "$SCENARIOS"
TIMELINE_NAME="LC Bench Timeline"
TIMELINE_STEP_SECONDS=2
# Each step, both directions alike: "MBIT/S DELAY_MS", with a 50 ms queue behind the rate (the
# default queue lets a download's queueing hide the delays); "outage" is 100% loss down, the
# uplink unshaped (ACKs and retransmission timers keep running).
TIMELINE=("8 20" "2 60" "8 20" "1 100" "4 40" outage "8 20" "2 60")
{
    echo "name: $TIMELINE_NAME"
    echo "steps:"
    for i in "${!TIMELINE[@]}"; do
        read -r mbit ms <<<"${TIMELINE[$i]}"
        if [[ $mbit == outage ]]; then
            printf '  - { label: "step %d", downlink: { loss: 100%% }, for: %ds }\n' $((i + 1)) "$TIMELINE_STEP_SECONDS"
        else
            printf '  - { label: "step %d", downlink: { bandwidth: %sMbit, delay: %sms, queue: 50ms }, uplink: { bandwidth: %sMbit, delay: %sms, queue: 50ms }, for: %ds }\n' \
                $((i + 1)) "$mbit" "$ms" "$mbit" "$ms" "$TIMELINE_STEP_SECONDS"
        fi
    done
} >"$SCENARIOS/lc-bench-timeline.yaml"
# The same steps as report.py reads them.
for i in "${!TIMELINE[@]}"; do
    read -r mbit ms <<<"${TIMELINE[$i]}"
    if [[ $mbit == outage ]]; then
        printf '{"label":"step %d","seconds":%d,"downlink":{"bandwidthBitsPerSecond":null,"delayMilliseconds":0,"lossPercent":100},"uplink":null}\n' \
            $((i + 1)) "$TIMELINE_STEP_SECONDS"
    else
        printf '{"label":"step %d","seconds":%d,"downlink":{"bandwidthBitsPerSecond":%d,"delayMilliseconds":%d,"lossPercent":0},"uplink":{"bandwidthBitsPerSecond":%d,"delayMilliseconds":%d,"lossPercent":0}}\n' \
            $((i + 1)) "$TIMELINE_STEP_SECONDS" $((mbit * 1000000)) "$ms" $((mbit * 1000000)) "$ms"
    fi
done | jq -s . >"$WORK/timeline-steps.json"
curl -sf --unix-socket "$SOCK" -X POST http://linkcond/v1/reload >/dev/null
curl -sf --unix-socket "$SOCK" http://linkcond/v1/scenarios >"$WORK/scenarios.json"
jq -e --arg n "$TIMELINE_NAME" 'any(.scenarios[]; .name == $n)' "$WORK/scenarios.json" >/dev/null ||
    { echo "bench: the daemon did not load $TIMELINE_NAME:" >&2; cat "$WORK/scenarios.json" >&2; exit 1; }
put_condition off
# Packets every 10 ms down the link (their one-way delays: the step's delay plus what waits in
# the queue, which the download fills), and a TCP download through the same queue from probe.py's
# source (timed_download.py: probe.py throughput's series merges arrivals less than 10 ms apart,
# which a steady download always is). Both from about a second before the scenario starts to a
# few seconds after its 16 s, on the clock of the stream's stamps.
# LC_BENCH_SCENARIO_RCVBUF bounds the download's receive buffer (bytes), and with it how much of
# the queue TCP can fill; unset, the kernel's autotuning.
rcvbuf_args=()
[[ -z ${LC_BENCH_SCENARIO_RCVBUF:-} ]] || rcvbuf_args=(--rcvbuf "$LC_BENCH_SCENARIO_RCVBUF")
probe_cli 120 stream --dir down --host "$S4" --ctl "$CTL" --rate 100 --duration 20 --grace 5 >"$WORK/timeline-stream.json" &
stream_pid=$!
cli timeout 120 python3 "$REPO/Benchmarks/timed_download.py" --host "$S4" --duration 20 \
    "${rcvbuf_args[@]}" >"$WORK/timeline-download.json" &
download_pid=$!
# Until both run (each a Python start, about a second under emulation): the download's
# connection to the source port (5002, 138A) is established and the stream's socket is bound to
# the client's address, read from the client namespace's tables without starting a process.
IFS=. read -r o1 o2 o3 o4 <<<"$C4"
printf -v c4hex '%02X%02X%02X%02X' "$o4" "$o3" "$o2" "$o1"
measurements_running() {
    local tcp=0 udp=0 f
    while read -r -a f; do [[ ${f[2]} == *:138A && ${f[3]} == 01 ]] && tcp=1; done <"/proc/$NS_ANCHOR/net/tcp"
    while read -r -a f; do [[ ${f[1]} == "$c4hex":* ]] && udp=1; done <"/proc/$NS_ANCHOR/net/udp"
    ((tcp && udp))
}
running=no
for _ in $(seq 600); do
    measurements_running && { running=yes; break; }
    snooze 0.1
done
[[ $running == yes ]] || note "the stream or the download did not show within 60 s; playing anyway"
snooze 1
timeout 30 curl -s --unix-socket "$SOCK" -X PUT -d "{\"scenario\": \"$TIMELINE_NAME\"}" http://linkcond/v1/condition >"$WORK/timeline-play.json" || true
download_rc=0
wait "$download_pid" || download_rc=$?
stream_rc=0
wait "$stream_pid" || stream_rc=$?
timeout 30 curl -s --unix-socket "$SOCK" "http://linkcond/v1/history?limit=50" >"$WORK/timeline-history.json" || true
put_condition off
# A file that is not one JSON document (a probe that failed) becomes null.
for f in stream download play history; do
    jq -e . "$WORK/timeline-$f.json" >/dev/null 2>&1 || echo null >"$WORK/timeline-$f.json"
done
jq -n --arg name "$TIMELINE_NAME" --rawfile yaml "$SCENARIOS/lc-bench-timeline.yaml" --slurpfile steps "$WORK/timeline-steps.json" \
    --slurpfile stream "$WORK/timeline-stream.json" --slurpfile download "$WORK/timeline-download.json" \
    --slurpfile play "$WORK/timeline-play.json" --slurpfile history "$WORK/timeline-history.json" \
    --argjson streamRc "$stream_rc" --argjson downloadRc "$download_rc" --arg running "$running" \
    --arg rcvbuf "${LC_BENCH_SCENARIO_RCVBUF:-}" \
    '{scenario: $name, yaml: $yaml, steps: $steps[0],
      stream: {rate: 100, durationSeconds: 20, exitStatus: $streamRc, result: $stream[0]},
      download: {durationSeconds: 20, rcvbuf: (if $rcvbuf == "" then null else ($rcvbuf | tonumber) end), exitStatus: $downloadRc,
                 result: $download[0]},
      bothRunningBeforePlay: ($running == "yes"), leadSeconds: 1,
      play: $play[0],
      history: [($history[0].entries // [])[] | select(.reason == "play" or ((.reason // "") | startswith("scenario")))]}' >"$OUT/scenario.json"
jq -c '{scenario, streamSent: .stream.result.down.sent, streamReceived: (.stream.result.down.packets | length),
        downloadBytes: .download.result.total_bytes, history: (.history | length)}' "$OUT/scenario.json"
fi

# --------------------------------------------------------------- trace-driven links
if part traces; then
log "traces: each shipped trace both ways at once, at a quarter of its rates, under full-size frames offered above its peak"
# Two periods of each, and one of the minute-long walk: 1 s and 100 ms windows against the trace.
declare -A TRACE_SECONDS=([steps]=10 [ramp]=36 [outage]=20 [walk]=60)
: >"$WORK/traces.jsonl"
for t in "${TRACE_NAMES[@]}"; do
    play_trace "bench trace $t" "${TRACE_SECONDS[$t]}" "bench before trace" 3900000
    start=$(jq -r '.trace.monotonicStartMilliseconds' "$WORK/bench-trace-$t.status.json")
    for dir in down up; do
        python3 "$REPO/Benchmarks/trace_check.py" "$PROFILES/$t.trace" "$WORK/bench-trace-$t.arrivals.json" "$dir" "$start" \
            --until-s "${TRACE_SECONDS[$t]}" >"$WORK/trace-$t-$dir.json" 2>/dev/null || echo null >"$WORK/trace-$t-$dir.json"
        jq -c --arg trace "$t" --arg dir "$dir" --argjson seconds "${TRACE_SECONDS[$t]}" \
            '{trace: $trace, direction: $dir, seconds: $seconds, divisor: 4, result: .}' "$WORK/trace-$t-$dir.json" >>"$WORK/traces.jsonl"
        jq -c --arg trace "$t" '{trace: $trace, direction, judged, largest_error, mean_error, most_frames_in_an_outage, fine_error_quantiles}' \
            "$WORK/trace-$t-$dir.json"
    done
done
jq -s . "$WORK/traces.jsonl" >"$OUT/traces.json"
put_condition off
fi

# --------------------------------------------------------------- packet traces
if part captures; then
log "captures: the rate a capture keeps up with, throughput with and without one, memory under a stalled reader"
write_profile "LC Bench Capture Shaped" "downlink: { bandwidth: 100Mbit, delay: 5ms }
uplink: { bandwidth: 100Mbit, delay: 5ms }"
write_profile "LC Bench Capture Rate" "downlink: { delay: 1ms }
uplink: { delay: 1ms }"
curl -sf --unix-socket "$SOCK" -X POST http://linkcond/v1/reload >/dev/null
lc activate "LC Bench Capture Rate" >/dev/null
python3 "$REPO/Benchmarks/captures.py" --linkcond "$BIN" --socket "$SOCK" --netns "$NS_C" --server "$S4" \
    --daemon-pid "$DAEMON_PID" --work "$WORK/captures" --shaped "LC Bench Capture Shaped" \
    --rates "${LC_BENCH_CAPTURE_RATES:-1000,2000,5000,10000,20000,40000}" --out "$OUT/captures.json"
rm -rf "$WORK/captures"
put_condition off
fi

part fidelity || { daemon_stop TERM; log "done: results in $OUT"; exit 0; }

# --------------------------------------------------------------- fidelity
# fidelity KIND NAME DIRECTION FAMILY CONFIGURED MEASURED UNIT TOOL [EXTRA JSON FIELDS]
fidelity() {
    printf '{"kind":"%s","profile":"%s","direction":"%s","family":"%s","configured":%s,"measured":%s,"unit":"%s","tool":"%s"%s}\n' \
        "$1" "$2" "$3" "$4" "$5" "${6:-null}" "$7" "$8" "${9:-}" >>"$FIDELITY"
}
host_of() { [[ $1 == ipv4 ]] && echo "$S4" || echo "$S6"; }

# measure_rate NAME DIRECTION FAMILY CONFIGURED_BPS
measure_rate() {
    local name=$1 dir=$2 family=$3 configured=$4 host rate
    host=$(host_of "$family")
    wait_drained 60 || true
    if ((configured <= 1000000)); then
        # Full-size UDP frames at 1.5x the rate: a TCP transfer at these rates measures its own
        # stalls and retransmissions as much as the link (bursts of GSO segments, timeouts).
        local seconds=$((configured < 100000 ? 24 : 12))
        probe_cli 120 udprate --dir "$dir" --host "$host" --ctl "$CTL" --bps "$configured" \
            --duration "$seconds" --skip 3 >"$WORK/udprate.json" || true
        rate=$(jq '.link_bps // null' "$WORK/udprate.json")
        fidelity bandwidth "$name" "$dir" "$family" "$configured" "$rate" bit/s probe-udp
    else
        local reverse=""
        [[ $dir == down ]] && reverse=-R
        cli timeout 60 iperf3 -c "$host" -t 8 -O 2 $reverse -J >"$WORK/iperf.json" 2>/dev/null || true
        # Receiver goodput of full-size segments, scaled to the link: 1514 bytes on the wire per
        # 1448 bytes of payload over IPv4, 1428 over IPv6 (its header is 20 bytes longer).
        local payload=$([[ $family == ipv4 ]] && echo 1448 || echo 1428)
        rate=$(jq --argjson p "$payload" '(.end.sum_received.bits_per_second // null) | if . == null then null else . * 1514 / $p end' "$WORK/iperf.json")
        fidelity bandwidth "$name" "$dir" "$family" "$configured" "$rate" bit/s iperf3
    fi
}

# measure_rtt NAME CONFIGURED_UP_MS CONFIGURED_DOWN_MS: extra UDP round trip, IPv4 and IPv6.
measure_rtt() {
    local name=$1 up=$2 down=$3 rounds=${4:-15} family
    probe_cli 120 rtt --target "udp:$S4:7" --target "udp:[$S6]:7" --rounds "$rounds" --interval 0.05 --timeout 5 >"$WORK/rtt.json" || true
    for family in ipv4 ipv6; do
        local target base m
        target=$([[ $family == ipv4 ]] && echo "udp:$S4:7" || echo "udp:[$S6]:7")
        base=${BASE_RTT[$family]}
        m=$(jq --arg t "$target" --argjson b "$base" '.[] | select(.target == $t) | if .median_ms == null then null else .median_ms - $b end' "$WORK/rtt.json")
        fidelity delay "$name" "up+down" "$family" "$(awk -v a="$up" -v b="$down" 'BEGIN { print a + b }')" "$m" ms probe
    done
}

# lost_percent RECEIVED COUNT: the loss in percent, or null when the probe gave no count (a
# missing result must never read as "nothing arrived").
lost_percent() {
    [[ $1 =~ ^[0-9]+$ ]] || { echo null; return; }
    awk -v r="$1" -v n="$2" 'BEGIN { printf "%.3f", 100 * (1 - r / n) }'
}

# measure_loss NAME CONFIGURED_PERCENT [COUNT]
measure_loss() {
    local name=$1 configured=$2 count=${3:-2000} task
    probe_cli 300 loss --ctl "$CTL" --count "$count" --gap 0.001 \
        --task "up:$S4" --task "down:$S4" --task "up:$S6" --task "down:$S6" >"$WORK/loss.json" || true
    for task in "up:$S4" "down:$S4" "up:$S6" "down:$S6"; do
        local dir=${task%%:*} family received
        family=$([[ ${task#*:} == "$S4" ]] && echo ipv4 || echo ipv6)
        received=$(jq --arg t "$task" '.[] | select(.task == $t) | .received' "$WORK/loss.json" 2>/dev/null)
        fidelity loss "$name" "$dir" "$family" "$configured" "$(lost_percent "$received" "$count")" % probe ",\"count\":$count"
    done
}

: >"$FIDELITY"
log "fidelity: baseline"
lc off >/dev/null
declare -A BASE_RTT
probe_cli 120 rtt --target "udp:$S4:7" --target "udp:[$S6]:7" --rounds 20 --interval 0.05 >"$WORK/rtt.json"
BASE_RTT[ipv4]=$(jq --arg t "udp:$S4:7" '.[] | select(.target == $t) | .median_ms' "$WORK/rtt.json")
BASE_RTT[ipv6]=$(jq --arg t "udp:[$S6]:7" '.[] | select(.target == $t) | .median_ms' "$WORK/rtt.json")
for family in ipv4 ipv6; do
    for dir in up down; do
        measure_rate unshaped "$dir" "$family" 100000000000
    done
done

if [[ ${LC_BENCH_GRID:-1} != 0 ]]; then
log "fidelity: bandwidth"
for b in "${BANDWIDTHS[@]}"; do
    lc activate "grid-bw-$b" >/dev/null
    bps=$(jq -rn --arg b "$b" '$b | capture("(?<n>[0-9.]+)(?<u>[kMG]?)bit") | (.n | tonumber) * ({"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[.u]) | floor')
    for family in ipv4 ipv6; do
        for dir in up down; do
            measure_rate "grid-bw-$b" "$dir" "$family" "$bps"
        done
    done
done

log "fidelity: delay"
for d in "${DELAYS[@]}"; do
    ms=${d%ms}
    lc activate "grid-up-delay-$d" >/dev/null
    measure_rtt "grid-up-delay-$d" "$ms" 0
    lc activate "grid-down-delay-$d" >/dev/null
    measure_rtt "grid-down-delay-$d" 0 "$ms"
done

log "fidelity: loss"
for l in "${LOSSES[@]}"; do
    lc activate "grid-loss-${l%\%}" >/dev/null
    measure_loss "grid-loss-${l%\%}" "${l%\%}"
done

fi

log "fidelity: every shipped profile"
for stem in "${SHIPPED[@]}"; do
    lc activate "$stem" >/dev/null
    doc=$(jq --arg s "$stem" '.[] | select(.file | endswith("/" + $s + ".yaml"))' "$OUT/profiles.json")
    ms() { jq -r "$1" <<<"$doc" | sed 's/ms$//; s/^0$/0/'; }
    up_delay=$(jq -r '.uplink.delay' <<<"$doc" | sed 's/ms$//')
    down_delay=$(jq -r '.downlink.delay' <<<"$doc" | sed 's/ms$//')
    dns_delay=$(jq -r '.dnsDelay' <<<"$doc" | sed 's/ms$//; s/^\([0-9.]*\)s$/\1000/')
    up_loss=$(jq -r '.uplink.loss' <<<"$doc" | tr -d '%')
    down_loss=$(jq -r '.downlink.loss' <<<"$doc" | tr -d '%')
    # Round trips only where most survive (Nasty Net's 90% each way leaves 1 in 100).
    if awk -v u="$up_loss" -v d="$down_loss" 'BEGIN { exit !((1 - u / 100) * (1 - d / 100) >= 0.5) }'; then
        measure_rtt "$stem" "$up_delay" "$down_delay" 10
        probe_cli 120 rtt --target "udp:$S4:53" --rounds 6 --interval 0.05 --timeout 8 >"$WORK/dns.json" || true
        m=$(jq --argjson b "${BASE_RTT[ipv4]}" '.[0] | if .median_ms == null then null else .median_ms - $b end' "$WORK/dns.json")
        fidelity dns "$stem" "up+down" ipv4 "$(awk -v a="$up_delay" -v b="$down_delay" -v c="$dns_delay" 'BEGIN { print a + b + c }')" "$m" ms probe
    fi
    for dir in up down; do
        side=$([[ $dir == up ]] && echo uplink || echo downlink)
        bw=$(jq -r ".$side.bandwidth // empty" <<<"$doc")
        [[ -z $bw ]] && continue
        bps=$(jq -rn --arg b "$bw" '$b | capture("(?<n>[0-9.]+)(?<u>[kMG]?)bit") | (.n | tonumber) * ({"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[.u]) | floor')
        loss=$([[ $dir == up ]] && echo "$up_loss" || echo "$down_loss")
        [[ $loss == 0 ]] && measure_rate "$stem" "$dir" ipv4 "$bps"
    done
    if [[ $up_loss != 0 || $down_loss != 0 ]]; then
        probe_cli 300 loss --ctl "$CTL" --count 1000 --gap 0.002 --task "up:$S4" --task "down:$S4" >"$WORK/loss.json" || true
        for dir in up down; do
            received=$(jq --arg t "$dir:$S4" '.[] | select(.task == $t) | .received' "$WORK/loss.json" 2>/dev/null)
            configured=$([[ $dir == up ]] && echo "$up_loss" || echo "$down_loss")
            fidelity loss "$stem" "$dir" ipv4 "$configured" "$(lost_percent "$received" 1000)" % probe ',"count":1000'
        done
    fi
done
lc off >/dev/null
daemon_stop TERM
log "done: results in $OUT"
