#!/usr/bin/env bash
# The Debian package under a real systemd, the way a user meets it: `apt install ./linkcond_*.deb`
# creates the group and starts the socket, `linkcond activate` and `off` reach the daemon through
# socket activation, an upgrade stops the daemon (nothing stays shaped) and restarts the socket
# and leaves a disabled one so, removing stops it all and leaves nothing shaped, purging removes
# its state and keeps your own profiles. Runs as root where PID 1 is
# systemd, on a machine without linkcond installed; in the test VM:
#   make deb && scripts/vm-run --systemd -- Tests/Kernel/package.sh
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ $(cat /proc/1/comm) == systemd ]] || { echo "package.sh: PID 1 is not systemd; use scripts/vm-run --systemd" >&2; exit 2; }
# scripts/deb leaves exactly one package in the repository's root.
debs=("$REPO"/linkcond_*_"$(dpkg --print-architecture)".deb)
[[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || { echo "package.sh: not exactly one linkcond_*.deb in $REPO; run 'make deb'" >&2; exit 2; }
DEB=${debs[0]}
version=$(dpkg-deb -f "$DEB" Version)
if dpkg-query -W -f='${Status}' linkcond 2>/dev/null | grep -q installed || [[ -e /usr/bin/linkcond ]] ||
    [[ -e /etc/linkcond ]] || getent group linkcond >/dev/null; then
    echo "package.sh: linkcond or its group is already here; this must start from a machine without them" >&2
    exit 2
fi

rm -rf "$WORK"
mkdir -p "$WORK"
: >"$RESULTS"
IF=lcpk0
PEER=lcpk1
SVC=linkcondd.service

cleanup() {
    set +e
    dpkg --purge linkcond >/dev/null 2>&1
    rm -rf /etc/linkcond
    ip link del "$IF" 2>/dev/null
}
trap cleanup EXIT

prop() { systemctl show -p "$1" --value "${2:-$SVC}"; }
# The installed client, with a time limit (it starts slowly under emulation).
lcd() { timeout 90 /usr/bin/linkcond "$@"; }
# What linkcond may have changed on the interface: its qdiscs, and any IFB device.
shaping() { { tc qdisc show dev "$IF"; ip -o link show type ifb; } 2>&1 | awk '{ print $1, $2, $3 }' | tr '\n' ';'; }
netem_count() { tc qdisc show dev "$IF" 2>/dev/null | grep -c "netem" || true; }
profile_on() { lcd status --interface "$IF" --json 2>/dev/null | jq -r 'if .active then .profile.name else "off" end' 2>/dev/null || echo "no answer"; }
exists() { [[ -e $1 ]] && echo present || echo absent; }

# This container stands in for a stock Debian machine. The host tree it boots from is a Docker
# image, whose /usr/sbin/policy-rc.d forbids maintainer scripts to start services and whose
# docker-clean keeps apt from caching its package lists (each apt command then parses them all
# again, minutes under emulation): a stock machine has neither. And man-db's index is left
# alone: rebuilding it takes minutes under emulation and has nothing to do with linkcond. The
# changes vanish with the container.
rm -f /usr/sbin/policy-rc.d /etc/apt/apt.conf.d/docker-clean
rm -f /var/lib/man-db/auto-update
# apt is given no package lists: the package's dependencies are installed (dpkg's own database
# says so), and parsing the image's 19 MB of lists takes minutes under emulation.
mkdir -p "$WORK/lists/partial"
APT_GET=(env DEBIAN_FRONTEND=noninteractive apt-get -o Dir::State::Lists="$WORK/lists")

modprobe -a sch_netem sch_htb ifb act_mirred cls_u32 cls_flower veth 2>/dev/null || true
# A stock machine's daemon shapes the interface of the default route: here the veth's.
ip link add "$IF" type veth peer name "$PEER"
ip addr add 10.89.0.1/24 dev "$IF"
ip link set "$IF" up
ip link set "$PEER" up
ip route replace default via 10.89.0.2 dev "$IF"
unshaped=$(shaping)
note "package $(basename "$DEB"), $(du -k "$DEB" | cut -f1) KB; interface $IF unshaped: $unshaped"

log "install"
run_capture 600 "${APT_GET[@]}" install -y "$DEB"
check_rc "apt-get install ./$(basename "$DEB")" "$RC" 0 "installs from the file alone"
[[ $RC == 0 ]] || { printf '%s\n' "$OUT" | tail -n 20; summary_table; exit 1; }
check_equal "the package's state" "install ok installed $version" "$(dpkg-query -W -f='${Status} ${Version}' linkcond)"
check_equal "the linkcond group exists" "linkcond" "$(getent group linkcond | cut -d: -f1)"
check_equal "socket enabled and listening, service waiting for a request" "enabled listening inactive" \
    "$(systemctl is-enabled linkcondd.socket) $(prop SubState linkcondd.socket) $(prop ActiveState)"
check_equal "directories of tmpfiles.d: /etc/linkcond/profiles and scenarios, /var/lib/linkcond" "present present present" \
    "$(exists /etc/linkcond/profiles) $(exists /etc/linkcond/scenarios) $(exists /var/lib/linkcond)"
check_equal "man pages, completions and built-in profiles in place" "/usr/share/man/man1/linkcond.1.gz yes yes" \
    "$(man -w linkcond 2>&1) $([[ -s /usr/share/bash-completion/completions/linkcond ]] && echo yes || echo no) $([[ -s /usr/share/linkcond/profiles/slow-net.yaml ]] && echo yes || echo no)"

log "activate and off through socket activation"
run_capture 120 /usr/bin/linkcond activate "Slow Net"
check_rc "linkcond activate \"Slow Net\" (the default route's $IF)" "$RC" 0 "succeeds, starting the daemon"
if [[ $RC != 0 ]]; then
    printf '%s\n' "$OUT" | tail -n 5
    journalctl -u "$SVC" --no-pager 2>&1 | tail -n 15
fi
check_equal "the service started by the request" "active" "$(prop ActiveState)"
check_equal "$IF under Slow Net, a netem each way" "Slow Net 2" "$(profile_on) $(netem_count)"
run_capture 90 /usr/bin/linkcond off
check_rc "linkcond off" "$RC" 0 "succeeds"
check_equal "after off: $IF as before" "$unshaped" "$(shaping)"
run_capture 90 /usr/bin/linkcond scenarios --json
check_equal "the built-in scenarios, read beside the built-in profiles" "4 scenarios, 0 skipped" \
    "$(jq -r '"\(.scenarios | length) scenarios, \(.problems | length) skipped"' <<<"$OUT" 2>/dev/null || echo "no answer: $OUT")"
# A user's profile naming a trace the package installed, by its path.
printf 'name: LC Commute\ndownlink: { trace: /usr/share/linkcond/traces/steps.trace, delay: 40ms }\n' >/etc/linkcond/profiles/lc-commute.yaml
run_capture 90 /usr/bin/linkcond reload
run_capture 90 /usr/bin/linkcond activate "LC Commute"
check_rc "linkcond activate a profile of /etc/linkcond naming /usr/share/linkcond/traces/steps.trace" "$RC" 0 "succeeds"
run_capture 90 /usr/bin/linkcond status
check_contains "its status: where the trace is" "$OUT" "trace: "
run_capture 90 /usr/bin/linkcond off
rm -f /etc/linkcond/profiles/lc-commute.yaml
check_equal "after off: $IF as before" "$unshaped" "$(shaping)"

log "upgrade: the daemon stops, the socket restarts, the next request starts the new daemon"
# The same package with a higher version stands in for the next build.
dpkg-deb -R "$DEB" "$WORK/next"
sed -i "s/^Version: .*/Version: $version+next/" "$WORK/next/DEBIAN/control"
NEXT=$WORK/linkcond_next.deb
dpkg-deb -Znone -b "$WORK/next" "$NEXT" >/dev/null
run_capture 90 /usr/bin/linkcond activate "Nasty Net"
check_rc "linkcond activate \"Nasty Net\"" "$RC" 0 "succeeds"
socket_since=$(prop ActiveEnterTimestampMonotonic linkcondd.socket)
run_capture 600 "${APT_GET[@]}" install -y "$NEXT"
check_rc "apt-get install ./the next version" "$RC" 0 "upgrades"
check_equal "the version installed" "$version+next" "$(dpkg-query -W -f='${Version}' linkcond)"
check_equal "the old daemon stopped, the socket restarted and listening" "inactive listening restarted" \
    "$(prop ActiveState) $(prop SubState linkcondd.socket) $([[ $(prop ActiveEnterTimestampMonotonic linkcondd.socket) != "$socket_since" ]] && echo restarted || echo "not restarted")"
# A clean stop removes the shaping, as any stop does (docs/operations.md, Upgrade).
check_equal "after the upgrade: $IF as before" "$unshaped" "$(shaping)"
run_capture 90 /usr/bin/linkcond activate "Nasty Net"
check_equal "the new daemon, started by the request, takes a profile" "0 active Nasty Net 2" "$RC $(prop ActiveState) $(profile_on) $(netem_count)"

log "an upgrade leaves a disabled socket disabled"
systemctl disable --now linkcondd.socket linkcondd.service >/dev/null 2>&1
run_capture 600 "${APT_GET[@]}" install -y --reinstall "$NEXT"
check_rc "apt-get install --reinstall" "$RC" 0 "succeeds"
check_equal "the socket disabled and stopped as it was" "disabled inactive" \
    "$(systemctl is-enabled linkcondd.socket 2>/dev/null) $(prop ActiveState linkcondd.socket)"
systemctl enable --now linkcondd.socket >/dev/null 2>&1
run_capture 90 /usr/bin/linkcond activate "Slow Net"
check_equal "enabled again by hand: the daemon takes a profile" "0 Slow Net" "$RC $(profile_on)"

log "remove: the daemon stops, nothing stays shaped"
run_capture 600 "${APT_GET[@]}" remove -y linkcond
check_rc "apt-get remove linkcond" "$RC" 0 "succeeds"
check_equal "service and socket stopped" "inactive inactive" "$(prop ActiveState) $(prop ActiveState linkcondd.socket)"
check_equal "after remove: $IF as before" "$unshaped" "$(shaping)"
check_equal "binaries gone; settings, profiles directory and history kept until purge" "absent present present present" \
    "$(exists /usr/bin/linkcondd) $(exists /etc/default/linkcondd) $(exists /etc/linkcond/profiles) $(exists /var/lib/linkcond)"

log "purge: the state goes too, profiles of your own stay"
printf 'name: Mine\ndownlink: { delay: 10ms }\n' >/etc/linkcond/profiles/mine.yaml
run_capture 600 "${APT_GET[@]}" purge -y linkcond
check_rc "apt-get purge linkcond" "$RC" 0 "succeeds"
check_equal "settings, history and runtime state gone; your profile kept" "absent absent absent present" \
    "$(exists /etc/default/linkcondd) $(exists /var/lib/linkcond) $(exists /run/linkcond) $(exists /etc/linkcond/profiles/mine.yaml)"
check_equal "the package forgotten" "not installed" \
    "$(dpkg-query -W -f='${Status}' linkcond 2>/dev/null | grep -q 'install ok' && echo installed || echo 'not installed')"
check_equal "after purge: $IF as before" "$unshaped" "$(shaping)"

summary_table
