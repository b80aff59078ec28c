//! AF_XDP: the engine on an interface's own queues, bypassing the kernel's network stack
//! for the server's address only.
//!
//! [`open`] loads the steering program ([`bpf`]), attaches it to the interface (a BPF
//! link, natively in the driver when it can, on the generic path otherwise) and opens one
//! AF_XDP socket per queue ([`xsk`]), each put in the program's socket map at its queue's
//! index. Each socket is one engine queue pair ([`XskQueue`]: the engine's `Nic`, and the
//! host's [`HostQueue`](crate::cores::HostQueue)), so the core threads of
//! [`crate::cores`] drive it exactly as they drive a TAP: one queue per core in per-queue
//! mode, or one queue owned by core 0 in network-core mode. The returned [`Xdp`] detaches
//! the program when dropped; a link also detaches on any exit of the process.
//!
//! Why our own plumbing: see docs/design/af-xdp.md.

pub mod bpf;
pub mod netlink;
pub mod ring;
pub mod xsk;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use bareweb_engine::wire::{EthernetAddress, Ipv4Address};

pub use xsk::{Bind, SocketsCounters, StatsHandle, XskQueue, XskRx, XskStats, XskTx};

/// How the program is attached and the sockets bound (`--xdp-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Native XDP and zero-copy when the driver has them; otherwise native with copy, or
    /// the generic path — each step said.
    Auto,
    /// Native XDP, zero-copy sockets: an error if the driver has not both.
    ZeroCopy,
    /// Native XDP, sockets in copy mode.
    Copy,
    /// The generic (skb) XDP path, copy mode: any interface, slowest.
    Generic,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::ZeroCopy => "zerocopy",
            Mode::Copy => "copy",
            Mode::Generic => "generic",
        }
    }
}

/// What to open.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The interface.
    pub iface: String,
    /// Queues `first_queue..first_queue + N` (default: every receive queue of the
    /// interface).
    pub queues: Option<u32>,
    /// The first queue (0 for the server; the bare load client's `--xdp IFACE:QUEUE`).
    pub first_queue: u32,
    pub mode: Mode,
    /// The server's (or the bare client's) address: the only one steered to the sockets.
    pub ip: Ipv4Address,
    /// Attach through netlink instead of a BPF link (the path for kernels before 5.9;
    /// the attachment then outlives a crash, and the next start removes it).
    pub netlink: bool,
    /// Busy polling, microseconds per poll (0: none; see [`xsk::SocketSpec`]).
    pub busy_poll_us: u32,
    /// Steer IPv6 to the sockets too: the destinations the server's link names
    /// ([`V6Steer`]).
    pub ipv6: bool,
}

/// The program attached to an interface; dropping it detaches it.
pub struct Xdp {
    pub iface: String,
    pub ifindex: u32,
    /// The interface's MAC: the server's.
    pub mac: EthernetAddress,
    /// "native" or "generic".
    pub attach: &'static str,
    /// How the sockets are bound.
    pub bind: Bind,
    /// Queues the interface has (frames on queues without a socket go to the kernel).
    pub iface_queues: u32,
    /// What set-up had to do or fall back to, to be said at start.
    pub notes: Vec<String>,
    pub prog_id: u32,
    link: Option<OwnedFd>,
    netlink_flags: Option<u32>,
    _prog: OwnedFd,
    _map: OwnedFd,
    /// The IPv6 destinations' steering, until taken ([`Xdp::take_v6`]).
    v6: Option<V6Steer>,
}

impl Xdp {
    /// The IPv6 destinations' steering ([`Spec::ipv6`]), for the core that runs the link.
    pub fn take_v6(&mut self) -> Option<V6Steer> {
        self.v6.take()
    }
}

/// The IPv6 destinations steered to the sockets: the XDP program's map (`bw_v6_PID`) of
/// the server's addresses and solicited-node groups, and the interface's multicast list
/// (`SIOCADDMULTI`, as `ip maddr add` does), so a NIC that filters still receives the
/// groups' frames. Kept in step with the link by [`V6Steer::sync`] (a few system calls
/// when the link takes or drops an address, none otherwise); the groups are left again
/// when it is dropped. Its packet socket ([`V6Steer::heard`]) copies what the program
/// leaves to the host's stack but the link needs: router advertisements and listener
/// queries to all-nodes.
pub struct V6Steer {
    map: OwnedFd,
    iface: String,
    /// The packet socket: copies of advertisements and queries (a filter), and the
    /// interface's ioctls (a packet socket reaches `dev_ioctl` as any socket does, and
    /// needs no IPv6 in the host's kernel).
    sock: OwnedFd,
    buf: Box<[u8; 1518]>,
    /// Keys in the map.
    keys: Vec<[u8; 16]>,
    /// Groups' MACs joined.
    macs: Vec<EthernetAddress>,
    /// The first failure said (once).
    said: bool,
}

impl V6Steer {
    fn new(map: OwnedFd, iface: &str, ifindex: u32) -> std::io::Result<V6Steer> {
        Ok(V6Steer {
            map,
            iface: iface.to_string(),
            sock: heard_socket(ifindex)?,
            buf: Box::new([0; 1518]),
            keys: Vec::new(),
            macs: Vec::new(),
            said: false,
        })
    }

    /// Steers exactly `want` (the link's addresses and groups, `Link::destinations`;
    /// `None` pads): keys and groups no longer named are removed, new ones added; what
    /// failed is tried again at the next call. Nothing is done (nor allocated) when they
    /// are the ones steered.
    pub fn sync(&mut self, want: &[Option<bareweb_engine::wire::Ipv6Address>]) {
        if want
            .iter()
            .flatten()
            .map(|a| a.0)
            .eq(self.keys.iter().copied())
        {
            return;
        }
        let map = self.map.as_raw_fd();
        let mut errors = Vec::new();
        let mut keys: Vec<[u8; 16]> = Vec::with_capacity(want.len());
        for k in want.iter().flatten().map(|a| a.0) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        // Removed first: a key that could not be removed stays ours.
        let mut kept: Vec<[u8; 16]> = Vec::with_capacity(keys.len());
        for k in &self.keys {
            if keys.contains(k) {
                continue;
            }
            if let Err(e) = bpf::v6_remove(map, k) {
                errors.push(format!("remove from the IPv6 map: {e}"));
                kept.push(*k);
            }
        }
        for k in &keys {
            if self.keys.contains(k) {
                kept.push(*k);
            } else {
                match bpf::v6_add(map, k) {
                    Ok(()) => kept.push(*k),
                    Err(e) => errors.push(format!("add to the IPv6 map: {e}")),
                }
            }
        }
        self.keys = kept;
        let mut macs: Vec<EthernetAddress> = Vec::new();
        for m in keys
            .iter()
            .map(|k| bareweb_engine::wire::Ipv6Address(*k))
            .filter(|a| a.is_multicast())
            .map(|a| a.multicast_ethernet())
        {
            if !macs.contains(&m) {
                macs.push(m);
            }
        }
        let mut joined = Vec::with_capacity(macs.len());
        for m in std::mem::take(&mut self.macs) {
            if macs.contains(&m) {
                joined.push(m);
            } else if let Err(e) = self.multi(libc::SIOCDELMULTI, m) {
                errors.push(format!("leave {m}: {e}"));
                joined.push(m);
            }
        }
        for m in macs {
            if !joined.contains(&m) {
                match self.multi(libc::SIOCADDMULTI, m) {
                    Ok(()) => joined.push(m),
                    Err(e) => errors.push(format!("join {m}: {e}")),
                }
            }
        }
        self.macs = joined;
        if !errors.is_empty() && !self.said {
            self.said = true;
            eprintln!(
                "bareweb: IPv6 over AF_XDP on {}: {} (tried again as the link changes)",
                self.iface,
                errors.join("; ")
            );
        }
    }

    /// Hands `take` each router advertisement and listener query the interface received
    /// since the last call (at most 16; the socket is non-blocking).
    pub fn heard(&mut self, mut take: impl FnMut(&[u8])) {
        for _ in 0..16 {
            // SAFETY: an all-zero sockaddr_ll is a valid value of the C struct.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: recvfrom writes at most `buf.len()` bytes into the live buffer and at
            // most `len` bytes into `from`.
            let n = unsafe {
                libc::recvfrom(
                    self.sock.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                return;
            }
            // Only what came in whole (not the host's own frames going out).
            let n = n as usize;
            if from.sll_pkttype != libc::PACKET_OUTGOING && n <= self.buf.len() {
                take(&self.buf[..n]);
            }
        }
    }

    /// `SIOCADDMULTI` or `SIOCDELMULTI` of `mac` on the interface.
    fn multi(&self, req: libc::c_ulong, mac: EthernetAddress) -> std::io::Result<()> {
        // SAFETY: an all-zero ifreq is a valid value of the C struct.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in ifr.ifr_name.iter_mut().zip(self.iface.bytes().take(15)) {
            *d = s as libc::c_char;
        }
        // SAFETY: the union's hardware-address member, written whole.
        let sa = unsafe { &mut ifr.ifr_ifru.ifru_hwaddr };
        sa.sa_family = libc::AF_UNSPEC as libc::sa_family_t;
        for (d, s) in sa.sa_data.iter_mut().zip(mac.0) {
            *d = s as libc::c_char;
        }
        // SAFETY: the request takes a pointer to a live ifreq, read during the call.
        let r = unsafe { libc::ioctl(self.sock.as_raw_fd(), req as _, &ifr) };
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// The classic BPF filter of the packet socket: IPv6 whose ICMPv6 message, right after the
/// fixed header, is a router advertisement (134), or, after one 8-octet hop-by-hop header
/// (the Router Alert), a listener query (130).
const HEARD_FILTER: [libc::sock_filter; 13] = {
    const fn f(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }
    const LDH: u16 = 0x28; // BPF_LD | BPF_H | BPF_ABS
    const LDB: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    [
        f(LDH, 0, 0, 12),       // 0: ethertype
        f(JEQ, 0, 10, 0x86dd),  // 1: IPv6, else 12
        f(LDB, 0, 0, 20),       // 2: next header
        f(JEQ, 0, 2, 58),       // 3: ICMPv6, else 6
        f(LDB, 0, 0, 54),       // 4: its type
        f(JEQ, 5, 6, 134),      // 5: a router advertisement: 11, else 12
        f(JEQ, 0, 5, 0),        // 6: hop-by-hop, else 12
        f(LDB, 0, 0, 54),       // 7: its next header
        f(JEQ, 0, 3, 58),       // 8: ICMPv6, else 12
        f(LDB, 0, 0, 62),       // 9: its type
        f(JEQ, 0, 1, 130),      // 10: a listener query: 11, else 12
        f(RET, 0, 0, 0x4_0000), // 11: take it
        f(RET, 0, 0, 0),        // 12: not ours
    ]
};

/// A non-blocking packet socket on interface `ifindex` for IPv6 frames, filtered
/// ([`HEARD_FILTER`]) before it is bound, so nothing else queues on it.
fn heard_socket(ifindex: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nothing else owns.
    let sock = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let prog = libc::sock_fprog {
        len: HEARD_FILTER.len() as u16,
        filter: HEARD_FILTER.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: SO_ATTACH_FILTER copies the program the live `prog` points at.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&prog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: an all-zero sockaddr_ll is a valid value of the C struct.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = (libc::ETH_P_IPV6 as u16).to_be();
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: bind reads the live, initialised sockaddr_ll of the size given.
    let r = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(sock)
}

impl Drop for V6Steer {
    fn drop(&mut self) {
        for m in std::mem::take(&mut self.macs) {
            let _ = self.multi(libc::SIOCDELMULTI, m);
        }
    }
}

impl Drop for Xdp {
    fn drop(&mut self) {
        // A link detaches when its descriptor closes (the field's drop). A netlink
        // attachment is removed here, if it is still ours.
        if let Some(flags) = self.netlink_flags {
            if matches!(netlink::current(self.ifindex), Ok(Some(c)) if c.prog_id == self.prog_id) {
                if let Err(e) = netlink::set(self.ifindex, -1, flags) {
                    eprintln!(
                        "bareweb: cannot detach the XDP program from {}: {e}",
                        self.iface
                    );
                }
            }
        }
        self.link.take();
    }
}

fn sys_path(iface: &str, what: &str) -> std::path::PathBuf {
    std::path::Path::new("/sys/class/net")
        .join(iface)
        .join(what)
}

/// The interface's MAC, from sysfs.
fn iface_mac(iface: &str) -> Result<EthernetAddress, String> {
    let text = std::fs::read_to_string(sys_path(iface, "address"))
        .map_err(|e| format!("cannot read {iface}'s MAC address: {e}"))?;
    let b: Vec<u8> = text
        .trim()
        .split(':')
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .collect();
    <[u8; 6]>::try_from(b)
        .map(EthernetAddress)
        .map_err(|_| format!("{iface} has no Ethernet address ({:?})", text.trim()))
}

/// Receive queues of the interface (`/sys/class/net/IFACE/queues/rx-*`).
pub fn rx_queues(iface: &str) -> u32 {
    std::fs::read_dir(sys_path(iface, "queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

/// Whether the interface is one end of a virtual pair (a veth: `iflink` names its peer).
fn paired(iface: &str) -> bool {
    let read = |w: &str| std::fs::read_to_string(sys_path(iface, w)).unwrap_or_default();
    let (link, index) = (read("iflink"), read("ifindex"));
    !link.trim().is_empty()
        && link.trim() != index.trim()
        && std::fs::read_link(sys_path(iface, ""))
            .or_else(|_| std::fs::read_link(std::path::Path::new("/sys/class/net").join(iface)))
            .is_ok_and(|p| p.to_string_lossy().contains("/virtual/"))
}

fn ifindex(iface: &str) -> Result<u32, String> {
    let c = std::ffi::CString::new(iface).map_err(|_| format!("bad interface name {iface:?}"))?;
    // SAFETY: if_nametoindex reads a NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(format!(
            "no interface {iface:?} in this network namespace (`ip link` lists them)"
        ));
    }
    Ok(i)
}

const FALLBACK_TAP: &str = "or run on a TAP instead (--tap NAME)";

fn no_permission(what: &str, e: &io::Error) -> String {
    format!(
        "{what}: {e}: AF_XDP needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (run as root), {FALLBACK_TAP}"
    )
}

fn is_perm(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
}

/// Whether the process `pid` is a running bareweb: this same program, or one called
/// bareweb (a reused pid of another program is not).
fn bareweb_alive(pid: u32) -> bool {
    let exe = |p: &str| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    match exe(&pid.to_string()) {
        Some(e) => exe("self").is_some_and(|me| me == e) || comm.starts_with("bareweb"),
        None => false,
    }
}

/// Looks at what is attached to the interface now: nothing (fine), a bareweb program
/// left by a run that did not exit (removed, and said), a live bareweb's, or another
/// program (refused: we never replace what is not ours).
fn clear_stale(iface: &str, ifindex: u32, notes: &mut Vec<String>) -> Result<(), String> {
    let cur = match netlink::current(ifindex) {
        Ok(Some(c)) => c,
        Ok(None) => return Ok(()),
        Err(e) => return Err(format!("cannot read {iface}'s XDP state: {e}")),
    };
    let info = bpf::prog_info(cur.prog_id).map_err(|e| {
        if is_perm(&e) {
            no_permission("cannot inspect the XDP program already attached", &e)
        } else {
            format!(
                "{iface} already has an XDP program (id {}) that cannot be inspected: {e}",
                cur.prog_id
            )
        }
    })?;
    if info.name != bpf::PROG_NAME {
        return Err(format!(
            "{iface} already has another XDP program attached (id {}, {:?}): bareweb does not replace it; \
             remove it yourself if it is not needed (`ip link set dev {iface} xdp off`) or give another interface, {FALLBACK_TAP}",
            cur.prog_id, info.name
        ));
    }
    let owner = info
        .map_ids
        .iter()
        .filter_map(|&m| bpf::map_name(m).ok())
        .find_map(|n| n.strip_prefix(bpf::MAP_PREFIX)?.parse::<u32>().ok());
    if let Some(pid) = owner.filter(|&p| p != std::process::id() && bareweb_alive(p)) {
        return Err(format!(
            "{iface} is already served by bareweb (pid {pid}): its queues are in use; stop that one, \
             or give another --xdp interface, {FALLBACK_TAP}"
        ));
    }
    let flags = match cur.mode {
        netlink::Attached::Generic => bpf::XDP_FLAGS_SKB_MODE,
        _ => bpf::XDP_FLAGS_DRV_MODE,
    };
    netlink::set(ifindex, -1, flags).map_err(|e| match e.raw_os_error() {
        // A program attached by a link cannot be removed this way: a live process holds it.
        Some(libc::EBUSY) => format!(
            "{iface} is already served by a bareweb XDP program (id {}) that a running process holds: \
             stop it, or give another --xdp interface, {FALLBACK_TAP}",
            cur.prog_id
        ),
        _ => format!(
            "cannot remove the stale bareweb XDP program (id {}) on {iface}: {e}",
            cur.prog_id
        ),
    })?;
    notes.push(format!(
        "removed a stale bareweb XDP program (id {}) from {iface}, left by an earlier run{} that did not exit cleanly",
        cur.prog_id,
        owner.map_or(String::new(), |p| format!(" (pid {p})"))
    ));
    Ok(())
}

/// `XDP_FLAGS_UPDATE_IF_NOEXIST`: fail rather than replace another program.
const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1;

/// Attaches `prog` in `flags`' mode: a link, or netlink when asked or when the kernel
/// has no XDP links. Returns (link, netlink flags).
fn attach(
    spec: &Spec,
    ifindex: u32,
    prog: RawFd,
    flags: u32,
) -> io::Result<(Option<OwnedFd>, Option<u32>)> {
    if !spec.netlink {
        match bpf::link_create(prog, ifindex, flags) {
            Ok(l) => return Ok((Some(l), None)),
            // EINVAL from a kernel before 5.9 (no XDP link); anything else is an answer.
            Err(e) if e.raw_os_error() != Some(libc::EINVAL) => return Err(e),
            Err(_) => {}
        }
    }
    netlink::set(ifindex, prog, flags | XDP_FLAGS_UPDATE_IF_NOEXIST)?;
    Ok((None, Some(flags)))
}

fn attach_error(iface: &str, mode: &str, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            no_permission(&format!("cannot attach the XDP program to {iface}"), e)
        }
        Some(libc::EBUSY) | Some(libc::EEXIST) => format!(
            "cannot attach the XDP program to {iface}: another XDP program was attached meanwhile ({e}); \
             remove it (`ip link set dev {iface} xdp off`), {FALLBACK_TAP}"
        ),
        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) if mode == "native" => format!(
            "{iface}'s driver refused native XDP ({e}): use --xdp-mode generic (slower, any interface), {FALLBACK_TAP}"
        ),
        _ => format!("cannot attach the XDP program to {iface} ({mode} mode): {e}"),
    }
}

fn socket_error(iface: &str, queue: u32, queues: u32, err: &xsk::SetupError) -> String {
    let e = &err.err;
    match (err.step, e.raw_os_error()) {
        (_, Some(libc::EPERM) | Some(libc::EACCES)) => {
            no_permission(&format!("cannot open an AF_XDP socket on {iface}"), e)
        }
        ("socket", Some(libc::EAFNOSUPPORT)) => format!(
            "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): {FALLBACK_TAP}"
        ),
        ("bind", Some(libc::EBUSY)) => format!(
            "queue {queue} of {iface} is in use by another AF_XDP socket (another bareweb?) ({e}): \
             stop that program, give other queues, {FALLBACK_TAP}"
        ),
        ("bind", Some(libc::EOPNOTSUPP) | Some(libc::EPROTONOSUPPORT)) => format!(
            "{iface}'s driver refused zero-copy AF_XDP on queue {queue} ({e}): use --xdp-mode copy, {FALLBACK_TAP}"
        ),
        ("bind", Some(libc::EINVAL)) if queue >= queues => format!(
            "{iface} has no queue {queue} ({queues} receive queues) ({e})"
        ),
        ("busy-poll", _) => format!(
            "cannot set busy polling on the AF_XDP socket of queue {queue} of {iface} ({e}): \
             serve without --xdp-busy-poll"
        ),
        ("umem", Some(libc::ENOMEM) | Some(libc::ENOBUFS)) => format!(
            "cannot register the AF_XDP frame area on {iface}: {e} (the locked-memory limit? `ulimit -l unlimited`)"
        ),
        (step, _) => format!("cannot set up the AF_XDP socket on queue {queue} of {iface} ({step}): {e}"),
    }
}

/// Attaches the steering program to `spec.iface` and opens a socket on each of its
/// queues 0..N. The program is detached again if a later step fails.
pub fn open(spec: &Spec) -> Result<(Xdp, Vec<XskQueue>), String> {
    let iface = spec.iface.as_str();
    let ifindex = ifindex(iface)?;
    let mac = iface_mac(iface)?;
    let iface_queues = rx_queues(iface);
    let first = spec.first_queue;
    let queues = spec
        .queues
        .unwrap_or(iface_queues - first.min(iface_queues));
    if queues == 0 || first.saturating_add(queues) > iface_queues {
        let asked = match first {
            0 => format!("{queues}"),
            f => format!("queue {f}"),
        };
        return Err(format!(
            "{iface} has {iface_queues} receive queue{}: --xdp {iface}:{asked} asks for more",
            if iface_queues == 1 { "" } else { "s" }
        ));
    }
    let mut notes = Vec::new();
    clear_stale(iface, ifindex, &mut notes)?;
    let map = bpf::create_xskmap(iface_queues, std::process::id()).map_err(|e| {
        if is_perm(&e) {
            no_permission("cannot create the XDP socket map", &e)
        } else {
            format!("cannot create the XDP socket map: {e}")
        }
    })?;
    // IPv6's map and packet socket, made before the program is attached: a host where
    // they cannot be made (no AF_PACKET, a map refused) serves IPv4 alone, and says so.
    let v6 = match spec.ipv6 {
        true => match bpf::create_v6_map(std::process::id())
            .and_then(|m| V6Steer::new(m, iface, ifindex))
        {
            Ok(s) => Some(s),
            Err(e) => {
                notes.push(format!(
                    "IPv6 off: cannot make the XDP program's IPv6 map and packet socket on {iface} ({e})"
                ));
                None
            }
        },
        false => None,
    };
    let program = bpf::program(
        spec.ip,
        v6.as_ref().map(|s| s.map.as_raw_fd()),
        bpf::Steer::Map(map.as_raw_fd()),
    );
    let prog = bpf::load(&program).map_err(|e| {
        if is_perm(&e) {
            no_permission("cannot load the XDP program", &e)
        } else {
            format!("cannot load the XDP program: {e}")
        }
    })?;
    let prog_id = bpf::prog_id(prog.as_raw_fd()).unwrap_or(0);
    let native = bpf::XDP_FLAGS_DRV_MODE;
    let generic = bpf::XDP_FLAGS_SKB_MODE;
    let (attach_name, (link, netlink_flags)) = match spec.mode {
        Mode::Generic => (
            "generic",
            attach(spec, ifindex, prog.as_raw_fd(), generic)
                .map_err(|e| attach_error(iface, "generic", &e))?,
        ),
        Mode::ZeroCopy | Mode::Copy => (
            "native",
            attach(spec, ifindex, prog.as_raw_fd(), native)
                .map_err(|e| attach_error(iface, "native", &e))?,
        ),
        Mode::Auto => match attach(spec, ifindex, prog.as_raw_fd(), native) {
            Ok(a) => ("native", a),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
                ) =>
            {
                notes.push(format!(
                    "{iface}'s driver has no native XDP ({e}): the generic path, copy mode"
                ));
                (
                    "generic",
                    attach(spec, ifindex, prog.as_raw_fd(), generic)
                        .map_err(|e| attach_error(iface, "generic", &e))?,
                )
            }
            Err(e) => return Err(attach_error(iface, "native", &e)),
        },
    };
    let mut xdp = Xdp {
        iface: iface.to_string(),
        ifindex,
        mac,
        attach: attach_name,
        bind: Bind::Copy,
        iface_queues,
        notes,
        prog_id,
        link,
        netlink_flags,
        _prog: prog,
        _map: map,
        v6,
    };
    let want = match spec.mode {
        Mode::Auto if attach_name == "native" => Bind::ZeroCopy,
        Mode::ZeroCopy => Bind::ZeroCopy,
        _ => Bind::Copy,
    };
    let mut sockets = Vec::with_capacity(queues as usize);
    for queue in first..first + queues {
        let mut s = xsk::SocketSpec {
            ifindex,
            queue,
            bind: if sockets.is_empty() { want } else { xdp.bind },
            mac,
            busy_poll_us: spec.busy_poll_us,
        };
        let q = match xsk::XskQueue::open(s) {
            Ok(q) => q,
            Err(e)
                if spec.mode == Mode::Auto
                    && s.bind == Bind::ZeroCopy
                    && e.step == "bind"
                    && matches!(
                        e.err.raw_os_error(),
                        Some(libc::EOPNOTSUPP) | Some(libc::EPROTONOSUPPORT) | Some(libc::EINVAL)
                    ) =>
            {
                xdp.notes.push(format!(
                    "{iface}'s driver has no zero-copy AF_XDP ({}): copy mode",
                    e.err
                ));
                s.bind = Bind::Copy;
                xsk::XskQueue::open(s).map_err(|e| socket_error(iface, queue, iface_queues, &e))?
            }
            Err(e) => return Err(socket_error(iface, queue, iface_queues, &e)),
        };
        xdp.bind = q.bind_mode();
        bpf::map_set_socket(xdp._map.as_raw_fd(), queue, q.raw_fd())
            .map_err(|e| format!("cannot put the socket of queue {queue} in the XDP map: {e}"))?;
        sockets.push(q);
    }
    if paired(iface) {
        xdp.notes.push(format!(
            "{iface} is one end of a pair (a veth?): its peer must send complete checksums \
             (`ethtool -K PEER tx off`), as a wire does; XDP sees a peer's partial ones as they are"
        ));
    }
    if queues < iface_queues {
        let last = first + queues;
        xdp.notes.push(format!(
            "{iface} has {iface_queues} receive queues and bareweb's sockets are on queues {first}..{last}: \
             frames for {} that arrive on the others go to the kernel, which drops them (steer that address \
             to queues {first}..{last} with the NIC's flow rules{})",
            spec.ip,
            if first == 0 { ", or serve every queue" } else { "" }
        ));
    }
    Ok((xdp, sockets))
}

impl crate::cores::HostQueue for XskQueue {
    fn rx_fds(&self) -> Vec<RawFd> {
        vec![self.raw_fd()]
    }

    fn wait_us(&self, us: u64) {
        XskQueue::wait_us(self, us)
    }

    fn into_rings(self) -> (XskRx, XskTx) {
        XskQueue::into_rings(self)
    }
}
