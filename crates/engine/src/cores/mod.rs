//! Many cores: how engine instances on several cores share one machine without
//! locks. Platform-neutral and `no_std`: the kernel and the host run the same code, each
//! with its own way to start a thread of execution per core.
//!
//! - [`netcore`]: the papers' design. Core 0 alone touches the NIC; it answers ARP/ICMP,
//!   admits SYNs and picks the HTTP core round robin, and forwards every later frame of a
//!   connection to that core's receive ring (CLIST); HTTP cores put frames on their send
//!   ring (DLIST), which core 0 drains onto the NIC. An HTTP core runs the ordinary
//!   [`Server`](crate::server::Server) over a ring-backed `Nic`.
//! - Per-queue mode needs nothing here: every core runs a `Server` over its own NIC queue
//!   pair; the device's flow hash keeps a connection on one queue.
//! - [`board`]: live measurements published per core and read by whichever core serves
//!   `/.well-known/bareweb/stats`, beside the counters the platform keeps outside the
//!   engine (AF_XDP's `XDP_STATISTICS`, [`crate::stats::platform`]).
//! - [`challenge`]: ACME's HTTP-01 answers as every core serves them, published by the
//!   platform's ACME client in a lock-free table.
//! - [`plan`]: the mode, each core's role and server, and the network core's wiring,
//!   decided in one place for both platforms.
//! - [`run`]: the per-core loop (poll, measure, publish, idle) both platforms share, and
//!   the idle policy (spin, announce, sleep) written once over each platform's steps.
//! - [`replay`]: sending a frame built away from the device (a DLIST slot, a runner's
//!   batch) on the device, without copying its body.

pub mod board;
pub mod challenge;
// Under `cfg(loom)` (the ring's model test) the ring lends no references, only closures.
#[cfg(not(loom))]
pub mod netcore;
pub mod pages;
#[cfg(not(loom))]
pub mod plan;
pub mod replay;
pub mod run;

use crate::bond::BondNic;
use crate::nic::{Nic, RxRing, TxRing};
use crate::tcp::port_table::Peer;

/// A core's queue pair as the per-core loop ([`run`]) drives it: a [`Nic`], plus what the
/// network-core mode needs from it. A device's queue pair implements it with the defaults
/// (`impl CoreQueue for Tap {}`); only the network-core rings override them.
pub trait CoreQueue: Nic {
    /// The core's server freed these connections in its last round (client, frames it had
    /// received then). An HTTP core's rings tell core 0, which then forgets the mapping.
    fn connections_closed(&mut self, closed: &[(Peer, u64)]) {
        let _ = closed;
    }
    /// The core's server now serves on `ip`/`prefix_len` (with a router or not): an
    /// address from DHCP. The network core classifies frames by address and follows.
    fn set_address(&mut self, ip: crate::wire::Ipv4Address, prefix_len: u8, gateway: bool) {
        let _ = (ip, prefix_len, gateway);
    }
    /// The network core's dispatch and send-task counters (zero elsewhere).
    fn dispatch_counters(&self) -> DispatchCounters {
        DispatchCounters::default()
    }
}

/// A bonded NIC set is driven as a device's queue pair (the defaults): the trait lives here,
/// above `bond`, so the bond knows nothing of cores.
impl<R: RxRing, T: TxRing> CoreQueue for BondNic<R, T> {}

/// The network core's work besides its server's (the live measurements): frames
/// dispatched to HTTP cores and drained from them, the connection map; zero elsewhere. A
/// parallel runner's thread reports its send time as `drain_ns` (the papers' send task).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchCounters {
    /// Frames put on HTTP cores' receive rings.
    pub dispatched: u64,
    /// Frames taken from HTTP cores' send rings onto the device.
    pub drained: u64,
    /// Frames dropped because an HTTP core's receive ring was full.
    pub dispatch_ring_full: u64,
    /// Frames that would open a connection dropped because no core could take it (the
    /// connection map had no entry left).
    pub dispatch_no_core: u64,
    /// SYNs no HTTP core had room for, answered by the network core with a SYN cookie.
    pub dispatch_cookie_syns: u64,
    /// Connections whose core is known now.
    pub conn_map: u64,
    /// Most connections known at once.
    pub conn_map_high: u64,
    /// Map entries dropped after silence (their close note was lost).
    pub conn_map_expired: u64,
    /// Time spent dispatching received frames (part of RCV on the network core).
    pub dispatch_ns: u64,
    /// Time spent moving frames from send rings to the device (the papers' send task).
    pub drain_ns: u64,
    /// Connection-closed notes lost because the note ring was full.
    pub notes_lost: u64,
    /// Requests of the stateless UDP protocol handed to HTTP cores.
    pub udp_dispatched: u64,
    /// UDP requests dropped because core 0's request-id stack was empty.
    pub udp_no_id: u64,
    /// Most request ids out at once (the UDP paper's Fig. 10, max parallel).
    pub udp_ids_max: u64,
    /// UDP requests whose answer core 0 has sent (ids given back).
    pub udp_done: u64,
    /// Sum of their times from arrival at core 0 to the answer's last frame on the NIC.
    pub udp_time_sum_ns: u64,
    /// Longest such time.
    pub udp_time_max_ns: u64,
}
