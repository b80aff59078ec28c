//! Client kinds `bare-tap` and `bare-xdp`: the bare HTTP load client, `bareweb
//! load URL --tap NAME --ip A/N` and `bareweb load URL --xdp IFACE --ip A/N`, whose TCP is
//! the engine's own, so the client's protocol work stays in the client's process; and
//! `bare-tap-spin`, the same client on the same TAP polling its link while fetches are in
//! flight instead of sleeping (`--spin-us` [`SPIN_US`]). This module owns the link each
//! needs to every server and the client's command line.
//!
//! Topology. Every server kind ends in one device in the client namespace `C` that leads
//! to it ([`super::servers::Instance::link`]): the client end of a kernel server's or
//! `bareweb-xdp`'s veth pair, the TAP `bareweb serve` drives, the TAP QEMU's virtio-net
//! sits on. When a scenario uses a bare client kind, [`attach`] puts that device on a
//! bridge in `C`, moves `C`'s own address (10.77.`net`.1, the socket clients' source) from
//! the device to the bridge, and adds one port per bare client:
//!
//! - `bare-tap` and `bare-tap-spin`: a TAP (`TAG`ct) the client opens; it answers for
//!   10.77.`net`.3 (the two kinds run one after the other, never at once).
//! - `bare-xdp`: a veth pair in `C`, `TAG`xa (the client's AF_XDP socket, no address) and
//!   `TAG`xb (the bridge port, transmit checksums off so every frame reaching the client's
//!   socket carries a complete checksum, as on a wire); it answers for 10.77.`net`.4.
//!
//! So the bare clients reach each server over the same device the socket clients cross,
//! one bridge hop more, and the socket clients cross the bridge too in such a run (so all
//! rows of one run share the topology). A bridge is the cheap honest choice: one software
//! switch, the same for every server, no routing, NAT or filtering (where br_netfilter is
//! loaded, as on container hosts, `C`'s bridge-nf-call-* sysctls are turned off: else every
//! bridged frame runs iptables' hooks in its sender's context), and ARP works as on a LAN.
//!
//! Who pays for what (these are all software links, and a software link does the
//! receiver's work in the sender's context): a write to a TAP (`bareweb serve`'s frames,
//! the bare-tap client's) runs the kernel's receive path in the writer's system call —
//! the bridge, and for a kernel server behind a veth its TCP receive in the softirq that
//! follows; a veth transmit does the same for its peer. With a socket client, bareweb's
//! TAP writes run the client's kernel TCP (found in the kernel-bypass work); with a bare
//! client they only queue the frame on the client's TAP, and the client's TCP runs in the client. A
//! kernel server's own receive work still runs in whoever sent to it — the client, with
//! any client kind — which is why the tables give the server's CPU and the client's CPU
//! per fetch side by side. The bare-tap client's TAP takes receive offloads (`bareweb load`'s
//! default, docs/load.md): a server's 64 KiB TSO frames (bareweb on its TAP, a kernel
//! server's GSO) reach it whole, as they reach a local socket, so no server segments or
//! checksums for it. The bare-xdp client takes none (AF_XDP cannot): for it they are cut
//! into segments and checksummed in software when the veth hop forwards them, in the
//! sender's context, which every server pays alike.

use super::scenario::{Kind, Point};
use super::servers::Instance;
use super::topo::sh;

/// The bare client on a TAP.
pub const BARE_TAP: &str = "bare-tap";
/// The bare client on a TAP, polling its link while fetches are in flight.
pub const BARE_TAP_SPIN: &str = "bare-tap-spin";
/// The bare client on AF_XDP.
pub const BARE_XDP: &str = "bare-xdp";
/// `--spin-us` of `bare-tap-spin`: under load a frame comes every few microseconds and a
/// response within a round trip of tens, so the client does not sleep while it waits.
pub const SPIN_US: u64 = 100;

/// Whether `client` is one of the bare client kinds.
pub fn is_bare(client: &str) -> bool {
    client == BARE_TAP || client == BARE_TAP_SPIN || client == BARE_XDP
}

/// Whether `client` is a bare client on the TAP.
fn on_tap(client: &str) -> bool {
    client == BARE_TAP || client == BARE_TAP_SPIN
}

/// The devices of the bare clients in one instance's client namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct Links {
    pub bridge: String,
    /// The bare-tap client's TAP.
    pub tap: String,
    /// The bare-xdp client's veth end.
    pub xdp: String,
    /// 10.77.`net`.0/24 without the last number, e.g. "10.77.3".
    pub subnet: String,
}

impl Links {
    /// The names for an instance tagged `tag` on 10.77.`net`.0/24.
    pub fn new(tag: &str, net: u8) -> Links {
        Links {
            bridge: format!("{tag}br"),
            tap: format!("{tag}ct"),
            xdp: format!("{tag}xa"),
            subnet: format!("10.77.{net}"),
        }
    }

    /// The bare client's address with prefix for `client` (`--ip`).
    pub fn client_ip(&self, client: &str) -> String {
        let host = if client == BARE_XDP { 4 } else { 3 };
        format!("{}.{host}/24", self.subnet)
    }

    /// `--tap NAME` or `--xdp IFACE` for `client`.
    pub fn device_args(&self, client: &str) -> [String; 2] {
        if client == BARE_XDP {
            ["--xdp".into(), self.xdp.clone()]
        } else {
            ["--tap".into(), self.tap.clone()]
        }
    }

    /// The bare-xdp client's bridge-side veth end.
    fn xdp_peer(&self) -> String {
        format!("{}b", &self.xdp[..self.xdp.len() - 1])
    }
}

/// The IPv4 addresses (A/N) on `dev` in namespace `ns`.
fn addrs(ns: &str, dev: &str) -> Result<Vec<String>, String> {
    let out = sh(&["ip", "-n", ns, "-4", "-o", "addr", "show", "dev", dev])?;
    Ok(parse_addrs(&out))
}

/// `ip -o -4 addr show` lines → their "A/N" addresses.
pub fn parse_addrs(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            w.find(|x| *x == "inet")?;
            w.next().map(str::to_string)
        })
        .collect()
}

/// Bridges the server link of `inst` with a port for each bare client in `kinds` (module
/// docs). The devices live in the client namespace and go with it.
pub fn attach(inst: &mut Instance, tag: &str, net: u8, kinds: &[String]) -> Result<(), String> {
    let l = Links::new(tag, net);
    let ns = inst.client_ns.clone();
    let link = inst.link.clone();
    let ip = |args: &[&str]| -> Result<String, String> {
        let mut a = vec!["ip", "-n", ns.as_str()];
        a.extend_from_slice(args);
        sh(&a)
    };
    let moved = addrs(&ns, &link)?;
    // No spanning tree (the default): a port forwards as soon as it has a carrier.
    ip(&["link", "add", &l.bridge, "type", "bridge"])?;
    ip(&["link", "set", &link, "master", &l.bridge])?;
    for a in &moved {
        ip(&["addr", "del", a, "dev", &link])?;
        ip(&["addr", "add", a, "dev", &l.bridge])?;
    }
    ip(&["link", "set", &l.bridge, "up"])?;
    // With br_netfilter loaded (container hosts), every bridged frame would go through
    // iptables' hooks in the sender's context; a switch filters nothing.
    if std::path::Path::new("/proc/sys/net/bridge/bridge-nf-call-iptables").exists() {
        sh(&[
            "ip",
            "netns",
            "exec",
            &ns,
            "sysctl",
            "-qw",
            "net.bridge.bridge-nf-call-iptables=0",
            "net.bridge.bridge-nf-call-ip6tables=0",
            "net.bridge.bridge-nf-call-arptables=0",
        ])?;
    }
    if kinds.iter().any(|k| on_tap(k)) {
        ip(&["tuntap", "add", "dev", &l.tap, "mode", "tap"])?;
        ip(&["link", "set", &l.tap, "master", &l.bridge])?;
        ip(&["link", "set", &l.tap, "up"])?;
        super::topo::no_qdisc(&ns, &l.tap)?;
    }
    if kinds.iter().any(|k| k == BARE_XDP) {
        let peer = l.xdp_peer();
        ip(&["link", "add", &l.xdp, "type", "veth", "peer", "name", &peer])?;
        ip(&["link", "set", &peer, "master", &l.bridge])?;
        sh(&[
            "ip", "netns", "exec", &ns, "ethtool", "-K", &peer, "tx", "off",
        ])?;
        ip(&["link", "set", &peer, "up"])?;
        ip(&["link", "set", &l.xdp, "up"])?;
        if let Some(c) = &inst.pinned {
            // Its XDP receive in a thread pinned to the client CPUs (`super::pin`), not in
            // the softirq of the server's transmit.
            super::pin::client_napi(&ns, &l.xdp, &c.client)?;
        }
    }
    inst.bare = Some(l);
    Ok(())
}

/// The bare client's arguments for point `p` after `load URL`: the socket client's
/// (`socket`, which [`super::client_args`] made: the same load, slots and bounds) plus its
/// device and address.
pub fn args(client: &str, l: &Links, socket: &[String]) -> Vec<String> {
    let mut a = socket.to_vec();
    a.extend(l.device_args(client));
    a.extend(["--ip".into(), l.client_ip(client)]);
    if client == BARE_TAP_SPIN {
        a.extend(["--spin-us".into(), SPIN_US.to_string()]);
    }
    a
}

/// Whether a bare client can make point `p`'s load: every kind (parallel, rate, and Surge
/// sessions, which the bare client runs as the socket client does).
pub fn fits(p: &Point) -> bool {
    matches!(p.kind, Kind::Parallel | Kind::Rate | Kind::Sessions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_move_and_names_fit() {
        let out = "7: bwl123450a    inet 10.77.1.1/24 scope global bwl123450a\\       valid_lft forever preferred_lft forever\n";
        assert_eq!(parse_addrs(out), ["10.77.1.1/24"]);
        assert!(parse_addrs("").is_empty());
        // The longest tag the bench makes (prefix, server index, configuration index).
        let l = Links::new("bwl9999912x3", 200);
        for n in [&l.bridge, &l.tap, &l.xdp, &l.xdp_peer()] {
            assert!(n.len() <= 15, "{n} is too long for an interface name");
        }
        assert_eq!(l.xdp_peer(), "bwl9999912x3xb");
        assert_eq!(l.client_ip(BARE_TAP), "10.77.200.3/24");
        assert_eq!(l.client_ip(BARE_XDP), "10.77.200.4/24");
    }

    #[test]
    fn the_bare_command_is_the_socket_one_on_its_own_device() {
        let l = Links::new("t0", 5);
        let socket: Vec<String> = [
            "load",
            "http://10.77.5.2/4k",
            "--rate",
            "500",
            "--max-conns",
            "8192",
            "--keepalive",
            "--seconds",
            "2",
        ]
        .map(String::from)
        .to_vec();
        let a = args(BARE_TAP, &l, &socket);
        // The same load, slots and bounds as the socket client's, on its own device.
        assert_eq!(a[..socket.len()], socket[..]);
        assert_eq!(a[a.len() - 4..], ["--tap", "t0ct", "--ip", "10.77.5.3/24"]);
        let x = args(BARE_XDP, &l, &socket);
        assert_eq!(x[x.len() - 4..], ["--xdp", "t0xa", "--ip", "10.77.5.4/24"]);
        // The polling kind: bare-tap's TAP and address, and --spin-us.
        let s = args(BARE_TAP_SPIN, &l, &socket);
        assert_eq!(s[..a.len()], a[..]);
        assert_eq!(s[a.len()..], ["--spin-us", "100"]);
    }
}
