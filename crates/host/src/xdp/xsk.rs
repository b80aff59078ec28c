//! One AF_XDP socket as one engine queue pair: its UMEM (a fixed area of 4 KiB frames,
//! the first half lent to the kernel for receiving, the second half ours for sending) and
//! its four rings.
//!
//! - **Receive** ([`XskRx`]): a burst reads RX descriptors (a frame and its length) and
//!   lends those frames to the engine as they are, no copy; recycled frames go back on the
//!   fill ring in one batch at the next burst (one release store), and the kernel is woken
//!   (`recvfrom`) only when it set `XDP_RING_NEED_WAKEUP` on the fill ring.
//! - **Transmit** ([`XskTx`]): the engine builds a frame's head in a free TX frame (the
//!   slot) and the body slice from the site image is copied after it — AF_XDP takes one
//!   contiguous buffer per frame, and the site image is not UMEM. Descriptors are
//!   published once per flush, and the kernel is kicked (`sendto`) only when the TX ring
//!   asks for it; the completion ring is drained in batches when free frames run short.
//! - No allocation after start: frame lists are vectors sized once.
//!
//! Descriptors come from the kernel (or, in zero-copy mode, a driver) and are checked
//! anyway: a frame outside its half of the UMEM, or a length past its frame, is counted
//! and dropped, never followed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use bareweb_engine::cores::CoreQueue;
use bareweb_engine::nic::{Nic, NicCaps, NicCounters, RxFrame, RxRing, TxFull, TxRing};
use bareweb_engine::wire::EthernetAddress;

use super::ring::{Mmap, Ring};

/// Bytes of one UMEM frame (a chunk): room for a whole frame after the kernel's 256-byte
/// XDP headroom, and a transmit slot of at least `TX_HEAD_ROOM`.
pub const FRAME: u64 = 4096;
/// Frames lent for receiving, and the size of the fill and RX rings.
pub const RX_FRAMES: u32 = 2048;
/// Frames for sending, and the size of the TX and completion rings.
pub const TX_FRAMES: u32 = 2048;
/// Kicks of the kernel per flush at most (a copy-mode `sendto` sends a batch of frames).
const MAX_KICKS: u32 = 64;

/// How a socket is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bind {
    /// The driver reads and writes the UMEM directly.
    ZeroCopy,
    /// The kernel copies frames between its buffers and the UMEM.
    Copy,
}

/// Everything a socket needs to open.
#[derive(Debug, Clone, Copy)]
pub struct SocketSpec {
    pub ifindex: u32,
    pub queue: u32,
    pub bind: Bind,
    pub mac: EthernetAddress,
    /// Busy polling: microseconds (`SO_BUSY_POLL`), 0 for none. The socket then also
    /// prefers busy polling (`SO_PREFER_BUSY_POLL`) with a budget of one receive burst,
    /// and an empty receive burst asks the kernel (`recvfrom`), which runs the queue's
    /// NAPI poll in this thread.
    pub busy_poll_us: u32,
}

/// `SO_BUSY_POLL_BUDGET`: frames per busy poll (the engine's receive burst).
const BUSY_POLL_BUDGET: u32 = 64;

/// What the kernel counts about a socket (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames for the socket the kernel dropped (any reason: the two below, no memory).
    pub rx_dropped: u64,
    /// Frames dropped because the RX ring was full (we did not read fast enough).
    pub rx_ring_full: u64,
    /// Times the kernel found no frame on the fill ring (we did not refill fast enough).
    pub rx_fill_empty: u64,
    /// Descriptors on the RX side the kernel found invalid.
    pub rx_invalid: u64,
    /// Descriptors we posted on the TX ring that the kernel refused (outside the UMEM,
    /// too long).
    pub tx_invalid: u64,
    /// Times the kernel looked at the TX ring and found it empty.
    pub tx_ring_empty: u64,
}

impl XskStats {
    /// The counters with the kernel's names, in its order.
    pub fn named(&self) -> [(&'static str, u64); 6] {
        [
            ("rx_dropped", self.rx_dropped),
            ("rx_invalid_descs", self.rx_invalid),
            ("tx_invalid_descs", self.tx_invalid),
            ("rx_ring_full", self.rx_ring_full),
            ("rx_fill_ring_empty_descs", self.rx_fill_empty),
            ("tx_ring_empty_descs", self.tx_ring_empty),
        ]
    }
}

fn sockopt<T>(fd: RawFd, name: libc::c_int, v: &T) -> io::Result<()> {
    sockopt_level(fd, libc::SOL_XDP, name, v)
}

fn sockopt_level<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: passes a pointer to a live `T` and its size; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn getsockopt<T: Default>(fd: RawFd, name: libc::c_int) -> io::Result<T> {
    let mut v = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into a live `T`.
    let r =
        unsafe { libc::getsockopt(fd, libc::SOL_XDP, name, (&mut v as *mut T).cast(), &mut len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

struct Offsets(libc::xdp_mmap_offsets);

impl Default for Stats {
    fn default() -> Self {
        // SAFETY: xdp_statistics is plain integers; all-zero is a valid value.
        Stats(unsafe { std::mem::zeroed() })
    }
}

struct Stats(libc::xdp_statistics);

/// The step of socket set-up that failed, and the system's error: the caller words it
/// for the user (see `super::explain`).
#[derive(Debug)]
pub struct SetupError {
    pub step: &'static str,
    pub err: io::Error,
}

fn step<T>(step: &'static str, r: io::Result<T>) -> Result<T, SetupError> {
    r.map_err(|err| SetupError { step, err })
}

/// The socket, shared by the two sides (each side's ring mappings are its own).
struct Socket {
    fd: OwnedFd,
    umem: Mmap,
}

/// Receive side: the RX ring, the fill ring and the receive frames.
pub struct XskRx {
    sock: Arc<Socket>,
    rx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    /// Frames back from the engine, to go on the fill ring at the next burst.
    free: Vec<u32>,
    /// Where the kernel put the frame in each receive frame (its headroom).
    offset: Vec<u16>,
    counters: NicCounters,
    /// Busy polling: an empty burst asks the kernel to poll the queue.
    busy: bool,
}

/// Transmit side: the TX ring, the completion ring and the send frames.
pub struct XskTx {
    sock: Arc<Socket>,
    tx: Ring<libc::xdp_desc>,
    comp: Ring<u64>,
    free: Vec<u32>,
    /// The frame last handed out by `slot`, not yet posted.
    pending: Option<u32>,
    /// Descriptors pushed since the last flush.
    queued: u32,
    pub counters: NicCounters,
    /// `sendto` kicks the kernel refused for a reason other than "busy, try later".
    pub kick_errors: u64,
}

/// One AF_XDP socket: one queue of an interface.
pub struct XskQueue {
    mac: EthernetAddress,
    queue: u32,
    bind: Bind,
    rx: XskRx,
    tx: XskTx,
}

impl XskQueue {
    /// Opens a socket on `spec.queue` of `spec.ifindex`, with its UMEM, rings and fill
    /// ring full, bound with `XDP_USE_NEED_WAKEUP` in the given mode.
    pub fn open(spec: SocketSpec) -> Result<XskQueue, SetupError> {
        // SAFETY: plain socket(2); the result is checked.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(SetupError {
                step: "socket",
                err: io::Error::last_os_error(),
            });
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let frames = u64::from(RX_FRAMES + TX_FRAMES);
        let umem = step("umem", Mmap::anonymous((frames * FRAME) as usize))?;
        let raw = fd.as_raw_fd();
        // SAFETY: xdp_umem_reg is plain integers; all-zero then filled in.
        let mut reg: libc::xdp_umem_reg = unsafe { std::mem::zeroed() };
        reg.addr = umem.ptr() as u64;
        reg.len = umem.len() as u64;
        reg.chunk_size = FRAME as u32;
        step("umem", sockopt(raw, libc::XDP_UMEM_REG, &reg))?;
        step("rings", sockopt(raw, libc::XDP_UMEM_FILL_RING, &RX_FRAMES))?;
        step(
            "rings",
            sockopt(raw, libc::XDP_UMEM_COMPLETION_RING, &TX_FRAMES),
        )?;
        step("rings", sockopt(raw, libc::XDP_RX_RING, &RX_FRAMES))?;
        step("rings", sockopt(raw, libc::XDP_TX_RING, &TX_FRAMES))?;
        let off = step("rings", getsockopt::<Offsets>(raw, libc::XDP_MMAP_OFFSETS))?.0;
        let map = |o: &libc::xdp_ring_offset, size: u32, desc: usize, pgoff: u64| {
            let len = o.desc as usize + size as usize * desc;
            step("rings", Mmap::ring(raw, len, pgoff))
        };
        let dsz = std::mem::size_of::<libc::xdp_desc>();
        let rx = Ring::new(
            map(&off.rx, RX_FRAMES, dsz, libc::XDP_PGOFF_RX_RING as u64)?,
            &off.rx,
            RX_FRAMES,
        );
        let tx = Ring::new(
            map(&off.tx, TX_FRAMES, dsz, libc::XDP_PGOFF_TX_RING as u64)?,
            &off.tx,
            TX_FRAMES,
        );
        let fill = Ring::new(
            map(&off.fr, RX_FRAMES, 8, libc::XDP_UMEM_PGOFF_FILL_RING)?,
            &off.fr,
            RX_FRAMES,
        );
        let comp = Ring::new(
            map(&off.cr, TX_FRAMES, 8, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?,
            &off.cr,
            TX_FRAMES,
        );
        let sock = Arc::new(Socket { fd, umem });
        let mut q = XskQueue {
            mac: spec.mac,
            queue: spec.queue,
            bind: spec.bind,
            rx: XskRx {
                sock: sock.clone(),
                rx,
                fill,
                free: (0..RX_FRAMES).collect(),
                offset: vec![0; RX_FRAMES as usize],
                counters: counters_with(|c| c.rx_ring_slots = u64::from(RX_FRAMES)),
                busy: spec.busy_poll_us > 0,
            },
            tx: XskTx {
                sock,
                tx,
                comp,
                free: (RX_FRAMES..RX_FRAMES + TX_FRAMES).collect(),
                pending: None,
                queued: 0,
                counters: counters_with(|c| c.tx_ring_slots = u64::from(TX_FRAMES)),
                kick_errors: 0,
            },
        };
        q.rx.refill();
        let flags = libc::XDP_USE_NEED_WAKEUP
            | match spec.bind {
                Bind::ZeroCopy => libc::XDP_ZEROCOPY,
                Bind::Copy => libc::XDP_COPY,
            };
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: spec.ifindex,
            sxdp_queue_id: spec.queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: binds to a sockaddr_xdp that lives for the call, with its size.
        let r = unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_xdp).cast(),
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(SetupError {
                step: "bind",
                err: io::Error::last_os_error(),
            });
        }
        if spec.busy_poll_us > 0 {
            let sol = |name, v: u32| {
                step(
                    "busy-poll",
                    sockopt_level(raw, libc::SOL_SOCKET, name, &(v as libc::c_int)),
                )
            };
            sol(libc::SO_PREFER_BUSY_POLL, 1)?;
            sol(libc::SO_BUSY_POLL, spec.busy_poll_us)?;
            sol(libc::SO_BUSY_POLL_BUDGET, BUSY_POLL_BUDGET)?;
        }
        Ok(q)
    }

    /// The socket's descriptor (for the XSKMAP and for `poll`).
    pub fn raw_fd(&self) -> RawFd {
        self.rx.sock.fd.as_raw_fd()
    }

    /// The interface queue this socket is bound to.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// How it is bound.
    pub fn bind_mode(&self) -> Bind {
        self.bind
    }

    /// The kernel's counters for this socket.
    pub fn stats(&self) -> io::Result<XskStats> {
        socket_stats(self.raw_fd())
    }

    /// A second descriptor of the socket, to read its kernel counters after the queue
    /// pair went to the core threads (it keeps the socket open until dropped).
    pub fn stats_handle(&self) -> io::Result<StatsHandle> {
        Ok(StatsHandle {
            fd: self.rx.sock.fd.try_clone()?,
            queue: self.queue,
        })
    }

    /// Waits up to `us` microseconds for a frame to arrive.
    pub fn wait_us(&self, us: u64) {
        crate::wake::wait_fds_us(&[self.raw_fd()], us);
    }

    /// The two sides, owned apart (network-core mode).
    pub fn into_rings(self) -> (XskRx, XskTx) {
        (self.rx, self.tx)
    }
}

fn counters_with(f: impl FnOnce(&mut NicCounters)) -> NicCounters {
    let mut c = NicCounters::default();
    f(&mut c);
    c
}

/// A socket's counters, readable from anywhere ([`XskQueue::stats_handle`]).
#[derive(Debug)]
pub struct StatsHandle {
    fd: OwnedFd,
    /// The interface queue the socket is bound to.
    pub queue: u32,
}

impl StatsHandle {
    /// The kernel's counters now.
    pub fn stats(&self) -> io::Result<XskStats> {
        socket_stats(self.fd.as_raw_fd())
    }
}

/// Every socket's kernel counters, as the stats page and the metrics show them (an `xdp`
/// array with one object per queue; `bareweb_xdp_<counter>{queue="N"}`). Each page served
/// reads them afresh: one `getsockopt` per socket.
#[derive(Debug)]
pub struct SocketsCounters(pub Vec<StatsHandle>);

impl bareweb_engine::stats::platform::PlatformCounters for SocketsCounters {
    fn name(&self) -> &'static str {
        "xdp"
    }
    fn unit(&self) -> &'static str {
        "queue"
    }
    fn units(&self) -> usize {
        self.0.len()
    }
    fn read(&self, i: usize, f: &mut dyn FnMut(&'static str, u64)) -> Option<u64> {
        let h = self.0.get(i)?;
        let st = h.stats().ok()?;
        for (name, v) in st.named() {
            f(name, v);
        }
        Some(u64::from(h.queue))
    }
}

/// The kernel's counters (`XDP_STATISTICS`) of the AF_XDP socket `fd` (any descriptor
/// of it: a duplicate read after the rings were handed to the core threads).
pub fn socket_stats(fd: RawFd) -> io::Result<XskStats> {
    getsockopt::<Stats>(fd, libc::XDP_STATISTICS).map(|Stats(s)| XskStats {
        rx_dropped: s.rx_dropped,
        rx_ring_full: s.rx_ring_full,
        rx_fill_empty: s.rx_fill_ring_empty_descs,
        rx_invalid: s.rx_invalid_descs,
        tx_invalid: s.tx_invalid_descs,
        tx_ring_empty: s.tx_ring_empty_descs,
    })
}

impl Default for Offsets {
    fn default() -> Self {
        // SAFETY: plain integers; all-zero is a valid value.
        Offsets(unsafe { std::mem::zeroed() })
    }
}

/// Wakes the kernel for the socket (`recvfrom` for receive, `sendto` for transmit); a
/// "busy, try again" answer is not an error.
fn kick(fd: RawFd, send: bool) -> io::Result<()> {
    // SAFETY: zero-length calls on our socket with no buffers; the kernel only looks at
    // the rings.
    let r = unsafe {
        if send {
            libc::sendto(
                fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        } else {
            libc::recvfrom(
                fd,
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => Ok(()),
            _ => Err(e),
        };
    }
    Ok(())
}

impl XskRx {
    /// Puts every free receive frame on the fill ring (one publish), waking the kernel if
    /// it asked.
    fn refill(&mut self) {
        if self.free.is_empty() {
            return;
        }
        let n = self.fill.free(self.free.len() as u32) as usize;
        let n = n.min(self.free.len());
        for _ in 0..n {
            let f = self.free.pop().expect("counted");
            self.fill.push(u64::from(f) * FRAME);
        }
        self.fill.submit();
        if self.fill.needs_wakeup() {
            self.counters.doorbells += 1;
            self.counters.rx_doorbells += 1;
            let _ = kick(self.sock.fd.as_raw_fd(), false);
        }
    }

    /// The socket's descriptor.
    pub fn raw_fd(&self) -> RawFd {
        self.sock.fd.as_raw_fd()
    }
}

impl RxRing for XskRx {
    fn burst(&mut self, out: &mut [RxFrame]) -> usize {
        self.refill();
        let mut ready = self.rx.ready();
        if ready == 0 && self.busy {
            // Busy polling: the kernel runs the queue's NAPI poll in this call.
            self.counters.rx_doorbells += 1;
            let _ = kick(self.sock.fd.as_raw_fd(), false);
            ready = self.rx.ready();
        }
        self.counters.rx_ring_high = self.counters.rx_ring_high.max(u64::from(ready));
        let mut n = 0;
        let mut taken = 0;
        while n < out.len() && taken < ready {
            let d = self.rx.pop();
            taken += 1;
            let frame = d.addr / FRAME;
            let off = d.addr % FRAME;
            if frame >= u64::from(RX_FRAMES) {
                self.counters.device_rx_bad += 1;
                continue;
            }
            let frame = frame as u32;
            if off + u64::from(d.len) > FRAME || d.options != 0 {
                // Past its frame, or a multi-buffer frame (we never ask for those).
                self.counters.device_rx_bad += 1;
                self.free.push(frame);
                continue;
            }
            self.offset[frame as usize] = off as u16;
            out[n] = RxFrame {
                buf: frame,
                len: d.len,
            };
            n += 1;
        }
        if taken > 0 {
            self.rx.release();
        }
        self.counters.device_rx_frames += n as u64;
        n
    }

    fn bytes(&self, f: &RxFrame) -> &[u8] {
        if f.buf >= RX_FRAMES {
            return &[];
        }
        let start = u64::from(f.buf) * FRAME + u64::from(self.offset[f.buf as usize]);
        let len = u64::from(f.len).min(FRAME - u64::from(self.offset[f.buf as usize]));
        // SAFETY: [start, start + len) lies inside receive frame `f.buf` of the UMEM
        // (bounds above), which the kernel gave back to us with this descriptor and does
        // not touch until we put it on the fill ring again; the UMEM lives as long as the
        // socket, which `self` holds.
        unsafe {
            std::slice::from_raw_parts(self.sock.umem.ptr().add(start as usize), len as usize)
        }
    }

    fn recycle(&mut self, f: RxFrame) {
        if f.buf < RX_FRAMES && self.free.len() < RX_FRAMES as usize {
            self.free.push(f.buf);
        }
    }
}

impl XskTx {
    /// Takes back the frames the kernel has sent.
    fn reclaim(&mut self) {
        let n = self.comp.ready();
        if n == 0 {
            return;
        }
        for _ in 0..n {
            let addr = self.comp.pop();
            let frame = addr / FRAME;
            if (u64::from(RX_FRAMES)..u64::from(RX_FRAMES + TX_FRAMES)).contains(&frame)
                && self.free.len() < TX_FRAMES as usize
            {
                self.free.push(frame as u32);
            } else {
                self.counters.device_tx_bad += 1;
            }
        }
        self.comp.release();
    }

    /// The socket's descriptor.
    pub fn raw_fd(&self) -> RawFd {
        self.sock.fd.as_raw_fd()
    }

    fn frame_mut(&mut self, frame: u32) -> &mut [u8] {
        debug_assert!((RX_FRAMES..RX_FRAMES + TX_FRAMES).contains(&frame));
        // SAFETY: a transmit frame (its index is from our free list, checked when taken
        // back) lies inside the UMEM; it is ours until posted, and `&mut self` makes the
        // borrow unique.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.sock
                    .umem
                    .ptr()
                    .add((u64::from(frame) * FRAME) as usize),
                FRAME as usize,
            )
        }
    }
}

impl TxRing for XskTx {
    fn slot(&mut self) -> Option<&mut [u8]> {
        let frame = match self.pending {
            Some(f) => f,
            None => {
                if self.free.is_empty() {
                    self.reclaim();
                }
                let Some(f) = self.free.pop() else {
                    self.counters.device_tx_full += 1;
                    return None;
                };
                self.pending = Some(f);
                f
            }
        };
        Some(self.frame_mut(frame))
    }

    fn post(&mut self, head_len: usize, body: &'static [u8]) -> Result<(), TxFull> {
        let Some(frame) = self.pending.take() else {
            return Err(TxFull);
        };
        let len = head_len + body.len();
        if len > FRAME as usize || self.tx.free(1) == 0 {
            self.free.push(frame);
            self.counters.device_tx_full += 1;
            return Err(TxFull);
        }
        self.frame_mut(frame)[head_len..len].copy_from_slice(body);
        self.tx.push(libc::xdp_desc {
            addr: u64::from(frame) * FRAME,
            len: len as u32,
            options: 0,
        });
        self.queued += 1;
        self.counters.device_tx_frames += 1;
        Ok(())
    }

    fn flush(&mut self) {
        if self.queued == 0 {
            return;
        }
        self.queued = 0;
        self.tx.submit();
        let fd = self.sock.fd.as_raw_fd();
        // In copy mode the kernel sends a batch per `sendto`; with a zero-copy driver a
        // kick only schedules it. Either way it asks (NEED_WAKEUP) while it has work.
        let mut kicks = 0;
        while self.tx.needs_wakeup() && self.tx.outstanding() > 0 && kicks < MAX_KICKS {
            self.counters.doorbells += 1;
            kicks += 1;
            if kick(fd, true).is_err() {
                self.kick_errors += 1;
                break;
            }
        }
        if kicks == 0 {
            self.counters.doorbells_suppressed += 1;
        }
        let in_flight = u64::from(TX_FRAMES) - self.free.len() as u64;
        self.counters.tx_ring_high = self.counters.tx_ring_high.max(in_flight);
    }

    fn room(&mut self) -> usize {
        self.reclaim();
        self.free.len()
    }
}

impl Nic for XskQueue {
    type Rx = XskRx;
    type Tx = XskTx;

    fn split(&mut self) -> (&mut XskRx, &mut XskTx) {
        (&mut self.rx, &mut self.tx)
    }

    fn mac(&self) -> EthernetAddress {
        self.mac
    }

    fn caps(&self) -> NicCaps {
        // No segmentation offload: AF_XDP sends each frame as it is.
        NicCaps::default()
    }

    fn counters(&self) -> NicCounters {
        let (r, t) = (&self.rx.counters, &self.tx.counters);
        let mut c = *r;
        c.doorbells = r.doorbells + t.doorbells;
        c.device_tx_bad = t.device_tx_bad;
        c.device_tx_full = t.device_tx_full;
        c.device_tx_frames = t.device_tx_frames;
        c.doorbells_suppressed = t.doorbells_suppressed;
        c.tx_ring_slots = t.tx_ring_slots;
        c.tx_ring_high = t.tx_ring_high;
        c
    }
}

impl CoreQueue for XskQueue {}
