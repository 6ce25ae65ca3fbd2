#!/usr/bin/env bash
# linkcond under systemd: the units as `make install` writes them, started, stopped and killed
# for real. Runs inside a VM booted with systemd as init:
#   swift build && scripts/vm-run --systemd -- Tests/Kernel/systemd.sh
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN=${LINKCOND_BIN:-$REPO/.build/debug}
[[ $(cat /proc/1/comm) == systemd ]] || { echo "systemd.sh: PID 1 is not systemd; use scripts/vm-run --systemd" >&2; exit 2; }
[[ -x $BIN/linkcondd ]] || { echo "systemd.sh: no linkcondd in $BIN; run 'swift build'" >&2; exit 2; }

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
IF=lcsd0
units=/run/systemd/system
cleanup() {
    set +e
    systemctl stop linkcondd.service linkcondd.socket 2>/dev/null
    rm -rf "$units/linkcondd.service" "$units/linkcondd.socket" "$units/linkcondd.service.d"
    systemctl daemon-reload
    ip link del "$IF" 2>/dev/null
}
trap cleanup EXIT

modprobe -a sch_netem sch_htb ifb act_mirred cls_u32 veth
ip link add "$IF" type veth peer name lcsd1
ip link set "$IF" up
ip link set lcsd1 up
snapshot_if() { { tc qdisc show dev "$IF"; ip link show type ifb; } >"$1" 2>&1; }
snapshot_if "$WORK/before"

# The units as `make install` writes them, pointing at this build.
mkdir -p "$units/linkcondd.service.d"
sed "s|@BINDIR@|$BIN|g" "$REPO/systemd/linkcondd.service.in" >"$units/linkcondd.service"
cp "$REPO/systemd/linkcondd.socket" "$units/"
cat >"$units/linkcondd.service.d/test.conf" <<CONF
[Service]
Environment="LINKCONDD_OPTIONS=--interface $IF --profiles $REPO/profiles"
CONF
systemd-sysusers "$REPO/systemd/linkcond.sysusers"
systemctl daemon-reload

run_capture 60 systemctl start linkcondd.socket linkcondd.service
check_rc "systemctl start" "$RC" 0 "succeeds"
state=$(systemctl show -p ActiveState --value linkcondd.service)
check_equal "Type=notify: active after READY=1" "active" "$state"
run_capture 30 "$BIN/linkcond" activate "Slow Net"
check_rc "activate through the socket unit" "$RC" 0 "succeeds"
root=$(tc qdisc show dev "$IF" | awk '/ root / && !found++ { print $2, $3 }')
check_equal "shaped under systemd" "htb 7a00:" "${root:-none}"
run_capture 30 setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/linkcond" status
check_rc "status as an unprivileged user" "$RC" 0 "succeeds"

run_capture 60 systemctl stop linkcondd.service
check_rc "systemctl stop" "$RC" 0 "succeeds"
check_bool "stop leaves nothing behind" "interface as before" "$(snapshot_if "$WORK/after"; diff -q "$WORK/before" "$WORK/after" >/dev/null && echo identical || echo differs)" \
    "$(diff -q "$WORK/before" "$WORK/after" >/dev/null; echo $?)"

# A daemon that dies: ExecStopPost removes what it left, Restart=on-failure brings it back.
run_capture 60 systemctl start linkcondd.service
"$BIN/linkcond" activate "Nasty Net" >/dev/null
pid=$(systemctl show -p MainPID --value linkcondd.service)
kill -KILL "$pid"
restarted=no
for i in $(seq 100); do
    new=$(systemctl show -p MainPID --value linkcondd.service)
    if [[ $new != 0 && $new != "$pid" ]] && [[ $(systemctl show -p ActiveState --value linkcondd.service) == active ]]; then
        restarted=yes
        break
    fi
    sleep 0.2
done
check_equal "SIGKILL: Restart=on-failure restarts the daemon" "yes" "$restarted"
profile=$("$BIN/linkcond" status --json | jq -r '.profile.name // "off"')
check_equal "SIGKILL: the restarted daemon restores the condition" "Nasty Net" "$profile"
journal=$(journalctl -u linkcondd.service -o cat --no-pager 2>/dev/null | grep -c "cleanup: removed linkcond's tree" || true)
check_bool "SIGKILL: ExecStopPost removed the dead daemon's tree" ">= 1 cleanup" "$journal cleanup(s)" "$([[ $journal -ge 1 ]]; echo $?)"
priority=$(journalctl -u linkcondd.service -p notice -o cat --no-pager 2>/dev/null | grep -c "condition:" || true)
check_bool "journald gets priorities (notice lines found with -p notice)" ">= 1" "$priority" "$([[ $priority -ge 1 ]]; echo $?)"
run_capture 60 systemctl stop linkcondd.service linkcondd.socket
check_bool "final stop leaves nothing behind" "interface as before" "$(snapshot_if "$WORK/after"; diff -q "$WORK/before" "$WORK/after" >/dev/null && echo identical || echo differs)" \
    "$(diff -q "$WORK/before" "$WORK/after" >/dev/null; echo $?)"

summary_table
