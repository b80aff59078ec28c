//! The vmxnet3 driver against a lying device (`drivers::fake`'s, behind the kernel's
//! `fake` feature): receive and transmit completions with any words, with the ring's
//! generation, in any order with bursts, recycles (of frames lent or never lent) and
//! transmitted frames, segmentation/checksum-offload requests of any shape, and any
//! statistics GET_STATS may leave. Every frame lent lies inside the driver's buffers, at
//! most 2 KiB, never lent twice at once, trusted for its checksum only while lent; nothing
//! panics.
#![no_main]

use bareweb_engine::nic::{Nic, RxFrame, RxRing, Tso, TxRing};
use bareweb_kernel::drivers::fake::{FakeHal, FakeVmxnet3};
use bareweb_kernel::drivers::vmxnet3::Vmxnet3;
use libfuzzer_sys::fuzz_target;

static BODY: [u8; 1000] = [7; 1000];

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let offload = first & 1 != 0;
    let mut dev = FakeVmxnet3::default();
    let Ok(mut nic) = dev.answering(0, |pt, vd| Vmxnet3::<FakeHal>::bring_up(&pt, &vd, offload))
    else {
        return;
    };
    let mut lent: Vec<RxFrame> = Vec::new();
    let mut out = [RxFrame { buf: 0, len: 0 }; 32];
    for op in data.chunks_exact(17) {
        let w: [u32; 4] = core::array::from_fn(|i| {
            u32::from_le_bytes(op[1 + 4 * i..5 + 4 * i].try_into().unwrap())
        });
        if op[0] % 9 == 8 {
            // Whatever statistics the device writes: added up, never a panic.
            let v = |k: u32| u64::from(w[k as usize % 4]) << (k % 40);
            dev.write_stats(
                core::array::from_fn(|i| v(i as u32)),
                core::array::from_fn(|i| v(i as u32 + 3)),
            );
            nic.split().0.device_stats().read();
            let _ = nic.counters();
            continue;
        }
        let (rx, tx) = nic.split();
        match op[0] % 9 {
            0 => dev.complete_rx(w),
            1 => {
                // Plausible: the index the driver waits for, start and end of packet.
                let head = rx.next_index() as u32;
                dev.complete_rx([head | 3 << 14, w[1], w[2] & 0x7FFF, w[3]]);
            }
            2 => {
                let n = rx.burst(&mut out);
                for f in &out[..n] {
                    let b = rx.bytes(f);
                    assert!(rx.holds(b) && !b.is_empty() && b.len() <= 2048);
                    assert!(offload || !rx.csum_trusted(f));
                    assert!(!lent.iter().any(|l| l.buf == f.buf), "lent twice");
                    lent.push(*f);
                }
            }
            3 => {
                if w[0] & 1 == 0 && !lent.is_empty() {
                    let k = w[1] as usize % lent.len();
                    rx.recycle(lent.swap_remove(k));
                } else {
                    let f = RxFrame {
                        buf: w[1] % 1024,
                        len: w[2],
                    };
                    if !lent.iter().any(|l| l.buf == f.buf) {
                        rx.recycle(f);
                        assert!(rx.bytes(&f).is_empty() && !rx.csum_trusted(&f));
                    }
                }
            }
            4 => {
                if let Some(h) = tx.slot() {
                    h[..60].fill(op[1]);
                    let _ = tx.post(60, if w[0] & 1 == 0 { &BODY } else { &[] });
                }
                tx.flush();
                if w[1] & 1 == 0 {
                    dev.transmitted();
                    dev.tx_first.clear();
                }
            }
            6 | 7 => {
                // An offload request of any shape, a body of any length up to 64 KiB.
                static BIG: [u8; 65_535] = [3; 65_535];
                if let Some(h) = tx.slot() {
                    let head = (w[0] as usize % h.len()).max(1);
                    h[..head].fill(op[2]);
                    let tso = Tso {
                        mss: w[1] as u16,
                        l4_offset: (w[1] >> 16) as u16 % 128,
                        header_len: w[2] as u16 % 256,
                    };
                    let body = &BIG[..(w[3] as usize % (BIG.len() + 1))];
                    let _ = tx.post_tso(head, body, tso);
                }
                tx.flush();
                if w[1] & 1 == 0 {
                    dev.transmitted();
                    dev.tx_first.clear();
                }
            }
            _ => {
                // A transmit completion naming any descriptor.
                let base = dev.queue_u64(false, 32);
                let pa = base + 16 * (dev.txc.0 as u64 % 256);
                FakeHal::write(pa, &w[0].to_le_bytes());
                FakeHal::write(pa + 12, &(dev.txc.1 << 31).to_le_bytes());
                dev.txc.0 += 1;
                if dev.txc.0 == 256 {
                    dev.txc = (0, dev.txc.1 ^ 1);
                }
                let _ = tx.room();
            }
        }
    }
});
