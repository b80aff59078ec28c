//! The virtio-net driver against a device that lies (drivers::fake's FakeVirtio behind
//! FakeHal, whose device addresses are not CPU addresses): the input is a script of device
//! actions (honest frames delivered and transmits completed, used entries with any id and
//! length on either queue, a used index moved anywhere, buffers taken and never used, the
//! link flipped) between the driver's receive bursts, recycles, transmits and flushes.
//! The driver never panics, never gives the device memory that is not its own (the fake
//! checks each address), never lends a frame longer than its buffer or a buffer twice,
//! and afterwards still receives an honest frame — and sends one, unless the device
//! moved the transmit queue's used index: a device that completes frames and then winds
//! its index back over them before the driver looks has hidden those completions for
//! good (no driver can see them), so those slots are rightly lost.
#![no_main]

#[path = "lying/mod.rs"]
mod lying;

use bareweb_engine::nic::{LinkSense, Nic, RxFrame, RxRing, TxRing};
use bareweb_kernel::drivers::fake::{FakeHal, FakeVirtio};
use bareweb_kernel::drivers::virtio::F_VERSION_1;
use bareweb_kernel::drivers::virtio_net::VirtioNet;
use libfuzzer_sys::fuzz_target;
use lying::{check_lent, check_view, drain, post_any, Script, BODY, MAX_STEPS};

/// The virtio-net header before each received frame, and the receive buffer's size.
const NET_HDR: usize = 12;
const RX_BUF: usize = 2048;
/// Largest frame one receive buffer holds.
const MAX_FRAME: usize = RX_BUF - NET_HDR;

const F_CSUM: u64 = 1 << 0;
const F_MAC: u64 = 1 << 5;
const F_HOST_TSO4: u64 = 1 << 11;
const F_STATUS: u64 = 1 << 16;
const F_EVENT_IDX: u64 = 1 << 29;

fuzz_target!(|data: &[u8]| {
    let mut s = Script(data);
    // The device: which optional features it offers, and its queue size (small rings
    // wrap often).
    let f = s.u8();
    let mut offered = F_VERSION_1 | F_MAC;
    for (bit, feat) in [F_EVENT_IDX, F_STATUS, F_CSUM | F_HOST_TSO4]
        .into_iter()
        .enumerate()
    {
        if f & 1 << bit != 0 {
            offered |= feat;
        }
    }
    let size = 4u16 << (s.u8() % 4);
    let mut dev = FakeVirtio::new(offered, 2, size, [2, 0, 0, 0, 0, 1], 1);
    let Ok(mut nics) = VirtioNet::<FakeHal>::bring_up(&mut dev, |_| 1, &[], true) else {
        return;
    };
    let mut nic = nics.pop().unwrap();
    let mut link = nic.link_sense();
    let tso = nic.caps().tso_max > 0;
    let (rx, tx) = nic.split();
    let mut held: Vec<RxFrame> = Vec::new();
    let mut out = [RxFrame { buf: 0, len: 0 }; 32];
    let mut tx_used_moved = false;

    for _ in 0..MAX_STEPS {
        if s.done() {
            break;
        }
        match s.u8() % 14 {
            // An honest frame into the next posted buffer.
            0 => {
                let len = (s.u16() as usize % (MAX_FRAME + 1)).max(1);
                let frame = vec![s.u8(); len];
                dev.deliver(0, &frame);
            }
            // A used entry on the receive queue: any id, any length.
            1 => {
                let (id, len) = (s.u32(), s.u32());
                dev.ring(0).push_used(id, len);
            }
            // A plausible lie: a small id, a length near a buffer's.
            2 => {
                let id = (s.u8() as u16 % (size + 2)) as u32;
                let len = s.u16() as u32 % (RX_BUF as u32 + 64);
                dev.ring(0).push_used(id, len);
            }
            // The device takes posted buffers and does not use them (yet).
            3 => {
                for _ in 0..s.u8() % 8 {
                    dev.ring(0).pop_avail();
                }
            }
            // The used index of either queue moved anywhere (entries it uncovers are
            // whatever was there).
            4 => {
                let q = (s.u8() & 1) as u16;
                let idx = s.u16();
                tx_used_moved |= q == 1;
                let r = dev.ring(q);
                r.used_idx = idx;
                FakeHal::write(r.rings.2 + 2, &idx.to_le_bytes());
            }
            // The engine's receive burst, of any size.
            5 => {
                let n = s.u8() as usize % (out.len() + 1);
                let got = rx.burst(&mut out[..n]);
                check_lent(&*rx, &out[..got], &mut held, MAX_FRAME);
            }
            // It gives back one frame it holds, or one it does not.
            6 => {
                let k = s.u8() as usize;
                if k < held.len() {
                    let f = held.swap_remove(k);
                    rx.recycle(f);
                    if s.u8() & 1 != 0 {
                        rx.recycle(f); // twice: ignored
                    }
                } else {
                    // Any id: one the engine holds is given back by it (frames are
                    // named by their buffer).
                    let f = RxFrame {
                        buf: s.u32(),
                        len: s.u32(),
                    };
                    held.retain(|h| h.buf != f.buf);
                    rx.recycle(f);
                }
            }
            // A view of any frame.
            7 => {
                let f = RxFrame {
                    buf: s.u32() % (size as u32 + 4),
                    len: s.u32(),
                };
                check_view(&*rx, &f, MAX_FRAME);
            }
            // A frame to send: head in a slot, body lent, with or without TSO.
            8 => post_any(&mut *tx, &mut s, tso),
            9 => tx.flush(),
            10 => {
                tx.room();
            }
            // The device sends what is made available, honestly.
            11 => {
                dev.transmitted(1);
            }
            // A used entry on the transmit queue: any id, any length.
            12 => {
                let (id, len) = (s.u32() % (2 * size as u32 + 4), s.u32());
                dev.ring(1).push_used(id, len);
            }
            // The link flips.
            _ => {
                let up = s.u8() & 1 != 0;
                dev.set_link(up);
                assert_eq!(link.link_up(), up || offered & F_STATUS == 0);
            }
        }
    }

    // Afterwards it still works: with every frame given back and the ring drained, an
    // honest device fills one posted buffer (the last it took, or the first) and the
    // driver lends exactly that frame.
    drain(rx, &mut held, MAX_FRAME);
    let mut head = 0;
    while let Some((h, _)) = dev.ring(0).pop_avail() {
        head = h;
    }
    let ring = *dev.ring(0);
    let d = FakeHal::read(ring.rings.0 + 16 * head as u64, 8);
    let addr = u64::from_le_bytes(d.try_into().unwrap());
    let frame: Vec<u8> = (0..60u8).collect();
    let mut bytes = vec![0u8; NET_HDR];
    bytes.extend_from_slice(&frame);
    FakeHal::write(addr, &bytes);
    dev.ring(0).push_used(head as u32, bytes.len() as u32);
    let n = rx.burst(&mut out);
    assert_eq!(n, 1, "an honest frame after the lies is not received");
    assert_eq!(out[0].buf, head as u32);
    assert_eq!(rx.bytes(&out[0]), &frame[..]);
    // And one more frame goes out whole, even after slots were reported used before
    // the device took their entries (the driver never writes over the entry an
    // in-flight slot still holds, so the honest device now takes and returns them all).
    tx.flush();
    dev.transmitted(1);
    tx.flush();
    if tx_used_moved {
        return;
    }
    let slot = tx
        .slot()
        .expect("every transmit slot lost after the device completed all");
    slot[..60].fill(0x77);
    tx.post(60, &BODY[..100]).unwrap();
    tx.flush();
    let sent = dev.transmitted(1);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].len(), NET_HDR + 160);
    assert_eq!(sent[0][NET_HDR..NET_HDR + 60], [0x77; 60]);
});
