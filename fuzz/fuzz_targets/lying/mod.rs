//! What the lying-device targets share: the input read as a script of device actions and
//! driver calls, and the checks on every frame a driver lends.

// Used by the e1000 targets only.
#[allow(dead_code)]
pub mod e1000;

use bareweb_engine::nic::{RxFrame, RxRing, Tso, TxRing};
use bareweb_kernel::drivers::fake::{FakeHal, DMA_OFFSET};

/// Most actions one input plays (each may be a whole burst).
pub const MAX_STEPS: usize = 400;

/// The input, read front to back; zeros once it runs out.
pub struct Script<'a>(pub &'a [u8]);

impl Script<'_> {
    /// Whether the input is used up.
    pub fn done(&self) -> bool {
        self.0.is_empty()
    }

    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
}

/// Bodies lent to transmit ('static, as the site image is).
pub static BODY: [u8; 4096] = [0x42; 4096];

/// A frame to send as the script says: a head of 14 to 269 bytes in a slot, a body of up
/// to 4 KiB lent, segmented (TSO) when the driver offers it and the script asks; nothing
/// when no slot is free. Whether the driver takes it is not judged here.
pub fn post_any<T: TxRing>(tx: &mut T, s: &mut Script, tso: bool) {
    let head = 14 + s.u8() as usize;
    let body = &BODY[..s.u16() as usize % (BODY.len() + 1)];
    let seg = s.u8() & 1 != 0;
    let Some(slot) = tx.slot() else {
        return;
    };
    slot[..head].fill(0xEE);
    let _ = if tso && seg {
        let t = Tso {
            mss: 1448,
            l4_offset: 34,
            header_len: 54,
        };
        tx.post_tso(head, body, t)
    } else {
        tx.post(head, body)
    };
}

/// The frames the engine holds: each lent once, inside the driver's DMA buffers, no
/// longer than a buffer of `max` bytes (what the driver says it is, and what `bytes`
/// shows).
pub fn check_lent<R: RxRing>(rx: &R, got: &[RxFrame], held: &mut Vec<RxFrame>, max: usize) {
    for f in got {
        let b = rx.bytes(f);
        assert!(
            f.len as usize <= max,
            "frame of {} bytes from a {max}-byte buffer",
            f.len
        );
        assert_eq!(
            b.len(),
            f.len as usize,
            "bytes() disagrees with the frame's length"
        );
        assert!(
            b.is_empty() || FakeHal::translate(b.as_ptr() as u64 + DMA_OFFSET, b.len()).is_some(),
            "frame bytes outside the driver's DMA memory"
        );
        assert!(
            !held.iter().any(|h| h.buf == f.buf),
            "buffer {} lent while the engine holds it",
            f.buf
        );
        held.push(*f);
    }
}

/// Whatever `bytes` shows for any frame (a stale or made-up one too) stays inside the
/// driver's buffers and within one buffer.
pub fn check_view<R: RxRing>(rx: &R, f: &RxFrame, max: usize) {
    let b = rx.bytes(f);
    assert!(b.len() <= max);
    assert!(b.is_empty() || FakeHal::translate(b.as_ptr() as u64 + DMA_OFFSET, b.len()).is_some());
}

/// Recycles everything held, then bursts (recycling what comes) until the driver has
/// nothing more: the ring as an honest device would find it after the lies.
pub fn drain<R: RxRing>(rx: &mut R, held: &mut Vec<RxFrame>, max: usize) {
    let mut out = [RxFrame { buf: 0, len: 0 }; 64];
    for f in held.drain(..) {
        rx.recycle(f);
    }
    for _ in 0..5000 {
        let n = rx.burst(&mut out);
        check_lent(rx, &out[..n], held, max);
        for f in held.drain(..) {
            rx.recycle(f);
        }
        if n == 0 {
            break;
        }
    }
    // Recycled buffers are posted again by the next burst; nothing new arrived.
    assert_eq!(
        rx.burst(&mut out),
        0,
        "the driver still finds frames after draining"
    );
}
