#!/usr/bin/env bash
# Runs every example of README.md and docs/*.md as written (Tests/Kernel/examples.py), in a
# machine set up the way the README's quick start expects: systemd as init, linkcond installed
# by the quick start itself, the default route on an interface named eth0, and example.com a
# web server on the far side of it. Runs in the systemd container of the test VM:
#   make && scripts/vm-run --systemd -- Tests/Kernel/examples.sh
# The quick start's `make` finds the release build the host made (`make` before the VM).
set -euo pipefail

KDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$KDIR/../.." && pwd)
WORK=${LC_WORK:-/tmp/lc-examples}
[[ $(cat /proc/1/comm) == systemd ]] || { echo "examples.sh: PID 1 is not systemd; see the usage above" >&2; exit 2; }
rm -rf "$WORK" && mkdir -p "$WORK"

# The world beyond eth0: a namespace with example.com's web server, reached through the default
# route. Nothing here leaves the VM.
WWW=lc-www
cleanup() {
    set +e
    systemctl stop linkcondd.socket linkcondd.service 2>/dev/null
    ip netns pids "$WWW" 2>/dev/null | xargs -r kill
    ip netns del "$WWW" 2>/dev/null
    ip link del eth0 2>/dev/null
    ip link del eth1 2>/dev/null
}
trap cleanup EXIT
modprobe -a veth sch_netem sch_htb sch_ingress ifb cls_u32 cls_flower act_mirred
ip link del eth0 2>/dev/null || true
ip link del eth1 2>/dev/null || true
ip netns del "$WWW" 2>/dev/null || true
ip netns add "$WWW"
ip link add eth0 type veth peer name www0 netns "$WWW"
ip addr add 10.88.0.1/24 dev eth0
ip addr add fd88::1/64 dev eth0 nodad
ip -n "$WWW" addr add 10.88.0.2/24 dev www0
ip -n "$WWW" addr add fd88::2/64 dev www0 nodad
ip link set eth0 up
ip -n "$WWW" link set www0 up
ip -n "$WWW" link set lo up
ethtool -K eth0 tso off gso off gro off >/dev/null 2>&1 || true
# A second link to the same world, for the pages' conditions on another interface.
ip link add eth1 type veth peer name www1 netns "$WWW"
ip addr add 10.89.0.1/24 dev eth1
ip -n "$WWW" addr add 10.89.0.2/24 dev www1
ip link set eth1 up
ip -n "$WWW" link set www1 up
ip route replace default via 10.88.0.2 dev eth0
ip -6 route replace default via fd88::2 dev eth0
printf '10.88.0.2 example.com\nfd88::2 example.com\n' >>/etc/hosts
mkdir -p "$WORK/www" && echo '<html><body>example</body></html>' >"$WORK/www/index.html"
ip netns exec "$WWW" python3 -m http.server 80 --bind :: --directory "$WORK/www" >"$WORK/www.log" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null --max-time 2 http://example.com/ && break; sleep 0.2; done
# The README's commands say sudo; this machine's root needs none.
command -v sudo >/dev/null || { printf '#!/bin/sh\nexec "$@"\n' >/usr/local/bin/sudo && chmod 755 /usr/local/bin/sudo; }

cd "$REPO"
# First the quick start alone, on this machine as it is: nothing of linkcond installed, no group,
# no units. Then every page in order, the quick start again included (it is idempotent).
[[ ! -e /usr/local/bin/linkcond && ! -e /usr/local/lib/systemd/system/linkcondd.service ]] ||
    { echo "examples.sh: linkcond is already installed here; this must start from a bare machine" >&2; exit 2; }
python3 "$KDIR/examples.py" --section "Quick start" --json "$WORK/quickstart.json" README.md
# docs/ci.md's pytest example runs with the Python of scripts/setup's environment, which has pytest.
# The venv's pytest, without the plugins installed beside it for the suite's own use (schemathesis,
# hypothesis): a user's pytest has none, and importing them took a minute of the example's 120 s
# under emulation (68 s alone; past 120 s beside the package's VM). Natively 2.4 s against 0.3 s.
PATH="$REPO/.build/venv/bin:$PATH" PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \
    python3 "$KDIR/examples.py" --json "$WORK/examples.json" README.md docs/*.md

# Examples/swift-testing (docs/swift.md), built on the host by scripts/test: the compiler under
# emulation would take many minutes. Its XCTest and its Swift Testing tests run as `swift test`
# runs them, against the daemon the quick start installed, with example.com across eth0; the
# conditions they held are gone after them.
example=Examples/swift-testing/.build/debug/PageLoadExamplePackageTests.xctest
[[ -x $example ]] || { echo "examples.sh: $example is missing; build it on the host: swift build --build-tests --package-path Examples/swift-testing" >&2; exit 1; }
conditions() { curl -s --unix-socket /run/linkcond/control.sock http://linkcond/v1/conditions | jq -c '[.conditions[] | {id, active, profile: .profile.name, lease}]'; }
before=$(conditions)
# Each run must have run its tests: a test binary that finds none exits 0 too.
echo "--- Examples/swift-testing: XCTest"
"$example" 2>&1 | tee "$WORK/xctest.out"
grep -q "Executed 1 test, with 0 failures" "$WORK/xctest.out" ||
    { echo "examples.sh: the XCTest run did not run its one test" >&2; exit 1; }
echo "--- Examples/swift-testing: Swift Testing"
"$example" --testing-library swift-testing 2>&1 | tee "$WORK/swift-testing.out"
grep -q "Test run with 2 tests in 1 suite passed" "$WORK/swift-testing.out" ||
    { echo "examples.sh: the Swift Testing run did not pass its two tests" >&2; exit 1; }
after=$(conditions)
[[ $after == "$before" ]] || { echo "examples.sh: the Swift example's tests left the conditions changed: $before -> $after" >&2; exit 1; }
echo "Examples/swift-testing: its XCTest and Swift Testing tests passed; conditions as before: $after"
