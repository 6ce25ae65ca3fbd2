#!/usr/bin/env bash
# linkcond demo: linkcondd shapes one end of a veth pair between two throwaway namespaces, and
# this script switches it through Slow Net, Nasty Net and Black Hole while measuring real
# traffic, runs two `run --isolated` jobs side by side on different profiles, then prints
# measured vs promised. Runs as root on a kernel with netem; `make demo`
# (scripts/demo) decides whether that is this machine or a VM.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:-$REPO/.build/debug}
[[ $EUID == 0 ]] || { echo "demo: needs root" >&2; exit 2; }
[[ -x $BIN/linkcondd && -x $BIN/linkcond ]] || { echo "demo: no linkcondd/linkcond in $BIN; run 'swift build'" >&2; exit 2; }

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
HTTP_PID=""
cleanup() {
    set +e
    [[ -z $HTTP_PID ]] || kill "$HTTP_PID" 2>/dev/null
    daemon_stop TERM
    server_stop
    topo_down
}
trap cleanup EXIT

# row PROFILE WHAT PROMISED MEASURED
row() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$WORK/demo.tsv"; printf '  %-11s %-34s promised %-16s measured %s\n' "$@"; }
json() { jq -r "$2" "$1" 2>/dev/null || echo "?"; }
rtt() { probe_cli 120 rtt --target "udp:$S4:7" --target "udp:$S4:53" --target "tcp:$S4:22" --rounds "$1" --interval 0.3 --timeout 3 >"$WORK/rtt.json" || true; }
median() { json "$WORK/rtt.json" ".[] | select(.target == \"$1\") | .median_ms // \"lost\""; }
extra() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 == a && b + 0 == b) { d = a - b; printf "%.0f ms", (d > -0.5 && d < 0.5) ? 0 : d } else print "lost" }'; }

echo "linkcond demo on $(uname -r): linkcondd shapes veth-c in namespace $NS_C; the servers live in $NS_S."
topo_up
server_start
daemon_start
snapshot "$WORK/snap.before"
echo
echo "Unshaped round trip:"
rtt 5
base_udp=$(median "udp:$S4:7")
base_dns=$(median "udp:$S4:53")
base_ssh=$(median "tcp:$S4:22")
printf '  %s ms (UDP echo), %s ms (DNS port), %s ms (SSH port)\n' "$base_udp" "$base_dns" "$base_ssh"

echo
echo "$ linkcond activate 'Slow Net'"
lc activate "Slow Net" | sed 's/^/  /'
rtt 8
row "Slow Net" "extra round trip" "200 ms" "$(extra "$(median "udp:$S4:7")" "$base_udp")"
row "Slow Net" "extra round trip to DNS (port 53)" "400 ms" "$(extra "$(median "udp:$S4:53")" "$base_dns")"
row "Slow Net" "extra round trip to SSH (exempt)" "0 ms" "$(extra "$(median "tcp:$S4:22")" "$base_ssh")"
probe_cli 60 throughput --dir down --host "$S4" --ctl "$CTL" --duration 10 --skip 2 >"$WORK/tput.json" || true
row "Slow Net" "download rate (link level)" "32 kbit/s" "$(json "$WORK/tput.json" '((.link_bps // 0) / 100 | round) / 10 | tostring + " kbit/s"')"

echo
echo "$ linkcond activate 'Nasty Net'      # switched in place: no gap, connections survive"
lc activate "Nasty Net" | sed 's/^/  /'
probe_cli 60 loss --ctl "$CTL" --count 1000 --task "up:$S4" --task "down:$S4" >"$WORK/loss.json" || true
for dir in up down; do
    got=$(json "$WORK/loss.json" ".[] | select(.task == \"$dir:$S4\") | .received")
    row "Nasty Net" "${dir}link packets lost" "90%" "$(awk -v g="$got" 'BEGIN { if (g + 0 == g) printf "%.1f%% (%d of 1000 arrived)", 100 - g / 10, g; else print "?" }')"
done

echo
echo "$ linkcond activate 'Black Hole'"
lc activate "Black Hole" | sed 's/^/  /'
probe_cli 60 loss --ctl "$CTL" --count 500 --task "up:$S4" --task "down:$S4" >"$WORK/loss.json" || true
row "Black Hole" "uplink packets delivered" "all" "$(json "$WORK/loss.json" ".[] | select(.task == \"up:$S4\") | .received") of 500"
row "Black Hole" "downlink packets delivered" "none" "$(json "$WORK/loss.json" ".[] | select(.task == \"down:$S4\") | .received") of 500"
tcp_echo_ok "$S4" 22 && ssh_state="reachable" || ssh_state="unreachable"
row "Black Hole" "SSH (TCP port 22)" "reachable" "$ssh_state"

echo
echo "$ linkcond off"
lc off | sed 's/^/  /'

echo
echo "A network that changes: Slow Net until the first 20 KB have arrived, then Black Hole."
mkdir -p "$WORK/www"
head -c 1000000 /dev/urandom >"$WORK/www/big"
ip netns exec "$NS_S" python3 -m http.server --bind "$S4" --directory "$WORK/www" 8000 >"$WORK/http.log" 2>&1 &
HTTP_PID=$!
for _ in $(seq 50); do tcp_echo_ok "$S4" 8000 2>/dev/null && break; sleep 0.2; done
echo "$ linkcond run --scenario 'Slow Net, then Black Hole' -- curl -o big http://$S4:8000/big --max-time 20"
rm -f "$WORK/big"
began=$SECONDS
cli timeout 60 "$BIN/linkcond" --socket "$SOCK" run --scenario "Slow Net, then Black Hole" -- \
    curl -s -o "$WORK/big" "http://$S4:8000/big" --max-time 20 2>"$WORK/scenario-run.err" &
scenario_run=$!
# What the download has reached, about every second, and the scenario's step (read with curl).
while kill -0 "$scenario_run" 2>/dev/null; do
    sleep 1
    got=$(stat -c %s "$WORK/big" 2>/dev/null || echo 0)
    step=$(timeout 5 curl -s --unix-socket "$SOCK" http://linkcond/v1/status |
        jq -r '.scenario | if . then "step \(.step) of \(.steps): \(.stepName)" else "-" end' 2>/dev/null || echo "?")
    printf '  %2d s  %7d bytes downloaded   %s\n' $((SECONDS - began)) "$got" "$step"
done
wait "$scenario_run" || true
sed 's/^/  /' "$WORK/scenario-run.err"
final=$(stat -c %s "$WORK/big" 2>/dev/null || echo 0)
switched=$(curl -s --unix-socket "$SOCK" "http://linkcond/v1/history?limit=5" |
    jq -r '[.entries[] | select(.reason == "scenario")] | last | .detail // ""' | sed -nE 's/.*\(([0-9]+) bytes carried\).*/\1/p')
row "scenario" "Slow Net until the trigger" "20 KB down" "${switched:-?} bytes carried when it switched"
row "scenario" "then Black Hole" "the download hangs" "stopped at $final of 1000000 bytes"
echo "  (What was queued behind Slow Net's rate when the step changed still arrives: it was sent"
echo "  under Slow Net. Then nothing, until curl gives up.)"
kill "$HTTP_PID" 2>/dev/null || true
HTTP_PID=""

echo
echo "Two jobs side by side, each in a sandbox of its own, while the host measures its own traffic:"
echo "$ linkcond run --isolated --profile 'Slow Net' -- probe rtt ... &"
echo "$ linkcond run --isolated --profile 'Black Hole' -- probe rtt ... &"
job() { cli timeout 120 "$BIN/linkcond" --socket "$SOCK" run --isolated --profile "$1" -- \
    python3 "$PROBE" rtt --target "udp:$S4:7" --rounds 8 --interval 0.3 --timeout 3; }
job "Slow Net" >"$WORK/job-slow.json" 2>"$WORK/job-slow.err" &
slow_job=$!
job "Black Hole" >"$WORK/job-hole.json" 2>"$WORK/job-hole.err" &
hole_job=$!
for _ in $(seq 150); do
    [[ $(lc status --all --json 2>/dev/null | jq '[.conditions[] | select(.sandbox)] | length') == 2 ]] && break
    sleep 0.2
done
echo "$ linkcond status --all"
lc status --all | sed 's/^/  /'
rtt 8
host_udp=$(median "udp:$S4:7")
wait "$slow_job" || true
wait "$hole_job" || true
row "isolated" "Slow Net job: extra round trip" "200 ms" "$(extra "$(json "$WORK/job-slow.json" '.[0].median_ms // "lost"')" "$base_udp")"
row "isolated" "Black Hole job: replies" "none" "$(json "$WORK/job-hole.json" '.[0].received // 0') of 8"
row "isolated" "the host's own, meanwhile: extra" "0 ms" "$(extra "$host_udp" "$base_udp")"
leftovers=$(sandbox_leftovers)
row "isolated" "sandboxes left after the jobs" "none" "${leftovers:-none}"

snapshot "$WORK/snap.after"
diff -q "$WORK/snap.before" "$WORK/snap.after" >/dev/null && restored="yes, identical" || restored="no, see $WORK"
row "off" "interface exactly as before" "yes" "$restored"

echo
echo "Summary (measured with real packets through the kernel's netem):"
awk -F'\t' '{ printf "  %-11s %-34s promised %-16s measured %s\n", $1, $2, $3, $4 }' "$WORK/demo.tsv"
