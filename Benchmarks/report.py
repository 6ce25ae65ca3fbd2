#!/usr/bin/env python3
"""Turns the results of Benchmarks/run.sh (and the host's `linkcond-bench native`) into the
tables of docs/performance.md and the plots beside it.

usage: report.py RESULTS_DIR PLOTS_DIR   (prints Markdown on stdout)

Exits 1 when any row with a target misses it, or when a part's results are missing: a missing
measurement is a failure, not a pass.
"""

import json
import math
import os
import sys
from bisect import bisect_right

Z99 = 2.576
# The fastest shaped rate of the grid: an unshaped direction must carry at least this much.
UNSHAPED_FLOOR_BPS = 500e6


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return ("%." + str(digits) + "f") % x


def memory(kib):
    """`13.0 MiB (13.6 MB)`: binary units as ps and top count, decimal as the target is set."""
    return "%.1f MiB (%.1f MB)" % (kib / 1024, kib * 1.024 / 1000)


def parse_ms(text):
    """'100ms', '1.5s', '250us', '0ms' -> milliseconds."""
    for suffix, factor in (("us", 1e-3), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


# ------------------------------------------------------------------ latency

def latency(results):
    rows = []
    methods = []
    for name, label in (("latency-linkcond.json", "linkcond"), ("latency-linkcond-10k.json", "linkcond (10 000 switches)"),
                        ("latency-tc.json", "tc script"), ("latency-tcconfig.json", "tcconfig")):
        data = load(os.path.join(results, name))
        if data:
            methods.append((label, data))
    base = dict(methods).get("linkcond")
    out = ["| method | switches | failed | p50 ms | p90 ms | p99 ms | max ms | p50 ratio to linkcond |", "|---|---|---|---|---|---|---|---|"]
    for label, d in methods:
        ratio = d["p50Milliseconds"] / base["p50Milliseconds"] if base and not label.startswith("linkcond") else None
        out.append("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
            label, d["count"], d.get("failures", 0), fmt(d["p50Milliseconds"]), fmt(d["p90Milliseconds"]), fmt(d["p99Milliseconds"]),
            fmt(d["maxMilliseconds"]), ("%.0f×" % ratio) if ratio else "1×" if label == "linkcond" else ""))
    return "\n".join(out), methods


def native(results):
    d = load(os.path.join(results, "native.json"))
    if not d:
        return "(no native measurement)", None
    u, n = d["userspace"], d["netlinkChange"]
    lines = ["| part | count | p50 ms | p99 ms |", "|---|---|---|---|",
             "| %s | %d | %s | %s |" % (u["method"], u["count"], fmt(u["p50Milliseconds"]), fmt(u["p99Milliseconds"])),
             "| %s | %d | %s | %s |" % (n["method"], n["count"], fmt(n["p50Milliseconds"], 4), fmt(n["p99Milliseconds"], 4)),
             "| **estimated switch** (user space + %.1f netlink changes) | | **%s** | **%s** |" % (
                 d["stepsPerSwitch"], fmt(d["estimatedSwitchP50Milliseconds"]), fmt(d["estimatedSwitchP99Milliseconds"]))]
    return "\n".join(lines), d


# ------------------------------------------------------------------ hitless

def hitless(results):
    stream = load(os.path.join(results, "hitless-stream.json"), {})
    switches = load(os.path.join(results, "hitless-switches.json"), [])
    profiles = load(os.path.join(results, "profiles.json"), [])
    tcp = load(os.path.join(results, "hitless-tcp.json"), {})
    if not stream or not switches:
        return "(no hitless run)", {}
    by_name = {p["name"]: p for p in profiles}
    # The switch log names profiles by file stem.
    by_name.update({os.path.basename(p["file"])[: -len(".yaml")]: p for p in profiles if p.get("file", "").endswith(".yaml")})

    def conditions(name, direction):
        if name == "off" or name not in by_name:
            return 0.0, 0.0
        side = by_name[name]["uplink" if direction == "up" else "downlink"]
        # netem's jitter spreads delays both ways around the configured delay.
        lowest = max(0.0, parse_ms(side["delay"]) - parse_ms(side.get("jitter") or "0ms"))
        return lowest, float(side["loss"].rstrip("%")) / 100.0

    starts = [s["startNanoseconds"] for s in switches]
    rows = ["| direction | packets sent | in a switch | unshaped (below the lower bound) | lost | loss the profiles explain (99% bound) | lost beyond |",
            "|---|---|---|---|---|---|---|"]
    summary = {}
    for direction in ("up", "down"):
        data = stream.get(direction)
        if not data:
            continue
        received = {seq: (sent, got) for seq, sent, got in data["packets"]}
        # The sender's own timestamps of lost packets are unknown; place them by sequence at the
        # stream's rate between received neighbours.
        times = sorted((seq, sent) for seq, (sent, _) in received.items())
        unshaped = 0
        in_switch = 0
        expected = variance = 0.0
        lost = 0
        first_switch = switches[0]["startNanoseconds"]
        t_of = {}
        for i in range(len(times) - 1):
            (s0, t0), (s1, t1) = times[i], times[i + 1]
            for s in range(s0, s1):
                t_of[s] = t0 + (t1 - t0) * (s - s0) // (s1 - s0)
        if times:
            t_of[times[-1][0]] = times[-1][1]
        for seq in range(data["sent"]):
            t = t_of.get(seq)
            if t is None or t < first_switch:
                continue
            i = bisect_right(starts, t) - 1
            current = switches[i]
            previous = switches[i - 1]["profile"] if i > 0 else "off"
            during = t < current["endNanoseconds"]
            names = [previous, current["profile"]] if during else [current["profile"]]
            in_switch += during
            bounds = [conditions(n, direction) for n in names]
            bound_delay = min(b[0] for b in bounds)
            p = max(b[1] for b in bounds)
            if seq in received:
                sent, got = received[seq]
                if (got - sent) / 1e6 < bound_delay - 0.5:
                    unshaped += 1
            else:
                lost += 1
            expected += p
            variance += p * (1 - p)
        upper = expected + Z99 * math.sqrt(variance)
        beyond = max(0, math.ceil(lost - upper))
        rows.append("| %s | %d | %d | **%d** | %d | %.0f (%.0f) | **%d** |" % (
            direction, data["sent"], in_switch, unshaped, lost, expected, upper, beyond))
        summary[direction] = {"sent": data["sent"], "unshaped": unshaped, "lost": lost, "expected": expected, "upper": upper, "beyond": beyond,
                              "ok": data["sent"] > 0 and in_switch > 0 and unshaped == 0 and beyond == 0}
    tcp_line = "TCP transfer across all %d switches: sent %s bytes, received %s, %s." % (
        len(switches), tcp.get("sent"), tcp.get("received"),
        "connection intact" if not tcp.get("error") and tcp.get("received") == tcp.get("sent") else "BROKEN: %s" % tcp.get("error"))
    summary["tcp"] = tcp
    summary["tcp_ok"] = bool(tcp) and not tcp.get("error") and tcp.get("received") == tcp.get("sent") and (tcp.get("sent") or 0) > 0
    return "\n".join(rows) + "\n\n" + tcp_line, summary


# ------------------------------------------------------------------ fidelity

def binomial_interval(n, p):
    mean = n * p
    sd = math.sqrt(n * p * (1 - p))
    return max(0.0, mean - Z99 * sd), min(float(n), mean + Z99 * sd)


def judge(row):
    c, m = row["configured"], row["measured"]
    if m is None:
        return "no result", False
    if row["kind"] == "bandwidth":
        if row["profile"] == "unshaped":
            return ("not limited: %.0f Mbit/s, at least %.0f" % (m / 1e6, UNSHAPED_FLOOR_BPS / 1e6)), m >= UNSHAPED_FLOOR_BPS
        err = (m - c) / c
        return "%+.1f%%" % (100 * err), abs(err) <= 0.05
    if row["kind"] in ("delay", "dns"):
        tol = 1.0 + 0.02 * c
        return "%+.2f ms (±%.2f)" % (m - c, tol), abs(m - c) <= tol
    if row["kind"] == "loss":
        n = row.get("count", 2000)
        lo, hi = binomial_interval(n, c / 100.0)
        lost = round(m / 100.0 * n)
        return "%d of %d lost, 99%% interval [%.1f, %.1f]" % (lost, n, lo, hi), lo <= lost <= hi
    return "", True


def fidelity(results):
    rows = []
    try:
        with open(os.path.join(results, "fidelity.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError:
        pass
    tables = {}
    for row in rows:
        verdict, ok = judge(row)
        row["verdict"], row["ok"] = verdict, ok
        section = "profiles" if not row["profile"].startswith("grid") and row["profile"] != "unshaped" else row["kind"]
        tables.setdefault(section, []).append(row)
    out = []
    units = {"bandwidth": lambda v: "%s kbit/s" % fmt(v / 1e3, 1) if v is not None else "–"}
    for section in ("bandwidth", "delay", "loss", "profiles"):
        if section not in tables:
            continue
        out.append("\n#### %s\n" % section.capitalize())
        out.append("| profile | kind | direction | family | configured | measured | error | within target |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in tables[section]:
            show = units.get(r["kind"], lambda v: ("%s %s" % (fmt(v, 2), r["unit"])) if v is not None else "–")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["profile"], r["kind"], r["direction"], r["family"], show(r["configured"]) if r["profile"] != "unshaped" else "unshaped",
                show(r["measured"]), r["verdict"], "yes" if r["ok"] else "**no**"))
    passed = sum(r["ok"] for r in rows)
    return "\n".join(out), rows, passed


# ------------------------------------------------------------------ plots

def plots(rows, methods, plots_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    os.makedirs(plots_dir, exist_ok=True)
    made = []

    def grid(kind, scale):
        pts = [r for r in rows if r["kind"] == kind and r["profile"].startswith("grid") and r["measured"] is not None]
        if not pts:
            return
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        for (direction, family), marker in ((("up", "ipv4"), "o"), (("down", "ipv4"), "s"), (("up", "ipv6"), "^"), (("down", "ipv6"), "v"),
                                            (("up+down", "ipv4"), "o"), (("up+down", "ipv6"), "^")):
            sel = [r for r in pts if r["direction"] == direction and r["family"] == family]
            if kind == "delay":
                sel = [dict(r, direction=("up" if "up-delay" in r["profile"] else "down")) for r in sel]
            if sel:
                ax.plot([r["configured"] * scale for r in sel], [r["measured"] * scale for r in sel], marker,
                        label="%s %s" % (direction, family), alpha=0.75)
        lo = min(r["configured"] * scale for r in pts)
        hi = max(r["configured"] * scale for r in pts)
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8, label="promised")
        return fig, ax

    for kind, scale, unit, log in (("bandwidth", 1e-6, "Mbit/s", True), ("delay", 1.0, "ms (extra round trip)", True), ("loss", 1.0, "%", False)):
        made_plot = grid(kind, scale)
        if not made_plot:
            continue
        fig, ax = made_plot
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("configured " + unit)
        ax.set_ylabel("measured " + unit)
        ax.set_title("linkcond %s: configured vs measured (real packets, netem)" % kind)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = os.path.join(plots_dir, "fidelity-%s.png" % kind)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)

    if methods:
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        for label, d in methods:
            xs = sorted(d["samplesMilliseconds"])
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.plot(xs, ys, label="%s (p50 %s ms)" % (label, fmt(d["p50Milliseconds"], 2)))
        ax.set_xscale("log")
        ax.set_xlabel("switch latency, ms (request to reply, kernel state applied)")
        ax.set_ylabel("fraction of switches")
        ax.set_title("Switching profiles: linkcond vs a tc script vs tcconfig")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = os.path.join(plots_dir, "switch-latency.png")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


def commands(results):
    """`linkcond status` as a whole command next to curl doing the same request."""
    data = load(os.path.join(results, "commands.json"))
    if not data:
        return "(no measurement of whole commands)", None
    out = ["| command | runs | median ms | p90 ms | peak RSS (median of runs) | peak RSS (highest) |", "|---|---|---|---|---|---|"]
    for d in data:
        out.append("| `%s` | %d | %s | %s | %s | %s |" % (
            d["command"].replace(os.getcwd() + "/", ""), d["runs"], fmt(d["medianMilliseconds"], 1), fmt(d["p90Milliseconds"], 1),
            memory(d["medianPeakRSSKiB"]), memory(d["peakRSSKiB"])))
    return "\n".join(out), data


def scale_table(results, name, held, added, off):
    """Many conditions at once (NAME.json of a scale part): switching one of them at each size."""
    d = load(os.path.join(results, name + ".json"))
    if not d:
        return "(not measured)", None
    out = ["| %s | netlink requests per switch | switch p50 ms | p90 ms | p99 ms | %s, mean ms |" % (held, added),
           "|---|---|---|---|---|---|"]
    for row in d["scale"]:
        add = row.get("addMillisecondsPerCondition")
        out.append("| %d | %s | %s | %s | %s | %s |" % (
            row["active"], fmt(row["stepsPerSwitch"]), fmt(row["p50Milliseconds"]), fmt(row["p90Milliseconds"]),
            fmt(row["p99Milliseconds"]), fmt(add) if add is not None else ""))
    out.append("\n`off --all` with %d %s: %s ms." % (d["scale"][-1]["active"], off, fmt(d["offAllMilliseconds"])))
    return "\n".join(out), d


def conditions(results):
    """Many conditions at once: one per interface, switching the default one."""
    return scale_table(results, "conditions", "conditions held", "adding one condition (build)", "conditions")


def matches(results):
    """Many conditions on peers of one interface, switching one of them."""
    return scale_table(results, "matches", "peers' conditions held", "adding one peer", "peers' conditions")


def peer_scale(results):
    """User space alone (model kernel, this machine): one peer's switch beside others."""
    d = load(os.path.join(results, "peer-scale.json"))
    if not d:
        return "(not measured)"
    out = ["| peers' conditions held | switch p50 ms | p90 ms | p99 ms |", "|---|---|---|---|"]
    out += ["| %d | %s | %s | %s |" % (row["peers"], fmt(row["switchLatency"]["p50Milliseconds"]), fmt(row["switchLatency"]["p90Milliseconds"]),
                                      fmt(row["switchLatency"]["p99Milliseconds"])) for row in d]
    return "\n".join(out)


def sandboxes(results):
    """Many run --isolated sandboxes at once, switching the default condition beside them."""
    d = load(os.path.join(results, "sandboxes.json"))
    if not d:
        return "(not measured)", None
    out = ["| sandboxes held | their links on the host | netlink requests per switch | switch p50 ms | p90 ms | p99 ms | "
           "creating one (request to active), mean ms | max ms |",
           "|---|---|---|---|---|---|---|---|"]
    for row in d["scale"]:
        out.append("| %d | %d | %s | %s | %s | %s | %s | %s |" % (
            row["listed"], row["hostLinks"], fmt(row["stepsPerSwitch"]), fmt(row["p50Milliseconds"]), fmt(row["p90Milliseconds"]),
            fmt(row["p99Milliseconds"]), fmt(row["createMeanMilliseconds"]), fmt(row["createMaxMilliseconds"])))
    out.append("\nEnding all %d at once (their connections closed): %s ms until none is listed and no link is left "
               "(%d listed, %d links left)." % (d["scale"][-1]["listed"], fmt(d["endAllMilliseconds"]), d["leftListed"], d["leftLinks"]))
    return "\n".join(out), d


def scale_checks(label, data, count_field):
    """Requests per switch constant, and the p50 at the largest size within 2× of the smallest."""
    scale = (data or {}).get("scale") or []
    if len(scale) < 2:
        return [(label, "missing", "measured", False)]
    steps = {row["stepsPerSwitch"] for row in scale}
    growth = scale[-1]["p50Milliseconds"] / scale[0]["p50Milliseconds"]
    return [("netlink requests per switch, %d to %d %s" % (scale[0][count_field], scale[-1][count_field], label),
             ", ".join(fmt(row["stepsPerSwitch"]) for row in scale), "constant", len(steps) == 1),
            ("switch p50 at %d %s / at %d" % (scale[-1][count_field], label, scale[0][count_field]), "%.2f×" % growth, "<= 2×", growth <= 2)]


def targets(methods, native_data, hitless_summary, footprint, rows, passed, command_data, condition_data, match_data, sandbox_data):
    """Every figure with a target, and whether it met it; a missing figure misses."""
    by = dict(methods)
    checks = []

    def ratio(label):
        base, other = by.get("linkcond"), by.get(label)
        return other["p50Milliseconds"] / base["p50Milliseconds"] if base and other else None

    for label, floor in (("tc script", 20), ("tcconfig", 200)):
        r = ratio(label)
        checks.append(("switch p50, %s / linkcond" % label, "%s" % ("%.0f×" % r if r else "missing"), ">= %d×" % floor, r is not None and r >= floor))
    if native_data:
        checks.append(("native switch p50 (estimate)", "%.2f ms" % native_data["estimatedSwitchP50Milliseconds"], "<= 1 ms", native_data["estimatedSwitchP50Milliseconds"] <= 1))
        checks.append(("native switch p99 (estimate)", "%.2f ms" % native_data["estimatedSwitchP99Milliseconds"], "<= 5 ms", native_data["estimatedSwitchP99Milliseconds"] <= 5))
    else:
        checks.append(("native switch", "missing", "measured", False))
    for direction in ("up", "down"):
        d = hitless_summary.get(direction) if hitless_summary else None
        checks.append(("hitless %s: unshaped and lost beyond the profiles" % direction,
                       "%d, %d" % (d["unshaped"], d["beyond"]) if d else "missing", "0, 0", bool(d and d["ok"])))
    checks.append(("hitless TCP transfer", "intact" if hitless_summary and hitless_summary.get("tcp_ok") else "broken or missing", "intact",
                   bool(hitless_summary and hitless_summary.get("tcp_ok"))))
    if footprint:
        rss = footprint["rss_after_10000_switches_kib"] * 1.024 / 1000
        checks.append(("RSS after 10 000 switches", "%.1f MB" % rss, "<= 15 MB", rss <= 15))
        checks.append(("idle 60 s: CPU", "%d ticks" % footprint["idle_cpu_ticks"], "0", footprint["idle_cpu_ticks"] == 0))
    else:
        checks.append(("footprint", "missing", "measured", False))
    checks += scale_checks("conditions", condition_data, "active")
    checks += scale_checks("peers' conditions", match_data, "active")
    checks += scale_checks("sandboxes", sandbox_data, "listed")
    if sandbox_data:
        left = sandbox_data["leftListed"] + sandbox_data["leftLinks"]
        checks.append(("sandboxes left after their connections closed", "%d" % left, "0", left == 0))
    checks.append(("fidelity rows within target", "%d of %d" % (passed, len(rows)), "all, and some", len(rows) > 0 and passed == len(rows)))
    status = next((d for d in command_data or [] if d["command"].endswith(" status")), None)
    curl = next((d for d in command_data or [] if d["command"].startswith("curl")), None)
    if status and curl:
        ratio = status["medianMilliseconds"] / curl["medianMilliseconds"]
        checks.append(("`linkcond status` / curl, median wall time", "%.2f×" % ratio, "<= 1.5×", ratio <= 1.5))
        peak = status["medianPeakRSSKiB"] * 1.024 / 1000
        checks.append(("`linkcond status` peak RSS (median of runs)", "%.1f MB" % peak, "<= 15 MB", peak <= 15))
    else:
        checks.append(("whole commands", "missing", "measured", False))
    lines = ["| target | measured | wanted | met |", "|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s |" % (name, measured, wanted, "yes" if ok else "**no**") for name, measured, wanted, ok in checks]
    return "\n".join(lines), [name for name, _, _, ok in checks if not ok]


def main():
    results, plots_dir = sys.argv[1], sys.argv[2]
    machine = load(os.path.join(results, "machine.json"), {})
    footprint = load(os.path.join(results, "footprint.json"), {})
    lat_table, methods = latency(results)
    native_table, native_data = native(results)
    hit_table, hit_summary = hitless(results)
    command_table, command_data = commands(results)
    condition_table, condition_data = conditions(results)
    match_table, match_data = matches(results)
    sandbox_table, sandbox_data = sandboxes(results)
    fid_tables, rows, passed = fidelity(results)
    made = plots(rows, methods, plots_dir)

    print("### Machine\n")
    print("```\n%s\n```\n" % json.dumps(machine, indent=2))
    print("### Switch latency (in the VM)\n")
    print(lat_table + "\n")
    print("### Switch latency on this machine's own kernel (estimate from measured parts)\n")
    print(native_table + "\n")
    print("### Hitless switching\n")
    print(hit_table + "\n")
    print("### The client as a command (this machine, whole processes, interleaved)\n")
    print(command_table + "\n")
    print("### Many conditions at once (one per interface, switching the default one)\n")
    print(condition_table + "\n")
    print("### Many peers of one interface (switching one of them)\n")
    print(match_table + "\n")
    print("User space alone, on this machine (model kernel):\n")
    print(peer_scale(results) + "\n")
    print("### Many sandboxes at once (switching the default condition beside them)\n")
    print(sandbox_table + "\n")
    print("### Footprint\n")
    if footprint:
        ticks = footprint["clock_ticks_per_second"]
        print("| measure | value |\n|---|---|")
        print("| start to socket ready (5 starts) | %s ms |" % ", ".join(fmt(x, 0) for x in footprint["startup_ms"]))
        print("| RSS after start | %s |" % memory(footprint["rss_start_kib"]))
        if "rss_start_anon_kib" in footprint:
            print("| of which private (anonymous) / file-backed (shared libraries, binary) | %.1f MiB / %.1f MiB |" % (
                footprint["rss_start_anon_kib"] / 1024, footprint["rss_start_file_kib"] / 1024))
        print("| RSS after 10 000 switches | %s |" % memory(footprint["rss_after_10000_switches_kib"]))
        if "rss_after_10000_switches_anon_kib" in footprint:
            print("| of which private (anonymous) | %.1f MiB |" % (footprint["rss_after_10000_switches_anon_kib"] / 1024))
        print("| threads | %d |" % footprint["threads"])
        print("| idle 60 s, no lease: context switches (all threads) | %d |" % footprint["idle_context_switches"])
        print("| idle 60 s, no lease: CPU time | %.2f s |" % (footprint["idle_cpu_ticks"] / ticks))
        print()
    print("### Fidelity (%d of %d measurements within target)\n" % (passed, len(rows)))
    print(fid_tables + "\n")
    for path in made:
        print("![%s](%s)" % (os.path.basename(path), os.path.relpath(path, "docs")))
    target_table, missed = targets(methods, native_data, hit_summary, footprint, rows, passed, command_data, condition_data,
                                   match_data, sandbox_data)
    print("\n### Targets\n")
    print(target_table)
    if missed:
        print("report: %d target(s) missed: %s" % (len(missed), "; ".join(missed)), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
