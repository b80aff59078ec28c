//! The 82540EM/82574/82576 script (targets driver_e1000, driver_e1000e, driver_igb):
//! drivers::fake's register file as a device that writes back any descriptor with any
//! status, errors and length, moves its heads anywhere, marks transmit descriptors done
//! that it never sent, and flips the link, between the driver's bursts, recycles,
//! transmits and flushes (and, on an 82576 in MSI-X mode, arms and disarms); then an
//! honest frame must still arrive.

use bareweb_engine::nic::{Nic, NicCounters, RxFrame, RxRing, TxRing};
use bareweb_kernel::drivers::e1000::{E1000Rx, E1000Tx, RDT, TDT};
use bareweb_kernel::drivers::fake::{FakeE1000, FakeHal};
use bareweb_kernel::drivers::{Arm, Driver, Wake, WakeRx};

use super::{check_lent, check_view, drain, post_any, Script, BODY, MAX_STEPS};

/// Descriptors per ring and bytes per receive buffer (the driver's).
const RING: usize = 256;
const RX_BUF: usize = 2048;
const STA_DD: u8 = 1;
const STA_EOP: u8 = 2;
/// The 82576's MSI-X mask set and clear registers (EIMS, EIMC): queue k's cause is bit k.
const EIMS: usize = 0x1524;
const EIMC: usize = 0x1528;

/// A device with its MAC and link up, before the driver's bring-up.
pub fn device(mac: [u8; 6]) -> FakeE1000 {
    let mut dev = FakeE1000::default();
    dev.set_reg(0x5400, u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]));
    dev.set_reg(0x5404, u32::from_le_bytes([mac[4], mac[5], 0, 0]) | 1 << 31);
    dev.set_reg(0x0008, 1 << 1);
    dev
}

/// Each receive ring's descriptor addresses as the driver last posted them: an honest
/// device reads a descriptor when the driver gives it, so an extended write-back (which
/// overwrites the address) does not make it forget.
struct Posted(Vec<[u64; RING]>);

impl Posted {
    fn scan(&mut self, dev: &FakeE1000) {
        for (q, seen) in self.0.iter_mut().enumerate() {
            let (at, n) = dev.ring_at(0x2800 + 0x100 * q);
            assert_eq!(n as usize, RING);
            let d = FakeHal::read(at, 16 * RING);
            for (i, s) in seen.iter_mut().enumerate() {
                let a = u64::from_le_bytes(d[16 * i..16 * i + 8].try_into().unwrap());
                if a != 0 {
                    *s = a;
                }
            }
        }
    }
}

/// Plays the script against `nics` (one per queue pair) on `dev`. With `msix` (an 82576
/// whose receive sides `Igb::route_msix` routed, some or none) the script also arms
/// (before a halt) and disarms them: a side never arms with a frame waiting, and touches
/// only its own cause bit.
pub fn play<N>(s: &mut Script<'_>, dev: &mut FakeE1000, mut nics: Vec<N>, msix: bool)
where
    N: Nic<Rx = E1000Rx, Tx = E1000Tx<FakeHal>> + Driver,
{
    let pairs = nics.len();
    // The 82540EM's thirteen actions keep their numbers (and the seeds their meaning).
    let actions = if msix { 14 } else { 13 };
    let mut links: Vec<_> = nics.iter().map(|n| n.link()).collect();
    let tso = nics[0].caps().tso_max > 0;
    let mut held: Vec<Vec<RxFrame>> = vec![Vec::new(); pairs];
    let mut posted = Posted(vec![[0; RING]; pairs]);
    let mut out = [RxFrame { buf: 0, len: 0 }; 32];
    let head = |dev: &FakeE1000, q: usize| if q == 0 { dev.rdh } else { dev.heads1[q].0 };
    for _ in 0..MAX_STEPS {
        if s.done() {
            break;
        }
        posted.scan(dev);
        let op = s.u8();
        let q = (op >> 4) as usize % pairs;
        let (rx, tx) = nics[q].split();
        match op % actions {
            // An honest frame at the device's head, if the driver's tail leaves room.
            0 => {
                let len = (s.u16() as usize % (RX_BUF + 1)).max(1);
                let h = head(dev, q);
                if h != dev.reg(RDT + 0x100 * q) {
                    let addr = posted.0[q][h as usize];
                    FakeHal::write(addr, &vec![s.u8(); len]);
                    dev.write_back_rx_q(q, h, len as u16, STA_DD | STA_EOP, 0);
                    let h = (h + 1) % RING as u32;
                    if q == 0 {
                        dev.rdh = h;
                    } else {
                        dev.heads1[q].0 = h;
                    }
                }
            }
            // Any descriptor written back with any length, status and errors.
            1 => {
                let (i, len, status, errors) = (s.u16() as u32, s.u16(), s.u8(), s.u8());
                dev.write_back_rx_q(q, i, len, status, errors);
            }
            // A plausible lie: near the head, done, a length about a buffer's.
            2 => {
                let i = head(dev, q) + s.u8() as u32 % 8;
                let len = s.u16() % (RX_BUF as u16 + 64);
                dev.write_back_rx_q(q, i, len, STA_DD | (s.u8() & STA_EOP), s.u8() & 0x81);
            }
            // The device's head (and the register) moved anywhere.
            3 => {
                let h = s.u16() as u32;
                dev.set_reg(0x2810 + 0x100 * q, h);
                if q == 0 {
                    dev.rdh = h % RING as u32;
                } else {
                    dev.heads1[q].0 = h % RING as u32;
                }
            }
            4 => {
                let n = s.u8() as usize % (out.len() + 1);
                let got = rx.burst(&mut out[..n]);
                check_lent(&*rx, &out[..got], &mut held[q], RX_BUF);
            }
            5 => {
                let k = s.u8() as usize;
                if k < held[q].len() {
                    let f = held[q].swap_remove(k);
                    rx.recycle(f);
                    if s.u8() & 1 != 0 {
                        rx.recycle(f);
                    }
                } else {
                    // Any id: one the engine holds is given back by it (frames are
                    // named by their buffer).
                    let f = RxFrame {
                        buf: s.u32(),
                        len: s.u32(),
                    };
                    held[q].retain(|h| h.buf != f.buf);
                    rx.recycle(f);
                }
            }
            6 => {
                let f = RxFrame {
                    buf: s.u16() as u32,
                    len: s.u32(),
                };
                check_view(&*rx, &f, RX_BUF);
            }
            7 => post_any(&mut *tx, s, tso),
            8 => tx.flush(),
            9 => {
                tx.room();
            }
            10 => {
                dev.transmitted_q(q);
            }
            // Transmit descriptors marked with any status (DD on ones never sent), the
            // head register anywhere.
            11 => {
                let (ring, _) = dev.ring_at(0x3800 + 0x100 * q);
                let i = s.u8() as u64;
                FakeHal::write(ring + 16 * i + 12, &[s.u8()]);
                dev.set_reg(0x3810 + 0x100 * q, s.u32());
            }
            12 => {
                let up = s.u8() & 1 != 0;
                dev.set_reg(0x0008, if up { 2 } else { 0 });
                assert_eq!(links[q].link_up(), up);
            }
            // Arm before a halt (MSI-X mode): a side with a vector unmasks its own cause
            // and halts only if the descriptor it reads next is not done; then perhaps
            // disarm after the halt.
            _ => {
                let routed = rx.wake() != Wake::None;
                match rx.arm() {
                    Arm::Unable => assert!(!routed, "a routed side cannot arm"),
                    Arm::Armed => {
                        assert!(routed, "armed without a vector");
                        assert_eq!(dev.reg(EIMS), 1 << q, "armed another cause");
                        let n = rx.burst(&mut out);
                        assert_eq!(n, 0, "armed (the core halts) with a frame waiting");
                        if s.u8() & 1 != 0 {
                            rx.disarm();
                            assert_eq!(dev.reg(EIMC), 1 << q, "disarmed another cause");
                        }
                    }
                    Arm::Pending => {
                        assert!(routed, "pending without a vector");
                        assert_eq!(dev.reg(EIMC), 1 << q, "masked another cause");
                    }
                }
            }
        }
    }

    // Afterwards each queue still works: every frame given back, the ring drained, an
    // honest frame written where the driver reads next is the frame it lends.
    for (q, nic) in nics.iter_mut().enumerate() {
        let (rx, tx) = nic.split();
        drain(rx, &mut held[q], RX_BUF);
        posted.scan(dev);
        let mut c = NicCounters::default();
        N::rx_counters(rx, &mut c);
        let next = ((c.device_rx_frames + c.device_rx_bad) % RING as u64) as u32;
        let frame: Vec<u8> = (0..60u8).collect();
        FakeHal::write(posted.0[q][next as usize], &frame);
        dev.write_back_rx_q(q, next, 60, STA_DD | STA_EOP, 0);
        if msix && rx.wake() != Wake::None {
            assert_eq!(rx.arm(), Arm::Pending, "armed over an honest frame");
        }
        let n = rx.burst(&mut out);
        assert!(n >= 1, "an honest frame after the lies is not received");
        assert_eq!(rx.bytes(&out[0]), &frame[..]);
        // And a frame goes out whole once the device has sent what was queued.
        tx.flush();
        dev.transmitted_q(q);
        tx.flush();
        let slot = tx
            .slot()
            .expect("transmit slots lost after the device sent all");
        slot[..60].fill(0x77);
        tx.post(60, &BODY[..100]).unwrap();
        tx.flush();
        let sent = dev.transmitted_q(q);
        assert_eq!(sent.last().map(|f| f.len()), Some(160));
        let _ = TDT;
    }
}
