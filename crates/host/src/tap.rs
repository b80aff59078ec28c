//! A TAP device as one engine queue pair.
//!
//! Receive: `read(2)` on a non-blocking fd into a fixed pool of 2 KiB buffers (of 64 KiB
//! with receive offloads), up to the burst budget. Transmit: `writev(2)` of three iovecs, a virtio-net header, the head
//! slot and the body slice of the site image, so the body is never copied in user space
//! (the kernel copies it into its skb, as it must for a TAP).
//!
//! The device is opened with `IFF_VNET_HDR`: every frame read or written starts with a
//! `struct virtio_net_hdr` (10 bytes). That is how a TAP takes TCP segmentation offload:
//! the engine may post one frame of up to [`TSO_MAX`] payload bytes with `gso_type`
//! TCPV4 and a partial checksum, and the kernel cuts it into MSS-sized segments (or hands
//! it whole to a local socket): one system call instead of one per 1460 bytes.
//!
//! Towards us, a server's TAP enables no offload (and [`Tap::open`] clears any a
//! persistent device kept from its last user): its frames are single segments with
//! complete checksums (it receives small requests; a frame a peer's TCP sent whole is
//! segmented by the kernel, in the sender's context). The bare load client's TAP enables
//! receive offloads ([`Tap::enable_rx_offload`]: `TUNSETOFFLOAD` with `TUN_F_CSUM |
//! TUN_F_TSO4`): the kernel then hands it a server's TSO/GSO super-frames whole (up to
//! 64 KiB: one `read` instead of one per 1460 bytes, and no segmenting charged to the
//! server) and frames from this host's memory with a partial checksum (`NEEDS_CSUM`). The
//! virtio-net header of each frame is checked (`wire::vnet::parse_rx`: a lying header is
//! counted and its frame dropped), and a frame it vouches for is marked for the engine
//! ([`RxRing::csum_trusted`]), whose ingress then skips the TCP checksum, and only that.
//!
//! System calls through `rustix` (open, read, writev, poll: safe, on owned descriptors);
//! the `unsafe` left is `TUNSETIFF` and `TUNSETOFFLOAD`, ioctls whose argument rustix
//! cannot type for us (its `ioctl` is `unsafe` for that reason).

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::fs::{Mode, OFlags};

use bareweb_engine::nic::{Nic, NicCaps, RxFrame, RxRing, Tso, TxFull, TxRing, TX_HEAD_ROOM};
use bareweb_engine::wire::{vnet, EthernetAddress};

/// Size of one receive buffer (a full Ethernet frame without FCS is 1514 bytes).
const RX_BUF: usize = 2048;
/// Receive buffers in the pool.
const RX_POOL: usize = 64;
/// Size of one receive buffer with receive offloads: the virtio-net header, an Ethernet
/// header and the largest IPv4 packet (a 64 KiB super-frame).
const RX_BIG: usize = VNET_HDR_LEN + 14 + 65_535;
/// Receive buffers in the pool with receive offloads (2 MiB): a burst of the engine's
/// client takes at most 32 frames, each given back before the next burst.
const RX_BIG_POOL: usize = 32;

const IFF_TAP: i16 = 0x0002;
const IFF_NO_PI: i16 = 0x1000;
const IFF_MULTI_QUEUE: i16 = 0x0100;
const IFF_VNET_HDR: i16 = 0x4000;
/// Interface names hold at most 15 bytes and a NUL.
const IFNAMSIZ: usize = 16;

/// `struct virtio_net_hdr` without `num_buffers`: the TAP's default header size.
const VNET_HDR_LEN: usize = 10;
/// virtio_net_hdr.flags: the checksum from `csum_start` is to be completed by the kernel.
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
/// virtio_net_hdr.gso_type: TCP over IPv4 segmentation.
const VIRTIO_NET_HDR_GSO_TCPV4: u8 = 1;
/// virtio_net_hdr.gso_type: TCP over IPv6 segmentation.
const VIRTIO_NET_HDR_GSO_TCPV6: u8 = 4;
/// Largest TCP payload of one offloaded frame: the IPv4 total length (16 bits) must hold
/// it with a 20-byte IPv4 header and up to 60 bytes of TCP header.
pub const TSO_MAX: usize = 65535 - 20 - 60;
/// `_IOW('T', 202, int)` (linux/if_tun.h); the kernel reads and writes a `struct ifreq`.
const TUNSETIFF: rustix::ioctl::Opcode = 0x4004_54ca;
/// `_IOW('T', 208, unsigned int)`: the offloads the reader takes (the argument by value).
const TUNSETOFFLOAD: rustix::ioctl::Opcode = 0x4004_54d0;
/// TUNSETOFFLOAD: the reader takes partial checksums (every other offload needs it).
const TUN_F_CSUM: usize = 0x01;
/// TUNSETOFFLOAD: the reader takes TCP-over-IPv4 super-frames.
const TUN_F_TSO4: usize = 0x02;

/// `struct ifreq` with its union as `ifr_flags`: 40 bytes.
#[repr(C)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    flags: i16,
    _pad: [u8; 22],
}

/// Receive side of the TAP.
pub struct TapRx {
    fd: OwnedFd,
    /// The pool: `pool` buffers of `buf_size` bytes, one after the other.
    bufs: Vec<u8>,
    buf_size: usize,
    pool: usize,
    free: Vec<u32>,
    /// Receive offloads are on: headers are read and checked.
    offload: bool,
    /// Per buffer: its frame's TCP checksum was vouched for by the kernel.
    trusted: Vec<bool>,
    /// At most one `read` per burst ([`Tap::set_one_read_per_burst`]).
    one_read: bool,
    /// Frames read.
    pub frames: u64,
    /// `read`s that found the device empty.
    pub empty_reads: u64,
    /// Counters of receive offloads (zero without them).
    pub offload_counts: RxOffloadCounts,
}

/// What a TAP with receive offloads received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxOffloadCounts {
    /// Super-frames (GSO: several segments under one header).
    pub gso_frames: u64,
    /// Frames whose TCP checksum the kernel vouched for (partial, or verified), the
    /// super-frames among them.
    pub csum_trusted: u64,
    /// Frames dropped for a virtio-net header that lied (`wire::vnet::parse_rx`).
    pub bad_header: u64,
}

/// Transmit side of the TAP.
pub struct TapTx {
    fd: OwnedFd,
    vnet: [u8; VNET_HDR_LEN],
    slot: Box<[u8; TX_HEAD_ROOM]>,
    /// Frames written with segmentation offload.
    pub tso_frames: u64,
    /// Frames written.
    pub frames: u64,
    /// Writes the kernel refused (counted, frame dropped).
    pub errors: u64,
}

/// A TAP device opened as one queue pair.
pub struct Tap {
    name: String,
    mac: EthernetAddress,
    tso: bool,
    rx: TapRx,
    tx: TapTx,
}

impl Tap {
    /// Opens (creating if needed) the TAP device `name`. Needs CAP_NET_ADMIN unless the
    /// device was made persistent for this user (`ip tuntap add ... user U`).
    pub fn open(name: &str, mac: EthernetAddress) -> io::Result<Tap> {
        Self::open_flags(name, mac, IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)
    }

    /// Opens `queues` queues of the multi-queue TAP device `name` (IFF_MULTI_QUEUE: one fd
    /// per queue). The kernel spreads received flows over the queues by their hash and
    /// keeps a flow on the queue that last sent for it, so each queue is one core's
    /// queue pair (per-queue mode). Fails if the device exists without multi-queue.
    pub fn open_multi(name: &str, mac: EthernetAddress, queues: usize) -> io::Result<Vec<Tap>> {
        (0..queues.max(1))
            .map(|_| {
                Self::open_flags(
                    name,
                    mac,
                    IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE,
                )
            })
            .collect()
    }

    fn open_flags(name: &str, mac: EthernetAddress, flags: i16) -> io::Result<Tap> {
        if name.is_empty() || name.len() >= IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "interface name must be 1..15 bytes",
            ));
        }
        let fd = rustix::fs::open(
            "/dev/net/tun",
            OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut req = IfReq {
            name: [0; IFNAMSIZ],
            flags,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which IfReq lays out (name,
        // flags, padding to 40 bytes); `req` lives across the call.
        unsafe {
            let set = rustix::ioctl::Updater::<TUNSETIFF, IfReq>::new(&mut req);
            rustix::ioctl::ioctl(&fd, set)?;
        }
        // None towards us, whatever the device's last user (a persistent TAP keeps them)
        // asked: the frames we read are single segments with complete checksums.
        set_offload(&fd, 0)?;
        let len = req.name.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        let actual = String::from_utf8_lossy(&req.name[..len]).into_owned();
        let tx_fd = fd.try_clone()?;
        Ok(Tap {
            name: actual,
            mac,
            tso: true,
            rx: TapRx {
                fd,
                bufs: vec![0; RX_BUF * RX_POOL],
                buf_size: RX_BUF,
                pool: RX_POOL,
                free: (0..RX_POOL as u32).collect(),
                offload: false,
                trusted: vec![false; RX_POOL],
                one_read: false,
                frames: 0,
                empty_reads: 0,
                offload_counts: RxOffloadCounts::default(),
            },
            tx: TapTx {
                fd: tx_fd,
                vnet: [0; VNET_HDR_LEN],
                slot: Box::new([0; TX_HEAD_ROOM]),
                tso_frames: 0,
                frames: 0,
                errors: 0,
            },
        })
    }

    /// Whether the engine is offered TCP segmentation offload (on by default); off makes
    /// every frame one segment, as on a device without the offload.
    pub fn set_tso(&mut self, on: bool) {
        self.tso = on;
    }

    /// One `read(2)` per receive burst (off by default: a burst reads until the device is
    /// empty). Every `read` is a system call, and the one that finds the device empty is a
    /// whole system call (~0.5 µs here) spent learning nothing: a loop that polls again
    /// straight after its work (the server's IMT rounds, the bare client's load loop) reads
    /// what arrived meanwhile on its next burst anyway. Reading until empty cost a
    /// keep-alive server one empty read per request (two `read`s per `writev`); one read
    /// per burst makes an empty read only when nothing has arrived. A loop that must empty
    /// the device in one go (Boa's, the OpenMP paper's runners) keeps the default.
    pub fn set_one_read_per_burst(&mut self, on: bool) {
        self.rx.one_read = on;
    }

    /// `read`s that found the device empty, so far.
    pub fn empty_reads(&self) -> u64 {
        self.rx.empty_reads
    }

    /// Receive offloads (the bare load client's TAP): `TUNSETOFFLOAD` with `TUN_F_CSUM |
    /// TUN_F_TSO4`, so the kernel hands TCP super-frames of up to 64 KiB whole and frames
    /// from this host with a partial checksum; the receive pool becomes
    /// [`RX_BIG_POOL`] buffers of 64 KiB. Call it before the first frame is received.
    pub fn enable_rx_offload(&mut self) -> io::Result<()> {
        set_offload(&self.rx.fd, TUN_F_CSUM | TUN_F_TSO4)?;
        let rx = &mut self.rx;
        rx.bufs = vec![0; RX_BIG * RX_BIG_POOL];
        rx.buf_size = RX_BIG;
        rx.pool = RX_BIG_POOL;
        rx.free = (0..RX_BIG_POOL as u32).collect();
        rx.trusted = vec![false; RX_BIG_POOL];
        rx.offload = true;
        Ok(())
    }

    /// What the receive offloads brought (zero without them).
    pub fn rx_offload_counts(&self) -> RxOffloadCounts {
        self.rx.offload_counts
    }

    /// The interface name the kernel gave.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The two rings, for wrapping (fault injection); `wait` is then [`TapRx::wait`].
    pub fn into_rings(self) -> (TapRx, TapTx) {
        (self.rx, self.tx)
    }

    /// The receive side and `senders` transmit sides, each writing through its own
    /// duplicate of the fd (the shared-server runners: every thread writes its own
    /// frames; a TAP takes whole frames from concurrent writers).
    pub fn into_senders(self, senders: usize) -> io::Result<(TapRx, Vec<TapTx>)> {
        let mut txs = Vec::with_capacity(senders.max(1));
        for _ in 1..senders.max(1) {
            txs.push(self.tx.try_clone()?);
        }
        txs.insert(0, self.tx);
        Ok((self.rx, txs))
    }

    /// Transmit counters (frames, errors).
    pub fn tx_counts(&self) -> (u64, u64) {
        (self.tx.frames, self.tx.errors)
    }

    /// Waits up to `us` microseconds for a frame to arrive.
    pub fn wait_us(&self, us: u64) {
        self.rx.wait_us(us)
    }

    /// The receive side's descriptor (to poll it with others).
    pub fn rx_fd(&self) -> std::os::fd::RawFd {
        self.rx.raw_fd()
    }
}

/// `TUNSETOFFLOAD`: the offloads the reader of `fd`'s device takes (`TUN_F_*` flags).
fn set_offload(fd: &OwnedFd, flags: usize) -> io::Result<()> {
    // SAFETY: TUNSETOFFLOAD takes an unsigned int by value (no pointer), and the flags are
    // ones linux/if_tun.h defines.
    unsafe {
        let set = rustix::ioctl::IntegerSetter::<TUNSETOFFLOAD>::new_usize(flags);
        rustix::ioctl::ioctl(fd, set)?;
    }
    Ok(())
}

impl TapRx {
    /// The queue's descriptor (to poll it with others).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }

    /// Waits up to `us` microseconds for a frame to arrive (`ppoll`, finer than `wait`).
    pub fn wait_us(&self, us: u64) {
        crate::wake::wait_fds_us(&[self.fd.as_raw_fd()], us);
    }

    /// Waits up to `timeout_ms` (negative: forever) for a frame to arrive.
    pub fn wait(&self, timeout_ms: i32) {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let t = (timeout_ms >= 0).then(|| Timespec {
            tv_sec: i64::from(timeout_ms / 1000),
            tv_nsec: i64::from(timeout_ms % 1000) * 1_000_000,
        });
        let _ = poll(&mut [PollFd::new(&self.fd, PollFlags::IN)], t.as_ref());
    }
}

impl RxRing for TapRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        // Reads, not frames, are bounded: a malformed frame still costs one.
        let reads = if self.one_read { 1 } else { out.len() };
        let mut n = 0;
        for _ in 0..reads {
            if n == out.len() {
                break;
            }
            let Some(id) = self.free.pop() else { break };
            let at = id as usize * self.buf_size;
            let Some(buf) = self.bufs.get_mut(at..at + self.buf_size) else {
                break;
            };
            let r = match rustix::io::read(&self.fd, &mut *buf) {
                Ok(n) if n > 0 => n,
                _ => {
                    self.empty_reads += 1;
                    self.free.push(id);
                    break;
                }
            };
            // The frame follows the virtio-net header.
            let Some(len) = r.checked_sub(VNET_HDR_LEN) else {
                self.free.push(id);
                continue;
            };
            if self.offload {
                // What the kernel says of the frame, checked against it.
                let (hdr, frame) = buf[..r].split_at(VNET_HDR_LEN);
                let c = &mut self.offload_counts;
                match vnet::parse_rx(hdr, frame) {
                    Ok(info) => {
                        c.gso_frames += u64::from(info.gso_size > 0);
                        c.csum_trusted += u64::from(info.csum_trusted);
                        self.trusted[id as usize] = info.csum_trusted;
                    }
                    Err(_) => {
                        c.bad_header += 1;
                        self.free.push(id);
                        continue;
                    }
                }
            }
            out[n] = RxFrame {
                buf: id,
                len: len as u32,
            };
            self.frames += 1;
            n += 1;
        }
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        if f.buf as usize >= self.pool {
            return &[];
        }
        let at = f.buf as usize * self.buf_size;
        let len = (f.len as usize).min(self.buf_size - VNET_HDR_LEN);
        self.bufs
            .get(at + VNET_HDR_LEN..at + VNET_HDR_LEN + len)
            .unwrap_or(&[])
    }

    fn recycle(&mut self, f: RxFrame) {
        if (f.buf as usize) < self.pool && self.free.len() < self.pool {
            self.free.push(f.buf);
        }
    }

    fn csum_trusted(&self, f: &RxFrame) -> bool {
        self.offload && self.trusted.get(f.buf as usize).copied().unwrap_or(false)
    }
}

impl TapTx {
    /// Another transmit side on a duplicate of the fd, with its own slot and counters.
    pub fn try_clone(&self) -> io::Result<TapTx> {
        Ok(TapTx {
            fd: self.fd.try_clone()?,
            vnet: [0; VNET_HDR_LEN],
            slot: Box::new([0; TX_HEAD_ROOM]),
            tso_frames: 0,
            frames: 0,
            errors: 0,
        })
    }
}

impl TxRing for TapTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.slot[..])
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        self.vnet = [0; VNET_HDR_LEN];
        self.write(head_len, body)
    }

    fn post_tso(&mut self, head_len: usize, body: &'static [u8], tso: Tso) -> Result<(), TxFull> {
        self.post_tso_copied(head_len, body, tso)
    }

    fn tso_copies(&self) -> bool {
        true
    }

    fn post_tso_copied(&mut self, head_len: usize, body: &[u8], tso: Tso) -> Result<(), TxFull> {
        // The frame's EtherType says which TCP the kernel cuts.
        let ipv6 = self.slot.get(12..14) == Some(&[0x86, 0xdd][..]);
        self.vnet = tso_header(tso, ipv6);
        self.write(head_len, body)?;
        self.tso_frames += 1;
        Ok(())
    }

    fn flush(&mut self) {}
}

/// The virtio-net header asking the TAP to cut a frame into `tso.mss`-byte TCP segments
/// (over IPv6 when `ipv6`).
fn tso_header(tso: Tso, ipv6: bool) -> [u8; VNET_HDR_LEN] {
    let [h0, h1] = tso.header_len.to_le_bytes();
    let [m0, m1] = tso.mss.to_le_bytes();
    let [s0, s1] = tso.l4_offset.to_le_bytes();
    // csum_offset: the TCP checksum field, 16 bytes into the TCP header.
    [
        VIRTIO_NET_HDR_F_NEEDS_CSUM,
        if ipv6 {
            VIRTIO_NET_HDR_GSO_TCPV6
        } else {
            VIRTIO_NET_HDR_GSO_TCPV4
        },
        h0,
        h1,
        m0,
        m1,
        s0,
        s1,
        16,
        0,
    ]
}

impl TapTx {
    /// `writev` of the virtio-net header in `self.vnet`, the head slot and the body (the
    /// kernel copies them all before it returns: the body need not outlive the call).
    fn write(&mut self, head_len: usize, body: &[u8]) -> Result<(), TxFull> {
        let head_len = head_len.min(TX_HEAD_ROOM);
        let iov = [
            IoSlice::new(&self.vnet),
            IoSlice::new(&self.slot[..head_len]),
            IoSlice::new(body),
        ];
        let cnt = if body.is_empty() { 2 } else { 3 };
        if rustix::io::writev(&self.fd, &iov[..cnt]).is_err() {
            self.errors += 1;
            return Err(TxFull);
        }
        self.frames += 1;
        Ok(())
    }
}

impl Nic for Tap {
    type Rx = TapRx;
    type Tx = TapTx;

    fn split(&mut self) -> (&mut TapRx, &mut TapTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        let caps = NicCaps::default().with_tso(if self.tso { TSO_MAX } else { 0 });
        if self.tso {
            caps.with_tso6()
        } else {
            caps
        }
    }
}
