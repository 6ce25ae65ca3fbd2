#!/usr/bin/env bash
# linkcond under a real systemd: the units as `make install` writes them, activated by the socket,
# stopped and killed for real. Runs as root where PID 1 is systemd; in the test VM that is a
# container booted with systemd as its init (scripts/in-systemd-container):
#   swift build && scripts/vm-run --systemd -- Tests/Kernel/systemd.sh
# The daemon shapes one end of a veth pair (lcsd0) in the network namespace of the VM.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:-$REPO/.build/debug}
[[ $(cat /proc/1/comm) == systemd ]] || { echo "systemd.sh: PID 1 is not systemd; use scripts/vm-run --systemd" >&2; exit 2; }
[[ -x $BIN/linkcondd && -x $BIN/linkcond ]] || { echo "systemd.sh: no linkcondd/linkcond in $BIN; run 'swift build'" >&2; exit 2; }
case $BIN in
    /tmp/* | /var/tmp/* | /home/* | /root/* | /run/user/*)
        echo "systemd.sh: $BIN is hidden from the service by PrivateTmp=/ProtectHome=; build elsewhere" >&2
        exit 2 ;;
esac

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
IF=lcsd0
PEER=lcsd1
SVC=linkcondd.service
units=/run/systemd/system
# Files the service reads or writes for the test: outside /tmp, which PrivateTmp= hides from it.
T=/run/linkcond-test
CTL_SOCK=/run/linkcond/control.sock
poller=""

cleanup() {
    set +e
    [[ -z $poller ]] || kill "$poller" 2>/dev/null
    systemctl stop "$SVC" linkcondd.socket 2>/dev/null
    rm -rf "$units/$SVC" "$units/linkcondd.socket" "$units/$SVC.d"
    systemctl daemon-reload
    systemctl reset-failed "$SVC" linkcondd.socket 2>/dev/null
    ip link del "$IF" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

prop() { systemctl show -p "$1" --value "${2:-$SVC}"; }
# wait_for SECONDS CMD...: polls CMD until it succeeds; false if it never does.
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < end)) || return 1
        sleep 0.2
    done
}
is_active() { [[ $(prop ActiveState) == active ]]; }
# The client as root, with a time limit (it starts slowly under emulation).
lcd() { timeout 60 "$BIN/linkcond" "$@"; }
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# The daemon's answer to GET /v1/status straight off the control socket; any connection to
# the socket starts the service when it is not running.
api_status() { timeout 90 curl -sf --unix-socket "$CTL_SOCK" http://linkcond/v1/status; }
profile_now() { lcd status --json 2>/dev/null | jq -r 'if .active then .profile.name else "off" end' 2>/dev/null || echo "no answer"; }
# The journal from here on: in the test VM, Tests/Kernel/package.sh ran the packaged daemon
# under the same unit name just before.
journal_start=$(journalctl -n 1 -o json --no-pager 2>/dev/null | jq -r '.__CURSOR // empty' 2>/dev/null || true)
ours=()
[[ -z $journal_start ]] || ours=(--after-cursor="$journal_start")
journal_json() { journalctl -u "$SVC" "${ours[@]}" -o json --no-pager "$@" 2>/dev/null; }

# --- The interface, and a way to read everything linkcond may change on it. The same script
# takes the snapshots of the test and the one ExecStopPost takes (see below).
modprobe -a sch_netem sch_htb ifb act_mirred cls_u32 cls_flower veth 2>/dev/null || true # else autoloaded
mkdir -p "$T/profiles" "$T/stoppost"
cat >"$T/snapshot" <<'SNAP'
#!/bin/sh
# snapshot IFACE: linkcond's objects as tc and ip read them back (counters masked).
{
    echo "# tc qdisc show dev $1"; tc qdisc show dev "$1" || echo "(tc failed: $?)"
    echo "# tc class show dev $1"; tc class show dev "$1" || echo "(tc failed: $?)"
    echo "# tc filter show dev $1 ingress"; tc filter show dev "$1" ingress 2>&1
    echo "# ip link show type ifb"; ip -o link show type ifb || echo "(ip failed: $?)"
    echo "# ip link show dev $1"; ip -o link show dev "$1" || echo "(ip failed: $?)"
} 2>&1 | sed -E 's/direct_packets_stat [0-9]+/direct_packets_stat N/'
SNAP
chmod 755 "$T/snapshot"
ip link add "$IF" type veth peer name "$PEER"
ip link set "$IF" up
ip link set "$PEER" up
"$T/snapshot" "$IF" >"$WORK/before"
if ! grep -q "^qdisc noqueue 0: root" "$WORK/before"; then
    echo "systemd.sh: cannot read the interface back with tc:" >&2
    cat "$WORK/before" >&2
    exit 1
fi
# same_as_before NAME FILE: FILE (a snapshot) is identical to the one taken before any change.
same_as_before() {
    if [[ ! -s $2 ]]; then
        record "$1" "interface as before" "no snapshot" "exact" FAIL
    elif diff -u "$WORK/before" "$2" >"$WORK/diff"; then
        record "$1" "interface as before" "identical" "exact" PASS
    else
        record "$1" "interface as before" "differs" "exact" FAIL
        sed 's/^/      /' "$WORK/diff"
    fi
}

# --- The units as `make install` writes them, pointing at this build. The drop-in gives the
# daemon its interface and a second profile directory with a broken profile (for a warning
# in the journal), and appends an observer to ExecStopPost: right after `linkcondd --cleanup`
# it records why the service stopped and what the interface looks like.
printf 'name: Broken Test\ndownlink: { delay: soon }\n' >"$T/profiles/broken.yaml"
cat >"$T/observe-stoppost" <<OBS
#!/bin/sh
echo "\$SERVICE_RESULT \$EXIT_CODE \$EXIT_STATUS" >"$T/stoppost/result"
"$T/snapshot" "$IF" >"$T/stoppost/snapshot"
OBS
chmod 755 "$T/observe-stoppost"
mkdir -p "$units/$SVC.d"
sed "s|@BINDIR@|$BIN|g" "$REPO/systemd/linkcondd.service.in" >"$units/$SVC"
cp "$REPO/systemd/linkcondd.socket" "$units/"
# EnvironmentFile= is reset: an /etc/default/linkcondd from an installed linkcond would override
# the test's options.
cat >"$units/$SVC.d/test.conf" <<CONF
[Service]
EnvironmentFile=
Environment="LINKCONDD_OPTIONS=--interface $IF --profiles $REPO/profiles --profiles $T/profiles"
ReadWritePaths=$T/stoppost
ExecStopPost=$T/observe-stoppost
CONF
systemd-sysusers "$REPO/systemd/linkcond.sysusers"
systemctl daemon-reload
note "systemd $(systemctl --version | awk 'NR == 1 { print $2 }'), $(systemd-detect-virt), PID 1 $(cat /proc/1/comm); daemon from $BIN"

# --- Socket activation and Type=notify readiness: only the socket is started; a connection
# starts the service, which turns active once linkcondd sent READY=1.
log "socket activation"
run_capture 60 systemctl start linkcondd.socket
check_rc "systemctl start linkcondd.socket" "$RC" 0 "succeeds"
check_equal "before any connection: socket listening, service not started" "listening inactive" \
    "$(prop SubState linkcondd.socket) $(prop ActiveState)"
(
    last=""
    while :; do
        s=$(prop ActiveState)
        [[ $s == "$last" ]] || echo "$s"
        last=$s
        sleep 0.1
    done
) >"$WORK/states" 2>/dev/null &
poller=$!
t0=$SECONDS
status=$(api_status || true)
answered=$((SECONDS - t0))
wait_for 10 is_active || true
kill "$poller" 2>/dev/null || true
wait "$poller" 2>/dev/null || true
poller=""
note "states of $SVC seen while the first request waited: $(tr '\n' ' ' <"$WORK/states")"
note "the first request was answered after ${answered}s"
check_equal "a connection to the socket starts the service and gets an answer" "$IF" \
    "$( [[ -n $status ]] && jq -r '.interface' <<<"$status" 2>/dev/null || echo "no answer")"
check_equal "Type=notify: active, with the status text sent with READY=1" "active, 'shaping $IF'" \
    "$(prop ActiveState), '$(prop StatusText)'"
main=$(prop MainPID)
holders=$(ss -xlpn | awk -v s="$CTL_SOCK" '$5 == s' || true)
check_bool "the daemon serves systemd's own listening socket" "one socket held by pid 1 and MainPID" \
    "$(grep -o 'pid=[0-9]*,fd=[0-9]*' <<<"$holders" | tr '\n' ' ')" \
    "$([[ $(wc -l <<<"$holders") == 1 && $holders == *"pid=1,"* && $holders == *"pid=$main,fd=3"* ]]; echo $?)"

log "shaping, status as an unprivileged user"
run_capture 60 "$BIN/linkcond" activate "Slow Net"
check_rc "activate through the socket unit" "$RC" 0 "succeeds"
"$T/snapshot" "$IF" >"$WORK/shaped"
check_bool "shaped under systemd (tc reads an htb root)" "htb 7a00: root, differs from before" \
    "$(awk '/ root / && !n++ { print $2, $3 }' "$WORK/shaped")" \
    "$(grep -q '^qdisc htb 7a00: root' "$WORK/shaped" && ! diff -q "$WORK/before" "$WORK/shaped" >/dev/null; echo $?)"
run_capture 60 "${nobody[@]}" "$BIN/linkcond" status --json
check_equal "status as uid 65534 (not in group linkcond)" "exit 0, Slow Net" \
    "exit $RC, $(jq -r '.profile.name // "off"' <<<"$OUT" 2>/dev/null || echo "unreadable answer")"
run_capture 60 "${nobody[@]}" "$BIN/linkcond" activate "Nasty Net"
check_bool "a change as uid 65534 is refused" "non-zero exit naming group linkcond, still Slow Net" \
    "exit $RC, $(profile_now)" \
    "$([[ $RC != 0 && $RC != 124 ]] && grep -qF "group 'linkcond'" <<<"$OUT" && [[ $(profile_now) == "Slow Net" ]]; echo $?)"

log "systemctl stop"
run_capture 90 systemctl stop "$SVC"
check_rc "systemctl stop $SVC" "$RC" 0 "succeeds"
"$T/snapshot" "$IF" >"$WORK/after-stop"
same_as_before "stop removes all shaping" "$WORK/after-stop"
check_equal "after stop: service inactive, socket still listening" "inactive listening" \
    "$(prop ActiveState) $(prop SubState linkcondd.socket)"

# --- A daemon that dies: ExecStopPost removes what it left, Restart=on-failure brings it back,
# and it restores the condition from its state file. Nothing connects to the socket meanwhile,
# which would start the service too.
log "SIGKILL"
status=$(api_status || true)
wait_for 10 is_active || true
check_equal "the next connection starts the service again" "active" "$([[ -n $status ]] && prop ActiveState || echo "no answer")"
run_capture 60 "$BIN/linkcond" activate "Nasty Net"
check_rc "activate Nasty Net" "$RC" 0 "succeeds"
"$T/snapshot" "$IF" >"$WORK/nasty"
rm -f "$T/stoppost/result" "$T/stoppost/snapshot"
killed=$(prop MainPID)
restarts=$(prop NRestarts)
cursor=$(journalctl -n 1 -o json --no-pager | jq -r '.__CURSOR')
if [[ $killed =~ ^[1-9][0-9]*$ && $killed != 1 ]]; then
    kill -KILL "$killed"
else
    note "no main process to kill (MainPID '$killed')"
fi
restarted() {
    local pid
    pid=$(prop MainPID)
    [[ $pid != 0 && $pid != "$killed" && $(prop NRestarts) == $((restarts + 1)) ]] && is_active
}
t0=$SECONDS
if wait_for 120 restarted; then back="active again after $((SECONDS - t0))s"; else back="$(prop ActiveState)/$(prop SubState) after $((SECONDS - t0))s"; fi
note "NRestarts $restarts -> $(prop NRestarts), MainPID $killed -> $(prop MainPID)"
check_equal "SIGKILL: ExecStopPost ran for the killed daemon" "signal killed KILL" \
    "$(cat "$T/stoppost/result" 2>/dev/null || echo "did not run")"
same_as_before "SIGKILL: after ExecStopPost (linkcondd --cleanup) the interface is as before" "$T/stoppost/snapshot"
# What linkcondd --cleanup said between the kill and the restart: a process that is neither the
# killed daemon nor the new one, logging before the new one is ready.
new_main=$(prop MainPID)
cleaned=$(journalctl -u "$SVC" --after-cursor="$cursor" -o json --no-pager 2>/dev/null | jq -rs \
    --arg old "$killed" --arg new "$new_main" --arg m "cleanup: removed linkcond's tree from $IF" '
    (map(select(._PID == $new and (.MESSAGE | tostring | startswith("ready:")))) | first | .__MONOTONIC_TIMESTAMP // "0" | tonumber) as $ready
    | map(select(.MESSAGE == $m and ._PID != $old and ._PID != $new
                 and ($ready == 0 or (.__MONOTONIC_TIMESTAMP | tonumber) < $ready)))
    | first | if . then "priority \(.PRIORITY), pid \(._PID)" else empty end')
check_bool "SIGKILL: linkcondd --cleanup logged the removal, before the restart" "a notice from its own pid" \
    "${cleaned:-no line}" "$([[ $cleaned == "priority 5, pid "* ]]; echo $?)"
check_bool "SIGKILL: Restart=on-failure restarts the daemon" "NRestarts +1, new MainPID, active" "$back" \
    "$(restarted; echo $?)"
check_equal "SIGKILL: the restarted daemon restores the condition" "Nasty Net" "$(profile_now)"
# The IFB is a new device (ExecStopPost deleted the old one): its index and MAC differ.
"$T/snapshot" "$IF" | sed -E '/^[0-9]+: lc-/{s/^[0-9]+:/N:/; s#link/ether [0-9a-f:]+#link/ether M#}' >"$WORK/restored"
sed -E '/^[0-9]+: lc-/{s/^[0-9]+:/N:/; s#link/ether [0-9a-f:]+#link/ether M#}' "$WORK/nasty" >"$WORK/nasty.masked"
if diff -u "$WORK/nasty.masked" "$WORK/restored" >"$WORK/diff"; then same=identical; else same=differs; sed 's/^/      /' "$WORK/diff"; fi
check_bool "SIGKILL: the restored tree is the one before the kill" "identical (tc; IFB index, MAC aside)" "$same" \
    "$([[ $same == identical ]] && grep -q '^qdisc netem' "$WORK/restored"; echo $?)"

# --- journald: linkcondd starts each stderr line with its priority (<5>); journald must take
# it as the priority and strip it. "ready:" is a notice, the broken profile a warning.
log "journald priorities"
starts=$(journal_json | jq -s '[.[] | select(._PID == "1" and (.MESSAGE | tostring | startswith("Started linkcondd.service")))] | length')
notice_lines=$(journalctl -u "$SVC" "${ours[@]}" -p notice -o cat --no-pager 2>/dev/null | grep -c "^ready: shaping $IF" || true)
info_lines=$(journalctl -u "$SVC" "${ours[@]}" -p info..info -o cat --no-pager 2>/dev/null | grep -c "^ready: shaping $IF" || true)
check_bool "journalctl -p notice finds every 'ready:' line, -p info none" "$starts starts: $starts with -p notice, 0 with -p info" \
    "$notice_lines with -p notice, $info_lines with -p info" \
    "$([[ $starts -ge 3 && $notice_lines == "$starts" && $info_lines == 0 ]]; echo $?)"
warnings=$(journal_json | jq -r 'select(.MESSAGE | tostring | test("skipping profile: .*broken\\.yaml")) | .PRIORITY' | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
check_bool "a warning line (broken profile) has priority warning (4)" "only 4, once per start" "${warnings:-no line}" \
    "$([[ $warnings == "4 x$starts " ]]; echo $?)"
prefixed=$(journal_json | jq -s '[.[] | select(.MESSAGE | type == "string" and test("^<[0-7]>"))] | length')
daemon_lines=$(journal_json | jq -s '[.[] | select(._PID != "1")] | length')
check_bool "no line keeps its '<N>' prefix" "0 of the daemon's lines" "$prefixed of $daemon_lines" \
    "$([[ $daemon_lines -gt 0 && $prefixed == 0 ]]; echo $?)"

# --- run --isolated under the unit's restrictions, by a member of group linkcond (not root:
# the client makes the sandbox's namespaces in a user namespace of its own). The host's resolver
# is a loopback stub, as with systemd-resolved: the sandbox gets the stub's upstream file
# instead, which names a DNS server on the host (192.0.2.1, on the peer of the shaped veth,
# answering every name with 192.0.2.77). The command inside resolves a name through it and
# times a TCP connection to the host: both cross the sandbox's condition (LC Sandbox Test,
# 40 ms up, 60 ms down).
log "run --isolated under the unit, as a member of group linkcond"
cat >"$T/profiles/lc-sandbox-test.yaml" <<'YAML'
name: LC Sandbox Test
uplink: { delay: 40ms }
downlink: { delay: 60ms }
YAML
lcd reload >/dev/null
ip addr add 192.0.2.1/32 dev "$PEER"
cat >"$T/servers.py" <<'PY'
import socket, struct, threading
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("192.0.2.1", 53))
    while True:
        query, peer = s.recvfrom(512)
        ident, _, qd = struct.unpack("!HHH", query[:6])
        end = 12
        while query[end]:
            end += query[end] + 1
        question = query[12:end + 5]
        qtype = struct.unpack("!H", query[end + 1:end + 3])[0]
        answers = b""
        if qtype == 1:
            answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("192.0.2.77")
        header = struct.pack("!HHHHHH", ident, 0x8180, 1, 1 if answers else 0, 0, 0)
        s.sendto(header + question + answers, peer)
def tcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("192.0.2.1", 8080))
    s.listen(16)
    while True:
        s.accept()[0].close()
threading.Thread(target=dns, daemon=True).start()
tcp()
PY
timeout 600 python3 "$T/servers.py" &
servers=$!
# The host's resolver: a loopback stub, with the upstream file systemd-resolved keeps.
printf 'nameserver 127.0.0.53\noptions edns0\n' >"$T/stub-resolv.conf"
mkdir -p /run/systemd/resolve
printf 'nameserver 192.0.2.1\n' >/run/systemd/resolve/resolv.conf
mount --bind "$T/stub-resolv.conf" /etc/resolv.conf
cat >"$T/inside.py" <<'PY'
import socket, time
with open("/etc/resolv.conf") as f:
    servers = [l.split()[1] for l in f if l.startswith("nameserver")]
t0 = time.monotonic()
name = sorted({a[4][0] for a in socket.getaddrinfo("api.lc.test", 80, socket.AF_INET)})
dns_ms = (time.monotonic() - t0) * 1000
samples = []
for _ in range(5):
    t0 = time.monotonic()
    socket.create_connection(("192.0.2.1", 8080), timeout=5).close()
    samples.append((time.monotonic() - t0) * 1000)
print("nameservers=%s name=%s dns_ms=%.1f connect_ms=%.1f" % (",".join(servers), ",".join(name), dns_ms, min(samples)))
PY
chmod 644 "$T/inside.py"
linkcond_gid=$(getent group linkcond | cut -d: -f3)
run_capture 120 setpriv --reuid=65534 --regid=65534 --groups="$linkcond_gid" \
    "$BIN/linkcond" run --isolated --profile "LC Sandbox Test" -- python3 "$T/inside.py"
note "$OUT"
check_rc "run --isolated as a member, under the unit: the command's status" "$RC" 0 "exit 0"
inside=$(grep -o 'nameservers=.*' <<<"$OUT" || echo "no line")
check_equal "the sandbox's resolv.conf: the stub's upstream, not the loopback stub" "nameservers=192.0.2.1" "$(grep -o 'nameservers=[^ ]*' <<<"$inside" || echo none)"
check_equal "a name resolved inside the sandbox, through the host's DNS server" "name=192.0.2.77" "$(grep -o 'name=[^ ]*' <<<"$inside" || echo none)"
connect_ms=$(sed -n 's/.*connect_ms=\([0-9.]*\).*/\1/p' <<<"$inside")
check_range "a TCP connection from the sandbox to the host: the profile's round trip" "${connect_ms:-null}" 99 150 ms "+100 ms (40 up, 60 down)"
# Both read back, or the check says so: an unreadable list is not an empty one.
if links=$(ip -o link show) && tables=$(nft list tables); then
    left=$({ grep -o 'lcsb[0-9]*' <<<"$links"; grep -o 'linkcond_sandbox_[0-9]*' <<<"$tables"; } | tr '\n' ' ' | sed 's/ $//' || true)
else
    left="unreadable (ip or nft failed)"
fi
check_equal "after the command: no sandbox device or NAT table left" "" "$left"
check_equal "the lease ended with it: no sandbox condition listed" "0" "$(lcd status --all --json | jq '[.conditions[] | select(.sandbox)] | length')"
umount /etc/resolv.conf
kill "$servers" 2>/dev/null || true
wait "$servers" 2>/dev/null || true
ip addr del 192.0.2.1/32 dev "$PEER"

log "final stop"
run_capture 90 systemctl stop "$SVC" linkcondd.socket
check_rc "systemctl stop $SVC linkcondd.socket" "$RC" 0 "succeeds"
"$T/snapshot" "$IF" >"$WORK/after-final"
same_as_before "final stop removes all shaping" "$WORK/after-final"

# --- Type=notify, the other way round: the same daemon without $NOTIFY_SOCKET answers on the
# socket, yet systemd keeps the service "activating": it waits for READY=1, not for the process.
log "readiness without READY=1"
cat >"$units/$SVC.d/zz-no-notify.conf" <<CONF
[Service]
ExecStart=
ExecStart=/usr/bin/env -u NOTIFY_SOCKET $BIN/linkcondd \$LINKCONDD_OPTIONS
TimeoutStartSec=300
Restart=no
CONF
systemctl daemon-reload
run_capture 60 systemctl start --no-block "$SVC"
status=$(api_status || true)
first=$(prop ActiveState)
sleep 3
second=$(prop ActiveState)
check_equal "without READY=1: serving, still activating 3 s later" "serving, activating, activating" \
    "$([[ -n $status ]] && echo serving || echo "no answer"), $first, $second"
systemctl stop "$SVC" linkcondd.socket || true
rm -f "$units/$SVC.d/zz-no-notify.conf"
systemctl daemon-reload

summary_table
