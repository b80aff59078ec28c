"""Direct server return (`--vip`): bareweb as the real server behind a direct-routing
balancer. This Linux has no IPVS, so the balancer is a namespace that owns the VIP on the
link (it answers ARP for it) and forwards each client frame for it to the real server's
MAC with its own MAC as the source, as IPVS-DR does: an nftables netdev ingress rule,
`ether saddr set BALANCER ether daddr set SERVER fwd`. bareweb answers from the VIP
straight to the client, at the MAC it resolved by ARP for the client (its next hop), not
to the balancer the frames came from. Every file of the example site is fetched through
the VIP, byte for byte; the client receives the answers from the server's MAC, the
balancer sees none of them past the first SYN-ACK (sent to the frame's source while the
client's MAC is being resolved; the balancer drops it and the client's SYN retry is
answered at the client's MAC); the client's neighbour table never holds the real
server's MAC for the VIP.

    client ns (10.0.0.10) ─┐
    balancer ns (VIP 10.0.0.100, nft fwd) ─┤ br0 (server ns) ── bw0 TAP ── bareweb 10.0.0.2 + VIP
"""
import hashlib
import subprocess
import time

from conftest import BIN, SITE, Netns, require_root

VIP = "10.0.0.100"
SERVER_IP = "10.0.0.2"
SERVER_MAC = "02:00:00:00:00:02"
CLIENT_IP = "10.0.0.10"


def site_files():
    return sorted("/" + p.relative_to(SITE).as_posix() for p in SITE.rglob("*")
                  if p.is_file() and not p.name.startswith("."))


def mac_of(ns, dev):
    out = ns.run("cat", f"/sys/class/net/{dev}/address").stdout.strip()
    return out


def test_every_file_through_the_vip_and_the_server_never_in_the_neighbour_table(tmp_path):
    require_root()
    srv, cli, lb = Netns("bwds"), Netns("bwdc"), Netns("bwdb")
    log = open(tmp_path / "serve.log", "w+")
    proc = None
    try:
        srv.ip("link", "add", "br0", "type", "bridge")
        srv.ip("link", "set", "br0", "up")
        for ns, dev in ((cli, "vc"), (lb, "vb")):
            srv.ip("link", "add", dev, "type", "veth", "peer", "name", f"{dev}-br")
            srv.ip("link", "set", dev, "netns", ns.name)
            srv.ip("link", "set", f"{dev}-br", "master", "br0")
            srv.ip("link", "set", f"{dev}-br", "up")
        cli.ip("addr", "add", f"{CLIENT_IP}/24", "dev", "vc")
        cli.ip("link", "set", "vc", "up")
        lb.ip("addr", "add", f"{VIP}/24", "dev", "vb")
        lb.ip("link", "set", "vb", "up")
        lb_mac = mac_of(lb, "vb")
        rules = tmp_path / "dsr.nft"
        # The balancer: each client frame for the VIP to the server, from the balancer's
        # own MAC (IPVS-DR); and a count of the server's answers that reach it.
        rules.write_text(
            "table netdev dsr {\n"
            "  chain in {\n"
            '    type filter hook ingress device "vb" priority 0;\n'
            f"    ip saddr {VIP} tcp sport 80 counter name answers\n"
            f"    ip daddr {VIP} tcp dport 80 counter ether saddr set {lb_mac} "
            f'ether daddr set {SERVER_MAC} fwd to "vb"\n'
            "  }\n"
            "  counter answers { }\n"
            "}\n")
        lb.run("nft", "-f", str(rules))
        # The client: the answers from the VIP that come from the server's MAC.
        crules = tmp_path / "client.nft"
        crules.write_text(
            "table netdev seen {\n"
            "  chain in {\n"
            '    type filter hook ingress device "vc" priority 0;\n'
            f"    ip saddr {VIP} tcp sport 80 ether saddr {SERVER_MAC} counter name direct\n"
            f"    ip saddr {VIP} tcp sport 80 counter name every\n"
            "  }\n"
            "  counter direct { }\n"
            "  counter every { }\n"
            "}\n")
        cli.run("nft", "-f", str(crules))
        proc = subprocess.Popen(
            srv.cmd(BIN, "serve", SITE, "--tap", "bw0", "--ip", f"{SERVER_IP}/24",
                    "--mac", SERVER_MAC, "--host-ip", "none", "--vip", VIP),
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while srv.run("ip", "link", "show", "bw0", check=False).returncode != 0:
            assert time.time() < deadline and proc.poll() is None, log.read()
            time.sleep(0.1)
        srv.ip("link", "set", "bw0", "master", "br0")
        srv.ip("link", "set", "bw0", "up")
        # Ready: the server's own address answers on the link.
        while cli.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1",
                      f"http://{SERVER_IP}/", check=False).stdout != "200":
            assert time.time() < deadline and proc.poll() is None, "server not ready"
            time.sleep(0.1)
        files = site_files()
        assert len(files) >= 8
        for path in files:
            out = tmp_path / "got"
            r = cli.run("curl", "-sS", "--max-time", "10", "-o", str(out), "-w", "%{http_code}",
                        f"http://{VIP}{path}", check=False)
            assert r.stdout == "200", (path, r.stdout, r.stderr)
            want = (SITE / path.lstrip("/")).read_bytes()
            assert hashlib.sha256(out.read_bytes()).hexdigest() == \
                hashlib.sha256(want).hexdigest(), path
        # The client reached the VIP at the balancer's MAC, never at the server's.
        neigh = cli.run("ip", "neigh", "show", VIP).stdout.split()
        assert "lladdr" in neigh, neigh
        assert neigh[neigh.index("lladdr") + 1] == lb_mac, (neigh, lb_mac)
        assert SERVER_MAC not in cli.run("ip", "neigh", "show", VIP).stdout
        # Every answer came straight from the server to the client's MAC: the balancer
        # saw at most the first SYN-ACK (sent while the client's MAC was being resolved).
        def packets_of(ns, table, name):
            out = ns.run("nft", "list", "counter", "netdev", table, name).stdout
            return int(out.split("packets ")[1].split()[0])
        direct, every = packets_of(cli, "seen", "direct"), packets_of(cli, "seen", "every")
        through_lb = packets_of(lb, "dsr", "answers")
        assert direct == every and direct >= 3 * len(files), (direct, every)
        assert through_lb <= 1, through_lb
        # An ARP request for the VIP goes unanswered by the server: with the balancer
        # gone from the link, nobody answers it (the client's entry stays unresolved).
        lb.ip("link", "set", "vb", "down")
        cli.ip("neigh", "flush", "dev", "vc")
        cli.run("ping", "-c", "2", "-W", "1", VIP, check=False)
        left = cli.run("ip", "neigh", "show", VIP).stdout
        assert "lladdr" not in left and SERVER_MAC not in left, left
        # Every request went through the balancer's rule.
        counted = lb.run("nft", "list", "table", "netdev", "dsr").stdout
        packets = int(counted.split("counter packets ")[1].split()[0])
        assert packets >= 3 * len(files), counted
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        for ns in (cli, lb, srv):
            ns.close()
        log.close()
