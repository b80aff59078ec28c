//! Intel 82576 ("igb"; QEMU ≥ 8 `-device igb`): the 82540EM's register core and queue
//! code ([`super::e1000`]'s `Regs`, `E1000Rx`, `E1000Tx`, shared, not copied), brought up
//! the 82576's way: advanced one-buffer receive descriptors (SRRCTL), per-queue enables
//! (RXDCTL, TXDCTL), and up to [`QUEUES`] queue pairs with receive-side scaling.
//!
//! Heads up! read the Intel 82576EB GbE Controller datasheet, §7.1.5 (advanced receive
//! descriptors), §7.1.2.10 (RSS), §8.10 (queue registers: queues 0-3 keep the 82574's
//! addresses, 0x2800 + 0x100 × k, as aliases of 0xC000 + 0x40 × k); Linux igb
//! `igb_configure_rx_ring`, `igb_setup_mrqc`; QEMU `hw/net/igb_core.c` (a queue takes
//! frames only with RXDCTL.ENABLE set).
//!
//! - Advanced one-buffer receive descriptors write back status/errors at 8 and the length
//!   at 12, as the 82574's extended ones ([`Layout::EXTENDED`]): the receive path, its
//!   range checks and its shadow of buffers are the 82540EM's.
//! - RSS (two or more pairs): MRQC = RSS on the 4-tuple of TCP/IPv4 and the IPv4 pair;
//!   the 128-entry redirection table holds the queue number in each byte (not bit 7 as
//!   on the 82574).
//! - RSS needs the descriptor's checksum field given to the hash (RXCSUM.PCSD): QEMU's
//!   `igb_rss_enabled` asks exactly that, and without it every frame lands on queue 0.
//! - Wake-ups: MSI-X in the 82576's own mode (GPIE.MSIX_MODE: one extended cause bit per
//!   vector, in EICR/EIMS/EIMC, not the 82574's ICR causes): IVAR0[k]'s receive byte
//!   routes receive queue k to vector k, whose table entry is aimed at the core that owns
//!   pair k (Linux `igb_assign_vector`, the 82576 case: IVAR0[q & 7], byte 0 for receive
//!   queues 0-7, byte 1 for their transmit queues, left invalid here: completions are
//!   polled). EIAC clears a vector's cause when its message is sent; arming a side
//!   clears and unmasks its own cause only (the other pairs' cores arm theirs). Without
//!   MSI-X (a table that cannot be mapped) the INTx line is probed as on the 82540EM
//!   (ICR.RXT0 is the 82576's RXDW in legacy mode) and wakes pair 0's core; the other
//!   pairs' cores then wake by timer.
//! - Transmit: advanced data descriptors for every frame (QEMU's model keeps the last
//!   advanced frame's offload request for a legacy one: see `E1000Tx::set_advanced`),
//!   complete checksums from the engine; unless `offload=off`, TCP segmentation with IPv4
//!   and TCP checksum insertion through an advanced context descriptor (MACLEN, IPLEN,
//!   L4LEN, MSS; TUCMD IPv4|TCP) and data descriptors with TSE, POPTS IXSM|TXSM and the
//!   TCP payload's length (Linux `igb_tso`): `E1000Tx::post_tso`, shared with the 82574;
//!   over IPv6 TUCMD TCP alone and POPTS TXSM.
//! - Link: STATUS.LU, as on the 82540EM; `open` waits (2 s at most) for it to rise after
//!   the auto-negotiation restart.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_engine::nic::{LinkSense, Nic, NicCounters};
use bareweb_engine::wire::EthernetAddress;

use super::e1000::{self, E1000Link, E1000Rx, E1000Tx, Error, Layout, Regs, RxWake, E1000};
use super::hal::{Hal, Identity, Mmio, Reg, WO};
use super::{Driver, Open};
use crate::arch::irq::NIC_VECTOR;
use crate::arch::pci::msix::MsiX;
use crate::arch::pci::Device;

/// 82576 (QEMU's igb, tested there), and its copper/fibre/serdes/quad variants sharing
/// the register set (not tested). The i350 (0x1521..) and i210 (0x1533..) are igb-family
/// parts with other queue and interrupt layouts: not accepted until tested.
pub const DEVICES: [u16; 8] = [
    0x10C9, 0x10E6, 0x10E7, 0x10E8, 0x1526, 0x150A, 0x1518, 0x150D,
];

/// Queue pairs driven (the 82576 has 16; the kernel's cores are fewer).
pub const QUEUES: usize = 4;

const MDIC: usize = 0x0020;
const SRRCTL: usize = 0x280C;
const RXDCTL: usize = 0x2828;
const TXDCTL: usize = 0x3828;
const MRQC: usize = 0x5818;
const GPIE: usize = 0x1514;
const EIMS: usize = 0x1524;
const EIMC: usize = 0x1528;
const EIAC: usize = 0x152C;
const EICR: usize = 0x1580;
const IVAR0: usize = 0x1700;
const RETA: usize = 0x5C00;
const RSSRK: usize = 0x5C80;

/// SRRCTL: 2 KiB packet buffers (BSIZEPACKET in KiB), advanced one-buffer descriptors
/// (DESCTYPE 001), drop when no descriptor is free (DROP_EN).
pub const SRRCTL_BITS: u32 = 2 | 1 << 25 | 1 << 31;
/// MDIC: write (OP 01) PHY 1's control register (BMCR, 0): auto-negotiation on and
/// restarted, 1000 Mb/s full duplex. QEMU's 82576 keeps its link down after a reset until
/// the driver restarts auto-negotiation (as Linux igb's PHY setup does); STATUS.LU rises
/// when it completes.
pub const MDIC_AUTONEG: u32 = 0x1340 | 1 << 21 | 1 << 26;
/// RXDCTL/TXDCTL.ENABLE.
pub const QUEUE_ENABLE: u32 = 1 << 25;
/// MRQC: RSS (multiple queues), hashing TCP/IPv4 and IPv4.
pub const MRQC_RSS: u32 = 2 | 1 << 16 | 1 << 17;
/// RXCSUM.PCSD: the descriptor's checksum field carries the RSS hash (and receive
/// checksum offload, on after a reset, is off: the engine checks every checksum).
pub const RXCSUM_PCSD: u32 = 1 << 13;
/// GPIE: MSI-X mode (NSICR, MSIX_MODE, EIAME, PBA support), as Linux igb sets it for the
/// 82576. EIAM stays 0, so no vector masks itself: each core masks its own (disarm).
pub const GPIE_MSIX: u32 = 1 | 1 << 4 | 1 << 30 | 1 << 31;
/// An IVAR entry's valid bit (beside the vector number, bits 4:0).
pub const IVAR_VALID: u32 = 0x80;

/// The Toeplitz key (the one Microsoft's RSS specification gives as its example).
const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// A RETA dword for `pairs` queues: four entries, each a queue number, round robin.
pub fn reta_word(i: usize, pairs: usize) -> u32 {
    (0..4).fold(0, |w, b| w | (((4 * i + b) % pairs) as u32) << (8 * b))
}

/// One queue pair of an 82576: the 82540EM's pair type, brought up the 82576's way.
pub struct Igb<H: Hal = Identity>(E1000<H>);

impl Igb {
    /// Whether `dev` is an 82576 we drive.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == e1000::VENDOR && DEVICES.contains(&dev.device)
    }
}

impl<H: Hal> Igb<H> {
    /// The 82540EM-typed queue pair inside.
    pub fn into_inner(self) -> E1000<H> {
        self.0
    }

    /// Resets the device whose registers are `m` and brings up `pairs` queue pairs
    /// (1 to [`QUEUES`]), RSS on with two or more, interrupts masked.
    pub fn bring_up(m: &Mmio, pairs: usize) -> Result<Vec<Igb<H>>, Error> {
        let regs = Regs::new(m).ok_or(Error::NoRegisters)?;
        let reg =
            |off: usize| -> Result<Reg<u32, WO>, Error> { m.reg(off).ok_or(Error::NoRegisters) };
        let pairs = pairs.clamp(1, QUEUES);
        let mac = regs.reset()?;
        reg(MDIC)?.write(MDIC_AUTONEG);
        let mut sides = Vec::with_capacity(pairs);
        for k in 0..pairs {
            let rd = Regs::queue(m, 0x2800, k).ok_or(Error::NoRegisters)?;
            let td = Regs::queue(m, 0x3800, k).ok_or(Error::NoRegisters)?;
            let mut rx = E1000Rx::new::<H>(&regs, &rd, Layout::EXTENDED)?;
            if k == 0 {
                rx.count_device(&regs);
            }
            let mut tx = E1000Tx::<H>::new(&td)?;
            tx.set_advanced();
            reg(SRRCTL + 0x100 * k)?.write(SRRCTL_BITS);
            reg(RXDCTL + 0x100 * k)?.write(QUEUE_ENABLE);
            reg(TXDCTL + 0x100 * k)?.write(QUEUE_ENABLE);
            sides.push((rx, tx));
        }
        if pairs > 1 {
            for (i, w) in RSS_KEY.chunks_exact(4).enumerate() {
                reg(RSSRK + 4 * i)?.write(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            }
            for i in 0..32 {
                reg(RETA + 4 * i)?.write(reta_word(i, pairs));
            }
            reg(MRQC)?.write(MRQC_RSS);
        } else {
            reg(MRQC)?.write(0);
        }
        regs.rxcsum.write(RXCSUM_PCSD);
        regs.enable_tx();
        regs.enable_rx();
        Ok(sides
            .into_iter()
            .map(|(mut rx, tx)| {
                rx.refill();
                Igb(E1000::from_parts(rx, tx, mac, regs))
            })
            .collect())
    }

    /// Offers TCP segmentation through advanced context descriptors (`open` does with
    /// offloads on; a fresh pair does not).
    pub fn set_offload(&mut self, on: bool) {
        self.0.tx_mut().set_tso(on);
    }

    /// The device's link: STATUS.LU, as on the 82540EM.
    pub fn link_sense(&self) -> E1000Link {
        self.0.link_sense()
    }

    /// Turns on the 82576's MSI-X mode on the device whose registers are `m` and routes
    /// receive queue k of `pairs` to vector k (EICR bit k) for each k whose MSI-X table
    /// entry `aimed(k)` aimed at pair k's core; those sides then wake by it. Every vector
    /// stays masked (EIMS) until its side arms. GPIE first: the device keeps EIAC only
    /// in MSI-X mode (QEMU's `igb_set_eiac`; Linux: "or our settings won't stick").
    pub fn route_msix(
        m: &Mmio,
        pairs: &mut [Igb<H>],
        mut aimed: impl FnMut(usize) -> bool,
    ) -> Result<(), Error> {
        let reg =
            |off: usize| -> Result<Reg<u32, WO>, Error> { m.reg(off).ok_or(Error::NoRegisters) };
        reg(GPIE)?.write(GPIE_MSIX);
        reg(EIMC)?.write(0xFFFF_FFFF);
        let (eicr, eims, eimc) = (reg(EICR)?, reg(EIMS)?, reg(EIMC)?);
        let mut routed = 0;
        for (k, q) in pairs.iter_mut().enumerate() {
            if !aimed(k) {
                continue;
            }
            reg(IVAR0 + 4 * k)?.write(k as u32 | IVAR_VALID);
            routed |= 1 << k;
            let rx = q.0.rx_mut();
            rx.set_cause_regs(eicr, eims, eimc);
            rx.set_wake(RxWake::Msi(k as u16, 1 << k));
        }
        reg(EIAC)?.write(routed);
        Ok(())
    }
}

impl<H: Hal> bareweb_engine::cores::CoreQueue for Igb<H> {}

impl<H: Hal> Nic for Igb<H> {
    type Rx = E1000Rx;
    type Tx = E1000Tx<H>;

    fn split(&mut self) -> (&mut E1000Rx, &mut E1000Tx<H>) {
        self.0.split()
    }

    fn mac(&self) -> EthernetAddress {
        self.0.mac()
    }

    fn caps(&self) -> bareweb_engine::nic::NicCaps {
        self.0.caps()
    }

    fn counters(&self) -> NicCounters {
        self.0.counters()
    }
}

impl<H: Hal> Driver for Igb<H> {
    type Error = Error;
    const NAME: &'static str = "igb";

    fn matches(dev: &Device) -> bool {
        Igb::matches(dev)
    }

    /// Up to [`QUEUES`] queue pairs (RSS with two or more); pair k's receive queue wakes
    /// `wake[k]`'s core by MSI-X vector k, or, without MSI-X, pair 0's by the probed INTx
    /// line.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<Igb<H>>, usize), Error> {
        let m = e1000::map_registers::<H>(dev)?;
        let mut pairs = Igb::<H>::bring_up(&m, with.pairs)?;
        for q in &mut pairs {
            q.set_offload(with.offload);
        }
        // QEMU's 82576 raises its link about 500 ms after auto-negotiation restarts (its
        // autoneg timer); until then it neither sends nor receives. Wait for it (2 s at
        // most): the first frames (the gratuitous ARPs) are not lost, and a bond's link
        // monitor does not start by counting the link going down.
        let mut link = pairs[0].link_sense();
        let end = crate::arch::cpu::rdtsc() + 2 * crate::arch::clock::tsc_hz();
        while !link.link_up() && crate::arch::cpu::rdtsc() < end {
            core::hint::spin_loop();
        }
        if with.wake.is_empty() {
            return Ok((pairs, QUEUES));
        }
        match MsiX::find::<H>(dev) {
            Some(x) => {
                let n = pairs.len().min(with.wake.len());
                Igb::route_msix(&m, &mut pairs[..n], |k| {
                    x.set(k as u16, with.wake[k], NIC_VECTOR)
                })?;
                x.enable();
            }
            None => {
                let regs = Regs::new(&m).ok_or(Error::NoRegisters)?;
                if let Some(g) = e1000::probe_line(dev, &regs, with.wake[0]) {
                    pairs[0].0.rx_mut().set_wake(RxWake::Line(g));
                }
            }
        }
        Ok((pairs, QUEUES))
    }

    fn rx_counters(rx: &E1000Rx, c: &mut NicCounters) {
        <E1000<H>>::rx_counters(rx, c)
    }

    fn tx_counters(tx: &E1000Tx<H>, c: &mut NicCounters) {
        <E1000<H>>::tx_counters(tx, c)
    }

    fn into_rings(self) -> (E1000Rx, E1000Tx<H>) {
        self.0.into_rings()
    }

    fn link(&self) -> Box<dyn LinkSense> {
        Box::new(self.link_sense())
    }

    fn multicast(&self) -> Box<dyn super::Multicast> {
        Box::new(self.0.multicast_filter())
    }
}

#[cfg(test)]
mod tests {
    //! The driver against `drivers::fake`'s register file playing an 82576: advanced
    //! write-backs (the device overwrites the buffer address), four queues, and lies.
    use super::super::fake::{FakeE1000, FakeHal};
    use super::*;
    use bareweb_engine::nic::{RxFrame, RxRing, TxRing};

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x59];
    const RING: u32 = 256;

    fn up(pairs: usize) -> (FakeE1000, Vec<Igb<FakeHal>>) {
        let mut dev = FakeE1000::default();
        dev.set_reg(0x5400, u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]));
        dev.set_reg(0x5404, u32::from_le_bytes([MAC[4], MAC[5], 0, 0]) | 1 << 31);
        dev.set_reg(0x0008, 1 << 1);
        let nic = dev.resetting(|m| {
            let mut nic = Err(Error::NoReset);
            for _ in 0..1000 {
                nic = Igb::<FakeHal>::bring_up(&m, pairs);
                if nic.as_ref().err() != Some(&Error::NoReset) {
                    break;
                }
            }
            nic
        });
        (dev, nic.unwrap())
    }

    #[test]
    fn four_pairs_get_advanced_descriptors_enabled_queues_and_rss() {
        let (dev, mut pairs) = up(QUEUES);
        assert_eq!(pairs.len(), 4);
        assert_eq!(dev.reg(MRQC), MRQC_RSS);
        assert_eq!(dev.reg(MDIC), MDIC_AUTONEG, "auto-negotiation restarted");
        assert_eq!(dev.reg(RSSRK), 0xda56_5a6d);
        assert_eq!(dev.reg(RETA), 0x0302_0100, "queue numbers, round robin");
        assert!((0..32).all(|i| dev.reg(RETA + 4 * i) == 0x0302_0100));
        assert_eq!(dev.reg(0x00D8), 0xFFFF_FFFF, "interrupts masked");
        assert_eq!(dev.reg(0x0100) & 2, 2, "receiver on");
        assert_eq!(dev.reg(0x0400) & 2, 2, "transmitter on");
        for q in 0..4 {
            assert_eq!(dev.reg(SRRCTL + 0x100 * q), SRRCTL_BITS);
            assert_eq!(dev.reg(RXDCTL + 0x100 * q) & QUEUE_ENABLE, QUEUE_ENABLE);
            assert_eq!(dev.reg(TXDCTL + 0x100 * q) & QUEUE_ENABLE, QUEUE_ENABLE);
            for base in [0x2800, 0x3800] {
                let (at, n) = dev.ring_at(base + 0x100 * q);
                assert_eq!(n, RING);
                assert!(FakeHal::translate(at, RING as usize * 16).is_some());
            }
            assert_eq!(dev.reg(e1000::RDT + 0x100 * q), RING - 1);
        }
        for p in &mut pairs {
            assert_eq!(p.mac(), EthernetAddress(MAC));
            assert!(p.link_sense().link_up());
        }
    }

    #[test]
    fn one_pair_leaves_rss_off_and_three_make_a_three_way_table() {
        let (dev, pairs) = up(1);
        assert_eq!(pairs.len(), 1);
        assert_eq!(dev.reg(MRQC), 0);
        assert_eq!(dev.ring_at(0x2900).1, 0, "queue 1's ring never set up");
        assert_eq!(up(16).1.len(), QUEUES);
        let (dev, _) = up(3);
        let entries: Vec<u8> = (0..32)
            .flat_map(|i| dev.reg(RETA + 4 * i).to_le_bytes())
            .collect();
        assert!(entries
            .iter()
            .enumerate()
            .all(|(i, &q)| q as usize == i % 3));
    }

    #[test]
    fn each_queue_receives_and_sends_its_own_frames() {
        static BODY: [u8; 300] = [9; 300];
        let (mut dev, mut pairs) = up(4);
        let frames: Vec<Vec<u8>> = (0..4u8)
            .map(|q| vec![q + 1; 60 + 100 * q as usize])
            .collect();
        for (q, f) in frames.iter().enumerate() {
            assert!(dev.deliver_q(q, f));
        }
        let mut out = [RxFrame { buf: 0, len: 0 }; 8];
        for (p, want) in pairs.iter_mut().zip(&frames) {
            let (rx, tx) = p.split();
            assert_eq!(rx.burst(&mut out), 1);
            assert_eq!(rx.bytes(&out[0]), &want[..]);
            rx.recycle(out[0]);
            tx.slot().unwrap()[..54].fill(want[0]);
            tx.post(54, &BODY).unwrap();
            tx.flush();
        }
        for q in 0..4 {
            let sent = dev.transmitted_q(q);
            assert_eq!(sent.len(), 1, "queue {q}");
            assert_eq!(sent[0][0], q as u8 + 1);
        }
    }

    #[test]
    fn msix_routes_each_receive_queue_to_its_vector_and_arming_touches_only_its_cause() {
        use super::super::{Arm, Wake, WakeRx};
        let (mut dev, mut pairs) = up(4);
        assert_eq!(
            dev.reg(0x5000),
            RXCSUM_PCSD,
            "checksum field given to the hash"
        );
        let m = dev.mmio();
        // Table entry 2 could not be aimed: its pair keeps no wake-up.
        Igb::route_msix(&m, &mut pairs, |k| k != 2).unwrap();
        assert_eq!(dev.reg(GPIE), GPIE_MSIX);
        for k in [0, 1, 3] {
            // Receive byte (0): vector k, valid; transmit byte (1): invalid.
            assert_eq!(dev.reg(IVAR0 + 4 * k), k as u32 | 0x80, "queue {k}");
            assert_eq!(pairs[k].split().0.wake(), Wake::Msi(k as u16));
        }
        assert_eq!(dev.reg(IVAR0 + 8), 0, "no vector for queue 2");
        assert_eq!(pairs[2].split().0.wake(), Wake::None);
        assert_eq!(dev.reg(EIAC), 0b1011, "auto-clear of the routed causes");
        assert_eq!(dev.reg(EIMC), 0xFFFF_FFFF, "all masked");
        // Arming pair 3: its stale cause cleared (EICR, write 1 to clear), then unmasked;
        // disarming masks it alone.
        let rx = pairs[3].split().0;
        assert_eq!(rx.arm(), Arm::Armed);
        assert_eq!((dev.reg(EICR), dev.reg(EIMS)), (1 << 3, 1 << 3));
        rx.disarm();
        assert_eq!(dev.reg(EIMC), 1 << 3);
        // A frame already waiting: no halt, the cause masked again.
        assert!(dev.deliver_q(1, &[1; 60]));
        let rx = pairs[1].split().0;
        assert_eq!(rx.arm(), Arm::Pending);
        assert_eq!((dev.reg(EIMS), dev.reg(EIMC)), (1 << 1, 1 << 1));
        // The 82574's cause registers are not the 82576's in MSI-X mode: untouched.
        assert_eq!(dev.reg(0x00D0), 0, "IMS never written");
        assert_eq!(pairs[2].split().0.arm(), Arm::Unable);
    }

    #[test]
    fn frames_go_as_advanced_descriptors_and_segmentation_through_an_advanced_context() {
        use bareweb_engine::nic::Tso;
        static BODY: [u8; 3000] = [3; 3000];
        let (mut dev, mut pairs) = up(1);
        let p = &mut pairs[0];
        assert_eq!(p.caps().tso_max, 0, "off until open asks for offloads");
        {
            let (_, tx) = p.split();
            tx.slot().unwrap()[..54].fill(2);
            tx.post(54, &BODY).unwrap();
            tx.flush();
        }
        // A plain frame: advanced data descriptors, no offload asked, PAYLEN the frame's.
        assert_eq!(dev.transmitted().len(), 1);
        assert_eq!((dev.options[0], dev.paylens[0]), ((0, false), 3054));
        let tso = Tso {
            mss: 1460,
            l4_offset: 34,
            header_len: 54,
        };
        p.set_offload(true);
        assert_eq!(p.caps().tso_max, bareweb_engine::iface::egress::TSO_LIMIT);
        let (_, tx) = p.split();
        let h = tx.slot().unwrap();
        h[..54].fill(1);
        // The engine's partial checksum: the pseudo-header sum with the whole TCP length.
        h[50..52].copy_from_slice(&0x1234u16.to_be_bytes());
        tx.post_tso(54, &BODY, tso).unwrap();
        // And an ARP-sized frame after it: no segmentation asked for it.
        tx.slot().unwrap()[..42].fill(4);
        tx.post(42, &[]).unwrap();
        tx.flush();
        let out = dev.transmitted();
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].len(), out[1].len()), (54 + 3000, 42));
        assert_eq!(out[0][54..], BODY);
        // The length is out of the sum (as on the 82574: the device adds each segment's).
        let got = u16::from_be_bytes([out[0][50], out[0][51]]) as u32 + (20 + 3000);
        assert_eq!(((got & 0xFFFF) + (got >> 16)) as u16, 0x1234);
        // The context: IPLEN 20, MACLEN 14; TUCMD IPv4|TCP, DTYP context, DEXT; L4LEN 20,
        // MSS 1460, index 0.
        assert_eq!(dev.contexts.len(), 1);
        let c = &dev.contexts[0];
        let dword = |i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
        assert_eq!((dword(0), dword(4)), (20 | 14 << 9, 0));
        assert_eq!(dword(8), 1 << 10 | 1 << 11 | 2 << 20 | 1 << 29);
        assert_eq!(dword(12), 20 << 8 | 1460 << 16);
        // The data: TSE, both checksums, PAYLEN the TCP payload; then the small frame
        // without either.
        assert_eq!(dev.options[1..], [(0x03, true), (0, false)]);
        assert_eq!(dev.paylens[1..], [3000, 42]);
        assert_eq!(tx.tso_frames(), 1);
        tx.flush();
        assert!(tx.room() > 0);
    }

    /// Over IPv6: the advanced context with TUCMD TCP alone (no IPV4) and IPLEN 40, the
    /// data asking for the TCP checksum alone.
    #[test]
    fn segmentation_over_ipv6_uses_a_context_without_ipv4() {
        use bareweb_engine::nic::Tso;
        static BODY: [u8; 3000] = [6; 3000];
        let (mut dev, mut pairs) = up(1);
        let p = &mut pairs[0];
        p.set_offload(true);
        assert!(p.caps().tso6);
        let (_, tx) = p.split();
        let h = tx.slot().unwrap();
        h[..74].fill(1);
        h[12..14].copy_from_slice(&[0x86, 0xDD]);
        let tso = Tso {
            mss: 1440,
            l4_offset: 54,
            header_len: 74,
        };
        tx.post_tso(74, &BODY, tso).unwrap();
        tx.flush();
        assert_eq!(dev.transmitted().len(), 1);
        let c = &dev.contexts[0];
        let dword = |i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
        assert_eq!(dword(0), 40 | 14 << 9);
        assert_eq!(dword(8), 1 << 11 | 2 << 20 | 1 << 29);
        assert_eq!(dword(12), 20 << 8 | 1440 << 16);
        assert_eq!(dev.options, [(0x02, true)]);
        assert_eq!(dev.paylens, [3000]);
    }

    #[test]
    fn pair_zero_alone_reports_the_device_statistics() {
        let (mut dev, mut pairs) = up(4);
        dev.set_reg(0x4074, 40); // GPRC
        dev.set_reg(0x4088, 4000); // GORCL
        let c: Vec<NicCounters> = pairs.iter_mut().map(|p| p.counters()).collect();
        assert_eq!((c[0].hw_rx_frames, c[0].hw_rx_octets), (40, 4000));
        assert!(c[1..]
            .iter()
            .all(|c| c.hw_rx_frames == 0 && c.hw_rx_octets == 0));
        assert!(pairs[1].split().0.device_stats().is_none());
    }

    #[test]
    fn a_lying_device_on_advanced_descriptors_is_counted_and_dropped() {
        let (mut dev, mut pairs) = up(2);
        let (rx, _) = pairs[1].split();
        dev.write_back_rx_q(1, 0, 60, 0x03, 0);
        dev.write_back_rx_q(1, 1, 60, 0x01, 0); // no EOP
        dev.write_back_rx_q(1, 2, 0, 0x03, 0);
        dev.write_back_rx_q(1, 3, 2049, 0x03, 0); // one past the buffer
        dev.write_back_rx_q(1, 4, u16::MAX, 0x03, 0);
        dev.write_back_rx_q(1, 5, 1514, 0x03, 0);
        dev.write_back_rx_q(1, RING - 1, 60, 0x03, 0); // never posted
        let mut out = [RxFrame { buf: 0, len: 0 }; 2 * RING as usize];
        let n = rx.burst(&mut out);
        assert_eq!(n, 2);
        assert_eq!((out[0].len, out[1].len), (60, 1514));
        assert_eq!(rx.tally().1, 4);
        assert!(out[..n].iter().all(|f| rx.holds(rx.bytes(f))));
        assert_eq!(pairs[0].split().0.burst(&mut out), 0);
    }
}
