"""A gateway with devices behind it (`--device`): a router namespace between the server (its WAN
link) and a LAN whose bridge two device namespaces hang off."""

from __future__ import annotations

from dataclasses import dataclass

from harness.probes import ProbeServer, Probes, udp_target
from harness.system import HarnessError, run, wait_until
from harness.tc import Device
from harness.topology import Link, Namespace, Topology


@dataclass
class GatewayDevice:
    namespace: Namespace
    v4: str
    v6: str
    probes: Probes


@dataclass
class Gateway:
    """A router (namespace lc-gwN) between the server (its WAN link) and a LAN (gw-lanN) where two
    devices hang off a bridge: both reach the server through the same LAN interface, which the
    daemon shapes from inside the router's namespace."""

    namespace: Namespace
    lan: str
    server4: str
    server6: str
    devices: list[GatewayDevice]
    #: The router's own addresses on the LAN (the devices' default route).
    lan4: str = ""
    lan6: str = ""

    @property
    def device(self) -> Device:
        return Device(self.lan, ("lc-" + self.lan)[:15], self.namespace)

    def condition(self, address: str) -> str:
        return f"netns/{self.namespace.name}/{self.lan}@device={address}"


def build_gateway(topo: Topology, server: ProbeServer) -> Gateway:
    """The router, its LAN and two devices, each reaching SERVER's probe server through it."""
    run(["modprobe", "bridge"]).ok()
    n = topo.number
    gw, switch = topo.namespace("lc-gw"), topo.namespace("lc-sw")
    Link(gw, topo.server, f"gw-wan{n}", f"srv-gw{n}", f"10.79.{n}.1", f"10.79.{n}.2",
         f"fd79:{n}::1", f"fd79:{n}::2").up()
    lan = f"gw-lan{n}"
    run(["ip", "link", "add", lan, "netns", gw.name, "type", "veth", "peer", "name", "sw-gw", "netns", switch.name]).ok()
    gw.run("ethtool", "-K", lan, "tso", "off", "gso", "off", "gro", "off").ok()
    switch.run("ethtool", "-K", "sw-gw", "tso", "off", "gso", "off", "gro", "off").ok()
    switch.ip("link", "add", "br0", "type", "bridge")
    switch.ip("link", "set", "sw-gw", "master", "br0")
    switch.ip("link", "set", "sw-gw", "up")
    gw.ip("addr", "add", f"10.80.{n}.1/24", "dev", lan)
    gw.ip("addr", "add", f"fd80:{n}::1/64", "dev", lan, "nodad")
    gw.ip("link", "set", lan, "up")
    gw.run("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1").ok()
    devices = []
    for i in (1, 2):
        dev = topo.namespace(f"lc-dev{i}-")
        run(["ip", "link", "add", "eth0", "netns", dev.name, "type", "veth", "peer", "name", f"p{i}",
             "netns", switch.name]).ok()
        switch.ip("link", "set", f"p{i}", "master", "br0")
        switch.ip("link", "set", f"p{i}", "up")
        v4, v6 = f"10.80.{n}.1{i}", f"fd80:{n}::1{i}"
        dev.ip("addr", "add", f"{v4}/24", "dev", "eth0")
        dev.ip("addr", "add", f"{v6}/64", "dev", "eth0", "nodad")
        dev.ip("link", "set", "eth0", "up")
        dev.ip("route", "add", "default", "via", f"10.80.{n}.1")
        dev.ip("-6", "route", "add", "default", "via", f"fd80:{n}::1")
        devices.append(GatewayDevice(dev, v4, v6, Probes(dev, server)))
    switch.ip("link", "set", "br0", "up")
    topo.server.ip("route", "add", f"10.80.{n}.0/24", "via", f"10.79.{n}.1")
    topo.server.ip("-6", "route", "add", f"fd80:{n}::/64", "via", f"fd79:{n}::1")
    router = Gateway(gw, lan, f"10.79.{n}.2", f"fd79:{n}::2", devices, f"10.80.{n}.1", f"fd80:{n}::1")
    # Routes and neighbours settle on the first packets: each device's echoes, until answered.
    targets = [udp_target(router.server4), udp_target(router.server6)]
    for d in devices:
        if not wait_until(lambda: all(r.all_answered for r in d.probes.rtt(targets, rounds=1).values()), 30, 0.5):
            raise HarnessError(f"device {d.v4} does not reach the server through the gateway")
    return router
