"""IPv6 on the link: `bareweb serve` on a TAP takes a stable link-local address (RFC 7217)
after duplicate address detection, answers Linux's neighbour solicitations and `ping -6`,
and when Linux on the link already holds the address it would take, picks another.

The peer is Linux itself, on the TAP's side in the namespace: its `ping -6` and its
neighbour table (`ip -6 neigh`) are the real components judged against.
"""
import re
import socket
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


def dnsmasq(ns, *args, log=False):
    """dnsmasq on bw0 (no DNS), with `args`; its log on its stdout (text) when `log`, else
    dropped. The caller terminates it."""
    return subprocess.Popen(
        ns.cmd("dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--port=0",
               "--interface=bw0", "--bind-interfaces", "--user=root", "--pid-file",
               "--log-facility=-", *args),
        stdout=subprocess.PIPE if log else subprocess.DEVNULL, stderr=subprocess.STDOUT,
        text=True)


def router(ns):
    """dnsmasq on bw0 advertising 2001:db8:1::/64 (`ra-only`: SLAAC, no DHCPv6); the
    caller terminates it."""
    return dnsmasq(ns, "--enable-ra", "--dhcp-range=2001:db8:1::,ra-only,64,1h")


def console_addr(s, prefix, timeout=30):
    """The IPv6 address beginning `prefix` server `s` says (on its console) it took, once
    duplicate address detection passed."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(rf"bareweb: IPv6 ({re.escape(prefix)}[0-9a-f:]*) on the link", s.output())
        if m:
            return m.group(1)
        time.sleep(0.2)
    raise AssertionError(f"no IPv6 {prefix}… address in {timeout} s:\n{s.output()}")


def global_addr(s, timeout=30):
    """The global address server `s` says (on its console) it took in 2001:db8:1::/64."""
    return console_addr(s, "2001:db8:1:", timeout)


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


def test_dhcpv6_lease_from_dnsmasq_serves_and_is_renewed(tmp_path):
    """A router whose advertisements set the M flag (dnsmasq with a DHCPv6 range, no
    SLAAC prefix, two-minute leases): the server asks DHCPv6 for an address (Solicit,
    Advertise, Request, Reply), holds the one leased after DAD (said on the console),
    answers `ping -6` and serves HTTP at it (curl, byte-exact), and renews the lease with
    the same server at T1 (dnsmasq's log shows the Renew and its Reply)."""
    s = Server(extra=("--ip6-secret", SECRET))
    dns = None
    log = []
    try:
        s.ns.ip("-6", "addr", "add", "2001:db8:1::1/64", "dev", "bw0", "nodad")
        s.ns.run("sysctl", "-qw", "net.ipv6.conf.bw0.forwarding=1")
        dns = dnsmasq(s.ns, "--enable-ra", "--ra-param=bw0,3", "--log-dhcp",
                      "--dhcp-range=2001:db8:1::100,2001:db8:1::1ff,64,2m", log=True)
        deadline = time.time() + 40
        m = None
        while time.time() < deadline and not m:
            m = re.search(r"bareweb: IPv6 (2001:db8:1::1[0-9a-f]{2}) on the link", s.output())
            time.sleep(0.3)
        assert m, f"no leased address in 40 s:\n{s.output()}"
        addr = m.group(1)
        r = s.ns.run("ping", "-6", "-n", "-c", "3", "-i", "0.2", "-W", "2", addr, check=False)
        assert r.returncode == 0 and "3 received" in r.stdout, r.stdout + r.stderr
        out = tmp_path / "style.css"
        r = s.ns.run("curl", "-sS", "-g", "--max-time", "30", "-o", out,
                     f"http://[{addr}]/style.css", check=False)
        assert out.read_bytes() == (SITE / "style.css").read_bytes(), r.stderr
        # T1: half the preferred lifetime dnsmasq gives (a lease of 2 min: 60 s).
        time.sleep(70)
    finally:
        if dns:
            dns.terminate()
            out, _ = dns.communicate(timeout=5)
            log = out.splitlines()
        counters = s.stop()
        s.ns.close()
        s.log.close()
    kinds = [k for l in log for k in ("SOLICIT", "REQUEST", "RENEW") if f"DHCPREPLY" not in l
             and re.search(rf"DHCP{k}\(bw0\)", l)]
    assert kinds[:2] == ["SOLICIT", "REQUEST"], log
    assert "RENEW" in kinds, log
    assert any(re.search(rf"DHCPREPLY\(bw0\) {re.escape(addr)}", l) for l in log), log
    assert counters.get("dhcp6_sent", 0) >= 3, counters


def test_ip6_dhcp6_asks_for_its_address_without_a_router():
    """`--ip6 dhcp6`: DHCPv6 is asked at start, no router advertisement needed (dnsmasq
    serves DHCPv6 without advertising); the leased address serves HTTP."""
    s = Server(extra=("--ip6-secret", SECRET, "--ip6", "dhcp6"))
    dns = None
    try:
        s.ns.ip("-6", "addr", "add", "2001:db8:1::1/64", "dev", "bw0", "nodad")
        dns = dnsmasq(s.ns, "--dhcp-range=2001:db8:1::100,2001:db8:1::1ff,64,1h")
        deadline = time.time() + 30
        m = None
        while time.time() < deadline and not m:
            m = re.search(r"bareweb: IPv6 (2001:db8:1::1[0-9a-f]{2}) on the link", s.output())
            time.sleep(0.3)
        assert m, f"no leased address in 30 s:\n{s.output()}"
        r = s.ns.run("curl", "-sS", "-g", "--max-time", "30", "-o", "/dev/null", "-w",
                     "%{http_code}", f"http://[{m.group(1)}]/", check=False)
        assert r.stdout == "200", r.stderr
    finally:
        if dns:
            dns.terminate()
            dns.wait(5)
        counters = s.stop()
        s.ns.close()
        s.log.close()
    assert counters.get("nd_router_adverts", 0) == 0, counters
    assert counters.get("dhcp6_sent", 0) >= 2, counters


SNIFF_MLDV1 = r"""
import socket, sys, time
mac, secs = bytes.fromhex(sys.argv[1].replace(":", "")), float(sys.argv[2])
# Every protocol (ETH_P_ALL): the bridge takes a port's frames before per-protocol
# sockets would see them.
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("bw0", 0))
s.settimeout(0.2)
print("ready", flush=True)
end = time.time() + secs
while time.time() < end:
    try:
        f = s.recv(2048)
    except socket.timeout:
        continue
    # From the server: IPv6, a hop-by-hop header naming ICMPv6, an MLDv1 report (131).
    if f[6:12] == mac and f[12:14] == b"\x86\xdd" and len(f) >= 86 and f[20] == 0 \
            and f[54] == 58 and f[62] == 131:
        print(f[22:38].hex(), f[38:54].hex(), f[21], f[70:86].hex(), flush=True)
"""


def solicited_node(addr):
    """ff02::1:ffXX:XXXX of a link-local address written in full or compressed."""
    packed = socket.inet_pton(socket.AF_INET6, addr)
    return socket.inet_ntop(socket.AF_INET6, bytes.fromhex("ff02" + "00" * 8 + "0001ff")
                            + packed[13:])


def test_mld_snooping_bridge_learns_our_group_and_forwards_solicitations_to_it():
    """A Linux bridge with MLD snooping and its own querier, the server's TAP a port of it
    with flooding of unregistered multicast off: the bridge's query is answered, the
    bridge learns the server's solicited-node group from the report (`bridge mdb`), and
    only then do a second host's neighbour solicitations reach the server (its ping,
    from another port of the bridge). Then an MLDv1 querier: the server answers with
    MLDv1 reports."""
    s = Server(extra=("--ip6-secret", SECRET))
    ns = s.ns
    host = Netns("bwt")
    sniff = None
    try:
        addr = server_addr(ns)
        group = solicited_node(addr)
        v4 = re.search(r"inet (\S+)", ns.run("ip", "-4", "-o", "addr", "show", "dev", "bw0")
                       .stdout).group(1)
        ns.ip("addr", "flush", "dev", "bw0")
        ns.ip("link", "add", "br0", "type", "bridge", "mcast_snooping", "1", "mcast_querier",
              "0", "mcast_mld_version", "2")
        ns.ip("link", "set", "bw0", "master", "br0")
        ns.run("bridge", "link", "set", "dev", "bw0", "mcast_flood", "off")
        ns.ip("addr", "add", v4, "dev", "br0")
        ns.ip("link", "set", "br0", "up")
        # The second host, on a veth port of the bridge.
        ns.ip("link", "add", "bp0", "type", "veth", "peer", "name", "hp0", "netns", host.name)
        ns.ip("link", "set", "bp0", "master", "br0")
        ns.ip("link", "set", "bp0", "up")
        host.ip("link", "set", "hp0", "up")
        # The querier needs the bridge's own link-local address past DAD.
        deadline = time.time() + 10
        while "tentative" in ns.run("ip", "-6", "addr", "show", "dev", "br0").stdout \
                or "fe80" not in ns.run("ip", "-6", "addr", "show", "dev", "br0").stdout:
            assert time.time() < deadline, ns.run("ip", "-6", "addr").stdout
            time.sleep(0.2)
        # Before any report reached the bridge, the group is not registered: with flooding
        # off on the server's port, the host's solicitations never reach the server.
        host_ping = lambda n: host.run("ping", "-6", "-n", "-c", str(n), "-i", "0.3",  # noqa: E731
                                       "-W", "2", f"{addr}%hp0", check=False)
        deadline = time.time() + 10
        while "tentative" in host.run("ip", "-6", "addr", "show", "dev", "hp0").stdout:
            assert time.time() < deadline
            time.sleep(0.2)
        r = host_ping(2)
        assert r.returncode != 0, "reached without the group registered: " + r.stdout
        # The bridge's querier asks; the server's answer registers its group on its port.
        ns.ip("link", "set", "br0", "type", "bridge", "mcast_querier", "1")
        deadline = time.time() + 20
        mdb = ""
        while time.time() < deadline:
            mdb = ns.run("bridge", "mdb", "show", "dev", "br0").stdout
            if f"port bw0 grp {group}" in mdb:
                break
            time.sleep(0.3)
        assert f"port bw0 grp {group}" in mdb, mdb
        # The bridge forwards by its table once its querier's first Maximum Response
        # Delay (10 s) has passed (before that it floods, and flooding is off on the
        # server's port): then the host's solicitations reach the server.
        deadline = time.time() + 30
        while host_ping(1).returncode != 0:
            assert time.time() < deadline, ns.run("bridge", "mdb", "show").stdout
        host.run("ip", "-6", "neigh", "flush", "dev", "hp0", check=False)
        r = host_ping(3)
        assert r.returncode == 0 and "3 received" in r.stdout, r.stdout + r.stderr
        # An MLDv1 querier (the same bridge told to speak MLDv1, its querier restarted):
        # the server's answers are MLDv1 reports, from its address to its group.
        sniff = subprocess.Popen(ns.cmd("python3", "-c", SNIFF_MLDV1, s.mac, "15"),
                                 stdout=subprocess.PIPE, text=True)
        assert sniff.stdout.readline().strip() == "ready"
        ns.ip("link", "set", "br0", "type", "bridge", "mcast_querier", "0")
        ns.ip("link", "set", "br0", "type", "bridge", "mcast_mld_version", "1")
        ns.ip("link", "set", "br0", "type", "bridge", "mcast_querier", "1")
        line = sniff.stdout.readline().split()
        assert line, "no MLDv1 report from the server within 15 s"
        src, dst, hop, reported = line
        full = lambda a: socket.inet_pton(socket.AF_INET6, a).hex()  # noqa: E731
        assert (src, dst, hop, reported) == (full(addr), full(group), "1", full(group)), line
    finally:
        if sniff:
            sniff.kill()
            sniff.wait()
        counters = s.stop()
        host.close()
        ns.close()
        s.log.close()
    assert counters.get("mld_queries", 0) >= 2, counters
    # At start: the join from `::` and again from the address, twice each; then answers.
    assert counters.get("mld_reports", 0) >= 6, counters
