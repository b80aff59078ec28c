//! The XDP program that steers the server's frames to its AF_XDP sockets, and the few
//! `bpf(2)` commands that load and attach it.
//!
//! The program is 26 instructions (59 with IPv6), assembled here from the instruction set
//! (no ELF, no compiler for the BPF target, nothing to build at build time). In C it
//! would read:
//!
//! ```c
//! int bareweb_xdp(struct xdp_md *ctx) {
//!     void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
//!     if (data + 14 > end) return XDP_PASS;
//!     __u16 type = *(__u16 *)(data + 12);
//!     if (type == htons(ETH_P_ARP)) {              // ARP whose target is the server
//!         if (data + 42 > end || *(__u32 *)(data + 38) != SERVER_IP) return XDP_PASS;
//!     } else if (type == htons(ETH_P_IPV6)) {      // IPv6 (below)
//!         if (data + 54 > end) return XDP_PASS;
//!         __u8 want = 136;                          // elsewhere: an advertisement for ours
//!         if (bpf_map_lookup_elem(&v6, data + 38)) {
//!             if (*(__u8 *)(data + 38) != 0xff) goto ours;  // to an address of ours
//!             want = 135;                           // to a group of ours: a solicitation
//!         }
//!         if (data + 78 > end || *(__u8 *)(data + 20) != IPPROTO_ICMPV6
//!             || *(__u8 *)(data + 54) != want || !bpf_map_lookup_elem(&v6, data + 62))
//!             return XDP_PASS;                      // ... whose target is ours
//!     } else if (type == htons(ETH_P_IP)) {        // IPv4 to the server's address
//!         if (data + 34 > end || *(__u32 *)(data + 30) != SERVER_IP) return XDP_PASS;
//!     } else return XDP_PASS;
//!     return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
//! }
//! ```
//!
//! Everything else (the host's own addresses, IPv6 to other destinations, VLAN-tagged
//! frames, other ARP) goes on to the kernel, so a NIC shared with the host keeps its ARP,
//! its IPv6, SSH and the rest. The IPv6 map (`bw_v6_PID`, only when the server runs IPv6)
//! holds the server's addresses and their solicited-node groups, kept by the server as
//! its link takes and drops addresses ([`super::V6Steer`]). A frame to one of those
//! groups comes to the server only if it is a neighbour solicitation for one of its
//! addresses (the host may hold an address whose group is the same: alike in the last 24
//! bits), and a neighbour advertisement for one of them comes whatever its destination (a
//! DAD defender's, to all-nodes); any other multicast frame to all-nodes (router
//! advertisements, general queries) stays the host's, since XDP cannot hand one frame to
//! both: the server's packet socket copies those it needs. A
//! queue with no socket in the map passes the frame too (`bpf_redirect_map`'s fallback
//! action). The address is compared as the 4 bytes of the frame (a 32-bit register
//! compare: an immediate would be sign-extended to 64 bits).
//!
//! Attaching is by a BPF link (`BPF_LINK_CREATE`, Linux 5.9+): the attachment lives as
//! long as the link's descriptor, so any exit, a crash or `kill -9` included, detaches it.
//! Older kernels attach through netlink ([`super::netlink`]), which outlives the process;
//! the next start finds such a program by its name and its owner's pid (in its map's
//! name) and removes it.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use bareweb_engine::wire::Ipv4Address;

/// The program's name as the kernel lists it (`bpftool prog`, `ip link`).
pub const PROG_NAME: &str = "bareweb_xdp";
/// Prefix of the socket map's name; the owner's pid follows (`bw_xsks_12345`).
pub const MAP_PREFIX: &str = "bw_xsks_";
/// Prefix of the IPv6 destinations map's name; the owner's pid follows.
pub const V6_MAP_PREFIX: &str = "bw_v6_";
/// IPv6 destinations the map holds: the link's addresses (link-local and one per prefix
/// slot) and a solicited-node group each, with room to spare.
pub const V6_KEYS: u32 = 16;

/// XDP actions.
pub const XDP_PASS: u32 = 2;
/// XDP_TX: what the test build of the program returns where the real one redirects.
pub const XDP_TX: u32 = 3;
/// `bpf_redirect_map`'s result when a socket took the frame.
pub const XDP_REDIRECT: u32 = 4;

const BPF_MAP_CREATE: u32 = 0;
const BPF_MAP_UPDATE_ELEM: u32 = 2;
const BPF_MAP_DELETE_ELEM: u32 = 3;
const BPF_PROG_LOAD: u32 = 5;
const BPF_PROG_TEST_RUN: u32 = 10;
const BPF_PROG_GET_FD_BY_ID: u32 = 13;
const BPF_MAP_GET_FD_BY_ID: u32 = 14;
const BPF_OBJ_GET_INFO_BY_FD: u32 = 15;
const BPF_LINK_CREATE: u32 = 28;

const BPF_MAP_TYPE_HASH: u32 = 1;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`'s BPF_XDP.
const BPF_XDP: u32 = 37;

/// `XDP_FLAGS_*` (if_link.h): attach in the driver (native) or on the generic skb path.
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// A `union bpf_attr`, as big as every command here needs (unused bytes stay zero, as the
/// kernel requires).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.0[off..off + 4].try_into().expect("4 bytes"))
    }
    fn name(&mut self, off: usize, name: &str) -> &mut Attr {
        let n = name.len().min(15);
        self.0[off..off + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
}

fn bpf(cmd: u32, attr: &mut Attr) -> io::Result<i64> {
    // SAFETY: bpf(2) reads (and for some commands writes) `size` bytes of the attr,
    // which is a live, zero-initialised 128-byte buffer; pointers inside it point at
    // buffers the callers keep alive for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            attr.0.as_mut_ptr(),
            attr.0.len() as libc::c_long,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fd_of(r: i64) -> OwnedFd {
    // SAFETY: the command returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(r as RawFd) }
}

/// Creates the XSKMAP: key a queue index, value an AF_XDP socket.
pub fn create_xskmap(entries: u32, pid: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, BPF_MAP_TYPE_XSKMAP)
        .u32(4, 4)
        .u32(8, 4)
        .u32(12, entries.max(1))
        .name(28, &format!("{MAP_PREFIX}{pid}"));
    bpf(BPF_MAP_CREATE, &mut a).map(fd_of)
}

/// Puts socket `xsk` at queue index `queue` of the map.
pub fn map_set_socket(map: RawFd, queue: u32, xsk: RawFd) -> io::Result<()> {
    let key = queue;
    let value = xsk as u32;
    let mut a = Attr::new();
    a.u32(0, map as u32)
        .u64(8, &key as *const u32 as u64)
        .u64(16, &value as *const u32 as u64)
        .u64(24, 0);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// One eBPF instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0xf),
        off,
        imm,
    }
}

// Instruction classes and fields (linux/bpf_common.h, linux/bpf.h).
const LDX_MEM_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
const LDX_MEM_H: u8 = 0x69; // BPF_LDX | BPF_MEM | BPF_H
const LDX_MEM_B: u8 = 0x71; // BPF_LDX | BPF_MEM | BPF_B
const ALU64_MOV_X: u8 = 0xbf;
const ALU64_MOV_K: u8 = 0xb7;
const ALU64_ADD_K: u8 = 0x07;
const ALU_MOV_K: u8 = 0xb4; // 32-bit move: zero-extends
const JMP_JGT_X: u8 = 0x2d;
const JMP_JEQ_K: u8 = 0x15;
const JMP_JNE_K: u8 = 0x55;
const JMP_JNE_X: u8 = 0x5d;
const JMP_JA: u8 = 0x05;
const JMP_CALL: u8 = 0x85;
const JMP_EXIT: u8 = 0x95;
const LD_IMM64: u8 = 0x18;
/// `src_reg` of an `ld_imm64` whose immediate is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;
/// Helper `bpf_map_lookup_elem`.
const FN_MAP_LOOKUP: i32 = 1;
/// Helper `bpf_redirect_map`.
const FN_REDIRECT_MAP: i32 = 51;

/// What the program does with a frame for the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steer {
    /// Redirect it to the socket of its receive queue in this XSKMAP (the real program).
    Map(RawFd),
    /// Return XDP_TX (tests: tells "steered" apart from XDP_PASS without a socket).
    Mark,
}

/// The steering program for the server at `ip`; with `v6` (a map made by
/// [`create_v6_map`]), IPv6 frames whose destination is a key of the map too.
pub fn program(ip: Ipv4Address, v6: Option<RawFd>, steer: Steer) -> Vec<Insn> {
    let ip = i32::from_ne_bytes(ip.0);
    let eth = |t: u16| i32::from(u16::from_ne_bytes(t.to_be_bytes()));
    // Registers: r6 ctx, r2 data, r3 data_end, r4 bound, r5 loaded field, r7 the address.
    // Jumps name their target (a label below) and are patched once it is known.
    let (mut p, mut jumps) = (Vec::new(), Vec::new());
    let mut jump = |p: &mut Vec<Insn>, i: Insn, to: &'static str| {
        jumps.push((p.len(), to));
        p.push(i);
    };
    p.extend([
        insn(ALU64_MOV_X, 6, 1, 0, 0),  // r6 = ctx
        insn(LDX_MEM_W, 2, 6, 0, 0),    // r2 = ctx->data
        insn(LDX_MEM_W, 3, 6, 4, 0),    // r3 = ctx->data_end
        insn(ALU_MOV_K, 7, 0, 0, ip),   // w7 = server address
        insn(ALU64_MOV_X, 4, 2, 0, 0),  // r4 = data
        insn(ALU64_ADD_K, 4, 0, 0, 14), // r4 += 14
    ]);
    jump(&mut p, insn(JMP_JGT_X, 4, 3, 0, 0), "pass"); // if r4 > end
    p.push(insn(LDX_MEM_H, 5, 2, 12, 0)); // r5 = ethertype
    jump(&mut p, insn(JMP_JEQ_K, 5, 0, 0, eth(0x0806)), "arp");
    if v6.is_some() {
        jump(&mut p, insn(JMP_JEQ_K, 5, 0, 0, eth(0x86dd)), "ipv6");
    }
    jump(&mut p, insn(JMP_JNE_K, 5, 0, 0, eth(0x0800)), "pass");
    // IPv4: to the server's address.
    p.extend([
        insn(ALU64_MOV_X, 4, 2, 0, 0),  // r4 = data
        insn(ALU64_ADD_K, 4, 0, 0, 34), // r4 += 34
    ]);
    jump(&mut p, insn(JMP_JGT_X, 4, 3, 0, 0), "pass");
    p.push(insn(LDX_MEM_W, 5, 2, 30, 0)); // r5 = IPv4 destination
    jump(&mut p, insn(JMP_JNE_X, 5, 7, 0, 0), "pass");
    jump(&mut p, insn(JMP_JA, 0, 0, 0, 0), "ours");
    // ARP: whose target is the server.
    let arp = p.len();
    p.extend([
        insn(ALU64_MOV_X, 4, 2, 0, 0),  // r4 = data
        insn(ALU64_ADD_K, 4, 0, 0, 42), // r4 += 42
    ]);
    jump(&mut p, insn(JMP_JGT_X, 4, 3, 0, 0), "pass");
    p.push(insn(LDX_MEM_W, 5, 2, 38, 0)); // r5 = ARP target protocol address
    jump(&mut p, insn(JMP_JNE_X, 5, 7, 0, 0), "pass");
    jump(&mut p, insn(JMP_JA, 0, 0, 0, 0), "ours");
    // IPv6: a unicast destination that is a key of the map; a neighbour solicitation to a
    // group in the map whose target is one too (a group may be the host's as well: two
    // addresses alike in their last 24 bits); or a neighbour advertisement whose target is
    // one (a DAD defender answers to all-nodes, which stays the host's otherwise).
    let ipv6 = p.len();
    let (mut nd_advert, mut nd) = (0, 0);
    if let Some(map) = v6 {
        let lookup = |at: i32| {
            [
                insn(ALU64_MOV_X, 2, 8, 0, 0),            // r2 = data
                insn(ALU64_ADD_K, 2, 0, 0, at),           // r2 += at: the key
                insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map), // r1 = &map
                insn(0, 0, 0, 0, 0),                      //    (second half of ld_imm64)
                insn(JMP_CALL, 0, 0, 0, FN_MAP_LOOKUP),   // r0 = bpf_map_lookup_elem(r1, r2)
            ]
        };
        p.extend([
            insn(ALU64_MOV_X, 8, 2, 0, 0),  // r8 = data (kept across calls)
            insn(ALU64_MOV_X, 4, 2, 0, 0),  // r4 = data
            insn(ALU64_ADD_K, 4, 0, 0, 54), // r4 += 54
        ]);
        jump(&mut p, insn(JMP_JGT_X, 4, 3, 0, 0), "pass");
        p.extend(lookup(38));
        jump(&mut p, insn(JMP_JEQ_K, 0, 0, 0, 0), "nd_advert"); // not in the map
        p.push(insn(LDX_MEM_B, 5, 8, 38, 0)); // r5 = the destination's first octet
        jump(&mut p, insn(JMP_JNE_K, 5, 0, 0, 0xff), "ours"); // unicast: ours
        p.push(insn(ALU64_MOV_K, 9, 0, 0, 135)); // a group of ours: a solicitation
        jump(&mut p, insn(JMP_JA, 0, 0, 0, 0), "nd");
        nd_advert = p.len();
        p.push(insn(ALU64_MOV_K, 9, 0, 0, 136)); // elsewhere: an advertisement
        nd = p.len();
        p.extend([
            insn(LDX_MEM_W, 3, 6, 4, 0),    // r3 = ctx->data_end (the call took r3)
            insn(ALU64_MOV_X, 4, 8, 0, 0),  // r4 = data
            insn(ALU64_ADD_K, 4, 0, 0, 78), // r4 += 78: the message's target
        ]);
        jump(&mut p, insn(JMP_JGT_X, 4, 3, 0, 0), "pass");
        p.push(insn(LDX_MEM_B, 5, 8, 20, 0)); // r5 = next header
        jump(&mut p, insn(JMP_JNE_K, 5, 0, 0, 58), "pass"); // not ICMPv6
        p.push(insn(LDX_MEM_B, 5, 8, 54, 0)); // r5 = ICMPv6 type
        jump(&mut p, insn(JMP_JNE_X, 5, 9, 0, 0), "pass"); // not the one wanted
        p.extend(lookup(62));
        jump(&mut p, insn(JMP_JEQ_K, 0, 0, 0, 0), "pass"); // target not ours
    }
    let ours = p.len();
    match steer {
        Steer::Map(fd) => p.extend([
            insn(LDX_MEM_W, 2, 6, 16, 0),                // r2 = ctx->rx_queue_index
            insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, fd),     // r1 = &map
            insn(0, 0, 0, 0, 0),                         //    (second half of ld_imm64)
            insn(ALU64_MOV_K, 3, 0, 0, XDP_PASS as i32), // r3 = fallback action
            insn(JMP_CALL, 0, 0, 0, FN_REDIRECT_MAP),    // r0 = bpf_redirect_map(r1, r2, r3)
            insn(JMP_EXIT, 0, 0, 0, 0),
        ]),
        Steer::Mark => p.extend([
            insn(ALU64_MOV_K, 0, 0, 0, XDP_TX as i32),
            insn(JMP_EXIT, 0, 0, 0, 0),
        ]),
    }
    let pass = p.len();
    p.extend([
        insn(ALU64_MOV_K, 0, 0, 0, XDP_PASS as i32),
        insn(JMP_EXIT, 0, 0, 0, 0),
    ]);
    // Jump offsets are relative to the next instruction.
    for (at, to) in jumps {
        let target = match to {
            "pass" => pass,
            "arp" => arp,
            "ipv6" => ipv6,
            "nd_advert" => nd_advert,
            "nd" => nd,
            _ => ours,
        };
        p[at].off = (target as i64 - at as i64 - 1) as i16;
    }
    p
}

/// Creates the map of the IPv6 destinations steered to the sockets (the server's addresses
/// and their solicited-node groups): a hash of 16-byte keys, [`V6_KEYS`] of them.
pub fn create_v6_map(pid: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, BPF_MAP_TYPE_HASH)
        .u32(4, 16)
        .u32(8, 4)
        .u32(12, V6_KEYS)
        .name(28, &format!("{V6_MAP_PREFIX}{pid}"));
    bpf(BPF_MAP_CREATE, &mut a).map(fd_of)
}

/// Adds `addr` to the IPv6 map (a key already there stays).
pub fn v6_add(map: RawFd, addr: &[u8; 16]) -> io::Result<()> {
    let value = 1u32;
    let mut a = Attr::new();
    a.u32(0, map as u32)
        .u64(8, addr.as_ptr() as u64)
        .u64(16, &value as *const u32 as u64)
        .u64(24, 0);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// Removes `addr` from the IPv6 map (absent: nothing to do).
pub fn v6_remove(map: RawFd, addr: &[u8; 16]) -> io::Result<()> {
    let mut a = Attr::new();
    a.u32(0, map as u32).u64(8, addr.as_ptr() as u64);
    match bpf(BPF_MAP_DELETE_ELEM, &mut a) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        r => r.map(|_| ()),
    }
}

/// Loads `insns` as an XDP program; a refusal carries the verifier's log.
pub fn load(insns: &[Insn]) -> io::Result<OwnedFd> {
    let license = c"Dual MIT/GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut a = Attr::new();
    a.u32(0, BPF_PROG_TYPE_XDP)
        .u32(4, insns.len() as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .name(48, PROG_NAME);
    match bpf(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => Ok(fd_of(fd)),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(e),
        Err(_) => {
            // Again with the verifier's log, to say why.
            a.u32(24, 1)
                .u32(28, log.len() as u32)
                .u64(32, log.as_mut_ptr() as u64);
            let e = bpf(BPF_PROG_LOAD, &mut a).map(fd_of);
            e.map_err(|e| {
                let text = CStr::from_bytes_until_nul(&log)
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                io::Error::new(e.kind(), format!("{e}; verifier: {}", text.trim()))
            })
        }
    }
}

/// Attaches program `prog` to interface `ifindex` by a BPF link (`flags`: the XDP mode).
/// Dropping the returned descriptor detaches it.
pub fn link_create(prog: RawFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, prog as u32)
        .u32(4, ifindex)
        .u32(8, BPF_XDP)
        .u32(12, flags);
    bpf(BPF_LINK_CREATE, &mut a).map(fd_of)
}

/// Runs program `prog` once on `frame` (`BPF_PROG_TEST_RUN`); returns its action.
pub fn test_run(prog: RawFd, frame: &[u8]) -> io::Result<u32> {
    let mut out = vec![0u8; frame.len() + 512];
    let mut a = Attr::new();
    a.u32(0, prog as u32)
        .u32(8, frame.len() as u32)
        .u32(12, out.len() as u32)
        .u64(16, frame.as_ptr() as u64)
        .u64(24, out.as_mut_ptr() as u64)
        .u32(32, 1);
    bpf(BPF_PROG_TEST_RUN, &mut a)?;
    Ok(a.get_u32(4))
}

/// What the kernel says about a loaded program: its name and its maps' ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgInfo {
    pub id: u32,
    pub name: String,
    pub map_ids: Vec<u32>,
}

fn obj_info(fd: RawFd, info: &mut [u8]) -> io::Result<()> {
    let mut a = Attr::new();
    a.u32(0, fd as u32)
        .u32(4, info.len() as u32)
        .u64(8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a).map(|_| ())
}

fn c_name(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The name and maps of the program with id `id`.
pub fn prog_info(id: u32) -> io::Result<ProgInfo> {
    let mut a = Attr::new();
    a.u32(0, id);
    let fd = fd_of(bpf(BPF_PROG_GET_FD_BY_ID, &mut a)?);
    let mut maps = [0u32; 8];
    // struct bpf_prog_info: id @4, nr_map_ids @52, map_ids @56, name @64.
    let mut info = [0u8; 256];
    info[52..56].copy_from_slice(&(maps.len() as u32).to_ne_bytes());
    info[56..64].copy_from_slice(&(maps.as_mut_ptr() as u64).to_ne_bytes());
    obj_info(fd.as_raw_fd(), &mut info)?;
    let n = u32::from_ne_bytes(info[52..56].try_into().expect("4 bytes")) as usize;
    Ok(ProgInfo {
        id: u32::from_ne_bytes(info[4..8].try_into().expect("4 bytes")),
        name: c_name(&info[64..80]),
        map_ids: maps[..n.min(maps.len())].to_vec(),
    })
}

/// The name of the map with id `id`.
pub fn map_name(id: u32) -> io::Result<String> {
    let mut a = Attr::new();
    a.u32(0, id);
    let fd = fd_of(bpf(BPF_MAP_GET_FD_BY_ID, &mut a)?);
    // struct bpf_map_info: name @24.
    let mut info = [0u8; 128];
    obj_info(fd.as_raw_fd(), &mut info)?;
    Ok(c_name(&info[24..40]))
}

/// The id of a loaded program.
pub fn prog_id(fd: RawFd) -> io::Result<u32> {
    let mut info = [0u8; 256];
    obj_info(fd, &mut info)?;
    Ok(u32::from_ne_bytes(info[4..8].try_into().expect("4 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_inside_the_program_and_on_the_right_instructions() {
        for v6 in [None, Some(4)] {
            for steer in [Steer::Mark, Steer::Map(3)] {
                let p = program(Ipv4Address([10, 0, 0, 2]), v6, steer);
                let pass = p.len() - 2;
                assert_eq!(p[pass].imm, XDP_PASS as i32);
                for (i, ins) in p.iter().enumerate() {
                    let class = ins.code & 0x07;
                    if class == 0x05 && ins.code != JMP_CALL && ins.code != JMP_EXIT {
                        let t = i as i64 + 1 + i64::from(ins.off);
                        assert!((0..p.len() as i64).contains(&t), "{i}: {ins:?}");
                        // Every jump lands on a label: pass, ARP, IPv6, ours.
                        assert!(t as usize == pass || ins.off >= 0, "{i}: backwards");
                    }
                }
                // The first bound check passes a runt frame.
                assert_eq!(7 + p[6].off as usize, pass);
                // The map lookups name the maps.
                let maps: Vec<i32> = p
                    .iter()
                    .filter(|i| i.code == LD_IMM64 && i.regs >> 4 == PSEUDO_MAP_FD)
                    .map(|i| i.imm)
                    .collect();
                // The IPv6 map twice: the destination's lookup, the advertised target's.
                let mut want: Vec<i32> = v6.into_iter().chain(v6).collect();
                if let Steer::Map(fd) = steer {
                    want.push(fd);
                }
                assert_eq!(maps, want);
            }
        }
    }

    /// Root is needed to load a program; CI runs as root and must not skip.
    fn root_or_skip() -> bool {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            return true;
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "loading an XDP program needs root, and CI=true forbids skipping"
        );
        eprintln!("skipped: loading an XDP program needs root");
        false
    }

    fn frame(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn ipv4(dst: [u8; 4], proto: u8) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1];
        h.extend_from_slice(&dst);
        h.extend_from_slice(&[0u8; 20]);
        h
    }

    fn arp(target: [u8; 4]) -> Vec<u8> {
        let mut a = vec![0, 1, 8, 0, 6, 4, 0, 1, 0x02, 0, 0, 0, 0, 1, 10, 0, 0, 1];
        a.extend_from_slice(&[0; 6]);
        a.extend_from_slice(&target);
        a
    }

    #[test]
    fn the_kernel_steers_only_the_servers_frames() {
        if !root_or_skip() {
            return;
        }
        let server = [192, 168, 1, 200];
        let prog = load(&program(Ipv4Address(server), None, Steer::Mark))
            .expect("the verifier accepts it");
        let run = |f: &[u8]| test_run(prog.as_raw_fd(), f).expect("test run");
        let cases: Vec<(&str, Vec<u8>, u32)> = vec![
            ("TCP to the server", frame(0x0800, &ipv4(server, 6)), XDP_TX),
            (
                "UDP to the server",
                frame(0x0800, &ipv4(server, 17)),
                XDP_TX,
            ),
            (
                "ICMP to the server",
                frame(0x0800, &ipv4(server, 1)),
                XDP_TX,
            ),
            ("ARP for the server", frame(0x0806, &arp(server)), XDP_TX),
            (
                "TCP to the host",
                frame(0x0800, &ipv4([192, 168, 1, 1], 6)),
                XDP_PASS,
            ),
            (
                "ARP for the host",
                frame(0x0806, &arp([192, 168, 1, 1])),
                XDP_PASS,
            ),
            (
                "address one bit off",
                frame(0x0800, &ipv4([192, 168, 1, 201], 6)),
                XDP_PASS,
            ),
            ("IPv6", frame(0x86dd, &[0x60; 60]), XDP_PASS),
            ("VLAN-tagged", frame(0x8100, &ipv4(server, 6)), XDP_PASS),
            (
                "IPv4 cut before the address",
                frame(0x0800, &ipv4(server, 6)[..19]),
                XDP_PASS,
            ),
            (
                "ARP cut before the target",
                frame(0x0806, &arp(server)[..27]),
                XDP_PASS,
            ),
            ("header only", frame(0x0800, &[]), XDP_PASS),
        ];
        for (what, f, want) in cases {
            assert_eq!(run(&f), want, "{what}");
        }
        // The real program redirects to the map; with no socket there, the fallback passes.
        let map = create_xskmap(1, std::process::id()).expect("map");
        let prog = load(&program(
            Ipv4Address(server),
            None,
            Steer::Map(map.as_raw_fd()),
        ))
        .expect("the verifier accepts the redirect");
        assert_eq!(
            test_run(prog.as_raw_fd(), &frame(0x0800, &ipv4(server, 6))).unwrap(),
            XDP_PASS
        );
        let info = prog_info(prog_id(prog.as_raw_fd()).unwrap()).unwrap();
        assert_eq!(info.name, PROG_NAME);
        assert_eq!(
            map_name(info.map_ids[0]).unwrap(),
            format!("{MAP_PREFIX}{}", std::process::id())
        );
    }

    fn ipv6(dst: [u8; 16]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        h.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        h.extend_from_slice(&dst);
        h.extend_from_slice(&[0u8; 8]);
        h
    }

    #[test]
    fn the_kernel_steers_ipv6_to_the_addresses_in_the_map() {
        if !root_or_skip() {
            return;
        }
        let server = [192, 168, 1, 200];
        let ours = [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 0x80,
        ];
        let group = [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0x80];
        let host = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99];
        let map = create_v6_map(std::process::id()).expect("the IPv6 map");
        v6_add(map.as_raw_fd(), &ours).unwrap();
        v6_add(map.as_raw_fd(), &group).unwrap();
        let prog = load(&program(
            Ipv4Address(server),
            Some(map.as_raw_fd()),
            Steer::Mark,
        ))
        .expect("the verifier accepts the lookup");
        let run = |f: &[u8]| test_run(prog.as_raw_fd(), f).expect("test run");
        assert_eq!(run(&frame(0x86dd, &ipv6(ours))), XDP_TX, "to our address");
        // To our group: only a solicitation for our address (the host's address alike in
        // its last 24 bits shares the group).
        let icmp = |dst: [u8; 16], kind: u8, target: [u8; 16]| {
            let mut h = ipv6(dst);
            h[6] = 58;
            h.truncate(40);
            h.extend_from_slice(&[kind, 0, 0, 0, 0x20, 0, 0, 0]);
            h.extend_from_slice(&target);
            frame(0x86dd, &h)
        };
        let mut twin = host;
        twin[13..].copy_from_slice(&ours[13..]);
        assert_eq!(run(&icmp(group, 135, ours)), XDP_TX, "solicited for ours");
        assert_eq!(
            run(&icmp(group, 135, twin)),
            XDP_PASS,
            "solicited for the host's"
        );
        assert_eq!(
            run(&frame(0x86dd, &ipv6(group))),
            XDP_PASS,
            "UDP to our group"
        );
        assert_eq!(run(&frame(0x86dd, &ipv6(host))), XDP_PASS, "to the host's");
        let mut all_nodes = group;
        all_nodes[11..].copy_from_slice(&[0, 0, 0, 0, 1]);
        assert_eq!(run(&frame(0x86dd, &ipv6(all_nodes))), XDP_PASS, "all-nodes");
        assert_eq!(
            run(&frame(0x86dd, &ipv6(ours)[..39])),
            XDP_PASS,
            "cut before the destination's end"
        );
        // A neighbour advertisement to all-nodes whose target is ours (a DAD defender's),
        // and one for the host's address.
        let na = |target: [u8; 16]| icmp(all_nodes, 136, target);
        assert_eq!(run(&na(ours)), XDP_TX, "a defender's advertisement");
        assert_eq!(run(&na(host)), XDP_PASS, "the host's neighbour's");
        let mut short = na(ours);
        short.truncate(14 + 40 + 8 + 15);
        assert_eq!(run(&short), XDP_PASS, "cut before the target's end");
        // IPv4 and ARP as before.
        assert_eq!(run(&frame(0x0800, &ipv4(server, 6))), XDP_TX);
        assert_eq!(run(&frame(0x0806, &arp(server))), XDP_TX);
        assert_eq!(run(&frame(0x0800, &ipv4([192, 168, 1, 1], 6))), XDP_PASS);
        // An address removed is the host's again; removing it twice is no error.
        v6_remove(map.as_raw_fd(), &ours).unwrap();
        v6_remove(map.as_raw_fd(), &ours).unwrap();
        assert_eq!(run(&frame(0x86dd, &ipv6(ours))), XDP_PASS);
        assert_eq!(run(&icmp(group, 135, ours)), XDP_PASS);
    }

    #[test]
    fn the_address_is_compared_as_the_frames_bytes() {
        // 192.168.1.200: the top bit of the little-endian word is set; a 32-bit move keeps
        // it from being sign-extended.
        let p = program(Ipv4Address([192, 168, 1, 200]), None, Steer::Mark);
        assert_eq!(p[3].code, ALU_MOV_K);
        assert_eq!(p[3].imm.to_ne_bytes(), [192, 168, 1, 200]);
    }
}
