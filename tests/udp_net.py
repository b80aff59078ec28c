"""A lossy, duplicating path to a server for the UDP protocol's tests (tests/system and
tests/kernel): a client namespace routed through the server's namespace, with nftables
netdev rules on the egress hooks of both devices of the server's namespace, one per
direction. (An ingress hook can drop but cannot duplicate towards the host, so the client
sits behind a veth: towards the server the frames leave through the TAP, towards the
client through the veth, each an egress hook.)

    client 10.0.1.2 ─veth─ 10.0.1.1 [server's namespace, forwarding] 10.0.0.1 ─TAP─ server 10.0.0.2
"""
import os
import subprocess

IMPAIR = """
table netdev bwudpimpair {{
  chain to_server {{ type filter hook egress device "{to_server}" priority 0; policy accept;
    numgen random mod 100 < {loss} drop
    numgen random mod 100 < {dup} dup to "{to_server}"
  }}
  chain to_client {{ type filter hook egress device "{to_client}" priority 0; policy accept;
    numgen random mod 100 < {loss} drop
    numgen random mod 100 < {dup} dup to "{to_client}"
  }}
}}
"""

CLIENT_IP = "10.0.1.2"


class Routed:
    """The client namespace (`netns_class`, so its name has the caller's prefix) behind
    `server_ns`, whose TAP is `tap`; the server must route through 10.0.0.1."""

    def __init__(self, server_ns, tap, loss, dup, netns_class):
        self.ns = server_ns
        self.client = netns_class()
        tag = f"{os.getpid() % 10000}{netns_class.counter % 100}"
        veth_s, veth_c = f"vs{tag}", f"vc{tag}"
        try:
            subprocess.run(["ip", "link", "add", veth_s, "netns", self.ns.name, "type", "veth",
                            "peer", "name", veth_c, "netns", self.client.name], check=True)
            self.ns.ip("addr", "add", "10.0.1.1/24", "dev", veth_s)
            self.ns.ip("link", "set", veth_s, "up")
            self.client.ip("addr", "add", f"{CLIENT_IP}/24", "dev", veth_c)
            self.client.ip("link", "set", veth_c, "up")
            self.client.ip("route", "add", "default", "via", "10.0.1.1")
            self.ns.run("sysctl", "-qw", "net.ipv4.ip_forward=1")
            rules = IMPAIR.format(to_server=tap, to_client=veth_s, loss=loss, dup=dup)
            r = subprocess.run(self.ns.cmd("nft", "-f", "-"), input=rules, text=True,
                               capture_output=True)
            assert r.returncode == 0, r.stderr
        except BaseException:
            self.client.close()
            raise

    def close(self):
        self.client.close()
