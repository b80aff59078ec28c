"""IPv6 on the link: `bareweb serve` on a TAP takes a stable link-local address (RFC 7217)
after duplicate address detection, answers Linux's neighbour solicitations and `ping -6`,
and when Linux on the link already holds the address it would take, picks another.

The peer is Linux itself, on the TAP's side in the namespace: its `ping -6` and its
neighbour table (`ip -6 neigh`) are the real components judged against.
"""
import re
import subprocess
import time

from conftest import BIN, SERVER_IP, SITE, Netns, Server, require_root

SECRET = "00112233445566778899aabbccddeeff"
MAC = "02:00:00:00:00:02"


def own_addrs(ns):
    """Linux's own link-local addresses on bw0."""
    r = ns.run("ip", "-6", "-o", "addr", "show", "dev", "bw0", check=False)
    return set(re.findall(r"inet6 (fe80::[0-9a-f:]+)/", r.stdout))


def server_addr(ns, timeout=20):
    """The server's link-local address: the one answering `ping ff02::1%bw0` that is not
    Linux's own (RFC 4443 §4.2: echo to all-nodes is answered from a unicast address)."""
    deadline = time.time() + timeout
    seen = ""
    while time.time() < deadline:
        r = ns.run("ping", "-6", "-n", "-c", "2", "-i", "0.3", "-W", "1", "ff02::1%bw0",
                   check=False)
        seen = r.stdout + r.stderr
        others = set(re.findall(r"from (fe80::[0-9a-f:]+)", seen)) - own_addrs(ns)
        if others:
            assert len(others) == 1, seen
            return others.pop()
        time.sleep(0.5)
    raise AssertionError(f"no IPv6 answer from the server in {timeout} s: {seen}")


def router(ns):
    """dnsmasq on bw0 advertising 2001:db8:1::/64 (`ra-only`: SLAAC, no DHCPv6); the
    caller terminates it."""
    return subprocess.Popen(
        ns.cmd("dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--port=0",
               "--interface=bw0", "--bind-interfaces", "--user=root", "--pid-file",
               "--enable-ra", "--dhcp-range=2001:db8:1::,ra-only,64,1h", "--log-facility=-"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def global_addr(s, timeout=30):
    """The global address server `s` says (on its console) it took in 2001:db8:1::/64."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(r"bareweb: IPv6 (2001:db8:1:[0-9a-f:]+) on the link", s.output())
        if m:
            return m.group(1)
        time.sleep(0.3)
    raise AssertionError(f"no global address in {timeout} s:\n{s.output()}")


def linux_rs_received(ns):
    """Router solicitations Linux on the namespace's side has received (its ICMPv6 MIB)."""
    r = ns.run("cat", "/proc/net/snmp6")
    m = re.search(r"^Icmp6InRouterSolicits\s+(\d+)$", r.stdout, re.M)
    return int(m.group(1)) if m else 0


def test_ping6_and_neighbour_discovery():
    s = Server(extra=("--ip6-secret", SECRET))
    try:
        addr = server_addr(s.ns)
        r = s.ns.run("ping", "-6", "-n", "-c", "3", "-i", "0.2", "-W", "2", f"{addr}%bw0",
                     check=False)
        assert r.returncode == 0 and "3 received" in r.stdout, r.stdout + r.stderr
        # Linux resolved the address with a solicitation; our advertisement taught it our MAC.
        r = s.ns.run("ip", "-6", "neigh", "show", "dev", "bw0")
        line = next((l for l in r.stdout.splitlines() if l.startswith(addr + " ")), "")
        assert f"lladdr {MAC}" in line, r.stdout
    finally:
        counters = s.stop()
        s.ns.close()
        s.log.seek(0)
        console = s.log.read()
        s.log.close()
    # The console says which address was taken, once detection passed.
    assert f"bareweb: IPv6 {addr} on the link (duplicate address detection passed)" \
        in console, console
    assert counters.get("icmp6_echo", 0) >= 3, counters
    assert counters.get("nd_advertisements", 0) >= 1, counters
    assert counters.get("nd_solicitations", 0) == 1, counters  # the one DAD probe
    assert counters.get("nd_dad_conflicts", 0) == 0, counters
    # The same secret and MAC give the same address on the next start (RFC 7217).
    s2 = Server(extra=("--ip6-secret", SECRET))
    try:
        assert server_addr(s2.ns) == addr
    finally:
        s2.close()


class HeldServer(Server):
    """`bareweb serve` on a TAP made beforehand, on which Linux already holds `held`
    (assigned without its own DAD): the server's first choice is taken."""

    def __init__(self, held, extra=()):
        require_root()
        self.ns = Netns("bwt")
        self.ns.ip("tuntap", "add", "dev", "bw0", "mode", "tap", "vnet_hdr")
        self.ns.ip("link", "set", "bw0", "address", "02:00:00:00:00:01", "up")
        self.ns.ip("-6", "addr", "add", f"{held}/64", "dev", "bw0", "nodad")
        self.log = open(f"/tmp/{self.ns.name}.log", "w+")
        self.mac = MAC
        self.proc = subprocess.Popen(
            self.ns.cmd(BIN, "serve", SITE, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                        "--mac", self.mac, *extra),
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            self.ns.close()
            self.log.close()
            raise


def test_dad_conflict_moves_the_address():
    # The address the server takes with this secret and MAC (learned from a first run).
    s = Server(extra=("--ip6-secret", SECRET))
    try:
        first = server_addr(s.ns)
    finally:
        s.close()
    s = HeldServer(first, extra=("--ip6-secret", SECRET))
    try:
        addr = server_addr(s.ns)
        assert addr != first
        r = s.ns.run("ping", "-6", "-n", "-c", "2", "-i", "0.2", "-W", "2", f"{addr}%bw0",
                     check=False)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        counters = s.stop()
        s.ns.close()
        s.log.seek(0)
        console = s.log.read()
        s.log.close()
    assert f"bareweb: IPv6 {first} is in use by another host on the link: trying {addr}" \
        in console, console
    assert f"bareweb: IPv6 {addr} on the link" in console, console
    # Linux defended its address against our probe: one duplicate, one more probe.
    assert counters.get("nd_dad_conflicts", 0) == 1, counters
    assert counters.get("nd_solicitations", 0) == 2, counters


def test_ip6_off_answers_nothing():
    s = Server(extra=("--ip6", "off"))
    try:
        time.sleep(2.5)  # as long as a DAD would take
        r = s.ns.run("ping", "-6", "-n", "-c", "2", "-i", "0.3", "-W", "1", "ff02::1%bw0",
                     check=False)
        others = set(re.findall(r"from (fe80::[0-9a-f:]+)", r.stdout)) - own_addrs(s.ns)
        assert not others, r.stdout
    finally:
        counters = s.stop()
        s.ns.close()
        s.log.close()
    assert counters.get("nd_solicitations", 0) == 0, counters
    assert counters.get("drop_ipv6_unserved", 0) >= 1, counters


def test_slaac_global_address_from_dnsmasq_router_advertisements():
    """A router on the link (dnsmasq's router advertisements, `ra-only`, for
    2001:db8:1::/64, on Linux's side of the TAP): the server solicits routers once its
    link-local address is preferred, makes a stable global address in the advertised
    prefix (RFC 7217), checks it by DAD, says so on the console and answers `ping -6` at
    it, from it."""
    s = Server(extra=("--ip6-secret", SECRET))
    dns = None
    try:
        s.ns.ip("-6", "addr", "add", "2001:db8:1::1/64", "dev", "bw0", "nodad")
        # Linux on the TAP is the router: forwarding joins it to all-routers (ff02::2),
        # so it receives (and counts) the server's solicitations.
        s.ns.run("sysctl", "-qw", "net.ipv6.conf.bw0.forwarding=1")
        # The router starts once Linux has received the server's first solicitation:
        # dnsmasq advertises unsolicited at start, and a host that has heard a router
        # need not solicit (RFC 4861 §6.3.7), so starting it earlier races the two.
        deadline = time.time() + 20
        while linux_rs_received(s.ns) == 0:
            assert time.time() < deadline, "no router solicitation reached Linux in 20 s"
            time.sleep(0.2)
        dns = router(s.ns)
        addr = global_addr(s)
        r = s.ns.run("ping", "-6", "-n", "-c", "3", "-i", "0.2", "-W", "2", addr, check=False)
        assert r.returncode == 0 and "3 received" in r.stdout, r.stdout + r.stderr
        assert f"from {addr}" in r.stdout, r.stdout
    finally:
        if dns:
            dns.terminate()
            dns.wait(5)
        counters = s.stop()
        s.ns.close()
        s.log.close()
    assert counters.get("nd_router_adverts", 0) >= 1, counters
    assert 1 <= counters.get("nd_router_solicits", 0) <= 3, counters
    assert counters.get("nd_solicitations", 0) == 2, counters  # a DAD probe per address
    # The same secret and MAC make the same address in the same prefix (RFC 7217): the
    # interface identifier is not the MAC's (no EUI-64).
    assert not addr.endswith("ff:fe00:2"), addr
