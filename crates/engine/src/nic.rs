//! The boundary between the engine and a network device: one receive/transmit queue pair
//! owned by one core, and the clock.
//!
//! The engine never sees a register, a port or a file descriptor. A driver (`kernel`'s
//! e1000 and virtio-net, `host`'s TAP, the test fakes) is a type that implements [`Nic`].
//!
//! - **Queue pairs.** A `Nic` value is *one* RX/TX queue pair. A device with a queue per
//!   core hands each core its own value; nothing on the request path is shared.
//! - **Several NICs** (bonding, the bonding paper). A core that serves on a set of NICs holds one
//!   queue pair of each, wrapped as one `Nic` (`bond::BondNic`); the engine names the NIC a
//!   frame leaves from with [`TxRing::select`] (a connection's send-id) before building
//!   it, and the link monitor reads each NIC's link through [`LinkSense`].
//! - **Batched receive.** [`RxRing::burst`] returns up to a budget of frames at once;
//!   buffers are loaned to the engine and given back with [`RxRing::recycle`].
//! - **Scatter-gather transmit.** A frame is a small header written into a driver slot
//!   plus a body slice borrowed from the site image, which lives as long as the program.
//!   The body is never copied by the engine; a DMA driver points a descriptor at it.
//! - **Untrusted device memory.** Lengths and ids come from the driver's checked shadow
//!   state; `bytes` of a frame never reaches past the loaned buffer.
//! - **Batched doorbells.** [`TxRing::flush`] is called once per poll round; a driver
//!   rings its doorbell there, never per frame.

use crate::wire::EthernetAddress;

/// A received frame loaned to the engine: which driver buffer, and how many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxFrame {
    /// Driver buffer id.
    pub buf: u32,
    /// Valid bytes in the buffer.
    pub len: u32,
}

/// Receive side of a queue pair.
pub trait RxRing {
    /// Fills `out` with up to `out.len()` received frames; returns how many.
    fn burst(&mut self, out: &mut [RxFrame]) -> usize;
    /// The bytes of a loaned frame (at most `f.len`, never past the driver buffer).
    fn bytes(&self, f: &RxFrame) -> &[u8];
    /// Gives a buffer back to the device (re-posting is deferred to the next burst).
    fn recycle(&mut self, f: RxFrame);
    /// The request id another core gave this frame (network-core mode: core 0 tags each UDP
    /// protocol request with an id from its stack, the UDP paper §5). A device's frames have
    /// none, as the default says.
    fn request_tag(&self, f: &RxFrame) -> Option<u16> {
        let _ = f;
        None
    }
    /// Whether the frame's TCP checksum needs no verification: the host kernel behind a
    /// TAP with receive offloads said so (`wire::vnet`: a partial checksum from this
    /// host's memory, or one it verified). Ingress then skips the TCP checksum, and only
    /// that. A device's frames are verified, as the default says.
    fn csum_trusted(&self, f: &RxFrame) -> bool {
        let _ = f;
        false
    }
}

/// The transmit ring is full: the frame was not sent (counted by the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxFull;

/// Transmit side of a queue pair.
pub trait TxRing {
    /// A free slot of at least [`TX_HEAD_ROOM`] bytes to build the head of the next frame
    /// in, or `None` when every slot is in flight.
    fn slot(&mut self) -> Option<&mut [u8]>;
    /// Queues the frame made of the first `head_len` bytes of the slot last returned by
    /// [`slot`](Self::slot), followed by `body` (may be empty).
    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull>;
    /// Makes queued frames visible to the device: one doorbell per call at most.
    fn flush(&mut self);
    /// Queues a frame like [`post`](Self::post) whose TCP payload the device cuts into
    /// `tso.mss`-byte segments. The engine calls it only when [`NicCaps::tso_max`] is not 0;
    /// a device without the offload refuses it.
    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        let _ = (head_len, body, tso);
        Err(TxFull)
    }
    /// Whether [`post_tso_copied`](Self::post_tso_copied) works: the ring writes or copies
    /// a frame's body before `post` returns (the host's TAP, a `writev`), so the body need
    /// not outlive the call. The default: no.
    fn tso_copies(&self) -> bool {
        false
    }
    /// Queues a frame like [`post_tso`](Self::post_tso) whose body is only borrowed for the
    /// call (HTTPS: records sealed into a buffer the next segment reuses). Called only when
    /// [`tso_copies`](Self::tso_copies) says yes; the default refuses.
    fn post_tso_copied(&mut self, head_len: usize, body: &[u8], tso: Tso) -> Result<(), TxFull> {
        let _ = (head_len, body, tso);
        Err(TxFull)
    }
    /// How many frames the ring takes now before it refuses one, after reclaiming what the
    /// device has finished (and handing it what is queued, if that frees slots). The
    /// engine receives at most this many frames per burst and none while it is 0: input
    /// it could not answer waits in the receive ring (or is dropped there, by the device)
    /// instead of being read, worked on and its answers thrown away, which under a flood
    /// would throw away the answers to legitimate clients with them. The default is for a
    /// ring that never fills.
    fn room(&mut self) -> usize {
        usize::MAX
    }
    /// Bonding: the frames that follow, until the next call, leave on NIC `nic`
    /// of the set behind this ring (a connection's send-id; the engine writes that NIC's
    /// MAC as their source). A ring that is one NIC's ignores it, as the default does; a
    /// ring that carries frames to another core for sending (network-core mode) keeps the
    /// choice with each frame.
    fn select(&mut self, nic: u8) {
        let _ = nic;
    }
    /// The answer to the request tagged `tag` ([`RxRing::request_tag`]) is all posted: the
    /// core that tagged it frees the id once it has sent these frames. A device ignores it.
    fn request_done(&mut self, tag: u16) {
        let _ = tag;
    }
}

/// A NIC's link as its driver senses it (bonding's failover): virtio-net's status field,
/// e1000's STATUS.LU, a TAP's carrier. The link monitor reads it on one core every
/// `--bond-monitor-ms`; a reading may cost a register read (a VM exit), never more, and is
/// never on the request path.
pub trait LinkSense: Send {
    /// Whether the link is up now.
    fn link_up(&mut self) -> bool;
}

/// Bytes a transmit slot holds at least: Ethernet + IPv4 + TCP with options + the part of
/// an HTTP response head that shares a segment with it.
pub const TX_HEAD_ROOM: usize = 2048;

/// What a queue pair can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct NicCaps {
    /// Largest IP packet (Ethernet payload) the link carries.
    pub mtu: usize,
    /// TCP segmentation offload: the largest TCP payload one frame given to
    /// [`TxRing::post_tso`] may carry (the device cuts it into MSS-sized segments and fills
    /// their checksums). 0: no offload, every frame is one segment.
    pub tso_max: usize,
    /// The same offload for TCP over IPv6 (an Ethernet + IPv6 + TCP frame, no extension
    /// header; virtio-net's `GSO_TCPV6`): false where the device cuts IPv4 only.
    pub tso6: bool,
}

impl Default for NicCaps {
    fn default() -> Self {
        NicCaps {
            mtu: 1500,
            tso_max: 0,
            tso6: false,
        }
    }
}

impl NicCaps {
    /// The same capabilities with segmentation offload of up to `max` payload bytes.
    pub const fn with_tso(mut self, max: usize) -> NicCaps {
        self.tso_max = max;
        self
    }

    /// The same capabilities, segmentation offload also over IPv6 (within `tso_max`).
    pub const fn with_tso6(mut self) -> NicCaps {
        self.tso6 = true;
        self
    }
}

/// How a device segments one frame posted with [`TxRing::post_tso`]: an Ethernet + IPv4 +
/// TCP frame (or, on a device with [`NicCaps::tso6`], Ethernet + IPv6 + TCP: its
/// EtherType says which) whose payload may exceed one segment. The IP length covers the
/// whole frame; the TCP checksum field holds the folded sum of the pseudo-header (with the
/// whole TCP length), not complemented, as for a partial checksum (virtio-net
/// `NEEDS_CSUM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tso {
    /// Payload bytes per segment (the connection's MSS).
    pub mss: u16,
    /// Where the TCP header starts (Ethernet + IP header bytes).
    pub l4_offset: u16,
    /// Bytes of Ethernet + IP + TCP header at the start of the frame.
    pub header_len: u16,
}

/// One receive/transmit queue pair of a network device, owned by one core.
pub trait Nic {
    /// Receive side.
    type Rx: RxRing;
    /// Transmit side.
    type Tx: TxRing;
    /// Both sides at once, so a reply can be built while a received frame is borrowed.
    fn split(&mut self) -> (&mut Self::Rx, &mut Self::Tx);
    /// The station address frames are sent from and received for.
    fn mac(&self) -> EthernetAddress;
    /// Capabilities.
    fn caps(&self) -> NicCaps {
        NicCaps::default()
    }
    /// The queue pair's own counters, for the stats board (zero where it keeps none).
    fn counters(&self) -> NicCounters {
        NicCounters::default()
    }
}

/// Counters a queue pair may keep about itself (the many-core work's live measurements): ring fill
/// levels and the device's own work. Zero means "not kept". (The network core's dispatch
/// counters are `cores::DispatchCounters`.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NicCounters {
    /// Slots of the receive ring (the CLIST on an HTTP core).
    pub rx_ring_slots: u64,
    /// Most receive-ring slots full at once.
    pub rx_ring_high: u64,
    /// Slots of the transmit ring (the DLIST on an HTTP core).
    pub tx_ring_slots: u64,
    /// Most transmit-ring slots full at once.
    pub tx_ring_high: u64,
    /// Device: doorbell writes (register writes that make the device look: virtio
    /// notifications, e1000 RDT/TDT). Each is a VM exit under virtualisation; on the
    /// bare machine's request path they are the only register accesses.
    pub doorbells: u64,
    /// Device: of which for the receive ring.
    pub rx_doorbells: u64,
    /// Device: flushes that needed no doorbell (the device said it was still working).
    pub doorbells_suppressed: u64,
    /// Device: frames received from the device.
    pub device_rx_frames: u64,
    /// Device: frames queued to the device.
    pub device_tx_frames: u64,
    /// Device: receive completions with a bad id, length or error bits (dropped).
    pub device_rx_bad: u64,
    /// Device: transmit completions with a bad id (ignored).
    pub device_tx_bad: u64,
    /// Device: transmits refused because no descriptor was free.
    pub device_tx_full: u64,
    /// The NIC's own statistics registers (Intel's GPRC, GORC, GPTC, GOTC, MPC, RNBC,
    /// CRCERRS; read by the driver about once a second, clear on read, added up in 64
    /// bits), counted by the queue pair that reads them, once per device. Zero for a
    /// device that has none (virtio-net).
    pub hw_rx_frames: u64,
    /// Of the NIC's registers: octets of those frames (GORC).
    pub hw_rx_octets: u64,
    /// Of the NIC's registers: good frames it sent (GPTC).
    pub hw_tx_frames: u64,
    /// Of the NIC's registers: octets of those frames (GOTC).
    pub hw_tx_octets: u64,
    /// Of the NIC's registers: frames dropped for want of room in its packet buffer (MPC).
    pub hw_rx_missed: u64,
    /// Of the NIC's registers: frames that found no free receive descriptor (RNBC).
    pub hw_rx_no_buffer: u64,
    /// Of the NIC's registers: frames received with a bad CRC (CRCERRS).
    pub hw_rx_crc_errors: u64,
}

/// Time as the platform knows it.
pub trait Clock {
    /// Monotonic nanoseconds since an arbitrary start (TSC on the bare machine).
    fn now_ns(&self) -> u64;
    /// Wall-clock seconds since the Unix epoch, for the `Date` header.
    fn unix_secs(&self) -> u64;
}
