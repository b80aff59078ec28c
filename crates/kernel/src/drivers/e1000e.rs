//! Intel 82574L ("e1000e"; QEMU `-device e1000e`, VMware's E1000E): the 82540EM's
//! register set and queue code ([`super::e1000`]'s `Regs`, `E1000Rx`, `E1000Tx`, shared,
//! not copied) plus what the 82574 adds: a second queue pair with receive-side scaling,
//! extended receive descriptors, and MSI-X.
//!
//! Heads up! read the Intel 82574 GbE Controller Family datasheet, §7.1.5 (extended
//! receive descriptors), §7.1.12 (RSS), §7.4.2 (MSI-X, IVAR), §10.2 (registers); Linux
//! e1000e `netdev.c` (`e1000_setup_rctl`, `e1000e_setup_rss_hash`, `e1000_configure_msix`)
//! for the order this follows; QEMU `hw/net/e1000e_core.c` for what the emulation does.
//!
//! - Queue pairs: up to two ([`QUEUES`]). With two, RSS spreads receive flows over both
//!   (MRQC: a Toeplitz hash of the TCP/IPv4 4-tuple, or the IPv4 pair for other IP; the
//!   128-entry redirection table alternates the queues), which needs extended descriptors
//!   (RFCTL.EXTEN) and the checksum field given to the hash (RXCSUM.PCSD): QEMU's
//!   `e1000e_rss_enabled` asks exactly that. Each pair's transmit ring is its own (TDT0,
//!   TDT1), so each core posts without sharing.
//! - Extended descriptors are 16 bytes like legacy ones; the driver posts a buffer address
//!   and zeroes the rest, the device writes back status/errors at 8 and the length at 12
//!   ([`super::e1000`]'s `Layout::EXTENDED`): the receive path, its checks and its shadow
//!   of buffers are the 82540EM's.
//! - Wake-ups: MSI-X, receive queue k's cause (ICR.RXQ0/RXQ1) routed by IVAR to table
//!   entry k, aimed at the core that owns pair k; EIAC clears the cause when the message
//!   is sent. Arming a side clears and unmasks its own cause only (the other queue's core
//!   arms its own). Without MSI-X (a device whose table cannot be mapped) the INTx line is
//!   probed as on the 82540EM and wakes pair 0's core; other pairs' cores wake by timer.
//! - Transmit offloads (unless `offload=off`): TCP segmentation with IPv4 and TCP checksum
//!   insertion (over IPv6 the TCP one alone), through a context descriptor and extended
//!   data descriptors
//!   (`E1000Tx::post_tso`, shared code: the 82540EM has them too, but its driver does not
//!   offer them). Other frames carry complete checksums from the engine.
//! - Link: STATUS.LU, as on the 82540EM.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_engine::nic::{LinkSense, Nic, NicCounters};
use bareweb_engine::wire::EthernetAddress;

use super::e1000::{self, E1000Link, E1000Rx, E1000Tx, Error, Layout, Regs, RxWake, E1000};
use super::hal::{Hal, Identity, Mmio, Reg, RW, WO};
use super::{Driver, Open};
use crate::arch::irq::NIC_VECTOR;
use crate::arch::pci::msix::MsiX;
use crate::arch::pci::Device;

/// 82574L (QEMU's e1000e, tested there), 82574LA (the same part with another ID; not
/// tested).
pub const DEVICES: [u16; 2] = [0x10D3, 0x10F6];

/// Queue pairs the 82574 has.
pub const QUEUES: usize = 2;

const CTRL_EXT: usize = 0x0018;
const EIAC: usize = 0x00DC;
const IVAR: usize = 0x00E4;
const RFCTL: usize = 0x5008;
const MRQC: usize = 0x5818;
const RETA: usize = 0x5C00;
const RSSRK: usize = 0x5C80;

/// ICR/IMS: receive queue 0's cause in MSI-X mode (queue 1's is the next bit).
pub const ICR_RXQ0: u32 = 1 << 20;
/// RFCTL: extended receive descriptors; iSCSI, NFS write and read filtering off (QEMU
/// warns when they are left on: it has none).
pub const RFCTL_BITS: u32 = 1 << 15 | 1 | 1 << 6 | 1 << 7;
/// RXCSUM.PCSD: the descriptor's checksum field carries the RSS hash.
pub const RXCSUM_PCSD: u32 = 1 << 13;
/// MRQC: RSS on, hashing TCP/IPv4, IPv4, TCP/IPv6, IPv6.
pub const MRQC_RSS: u32 = 1 | 1 << 16 | 1 << 17 | 1 << 18 | 1 << 20;
/// A RETA dword: four entries, bit 7 of each byte the queue; alternating 0, 1.
pub const RETA_ALTERNATE: u32 = 0x8000_8000;
/// IVAR: RXQ0 → entry 0, RXQ1 → entry 1, TXQ0, TXQ1 and other causes → entry 2 (never
/// unmasked in IMS); bit 3 of each nibble marks it valid.
pub const IVAR_MAP: u32 = 0x8 | 0x9 << 4 | 0xA << 8 | 0xA << 12 | 0xA << 16;

/// The Toeplitz key (the one Microsoft's RSS specification gives as its example).
const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// One queue pair of an 82574: the 82540EM's pair type, brought up the 82574's way.
pub struct E1000e<H: Hal = Identity>(E1000<H>);

impl E1000e {
    /// Whether `dev` is an 82574 we drive.
    pub fn matches(dev: &Device) -> bool {
        dev.vendor == e1000::VENDOR && DEVICES.contains(&dev.device)
    }
}

impl<H: Hal> E1000e<H> {
    /// The 82540EM-typed queue pair inside.
    pub fn into_inner(self) -> E1000<H> {
        self.0
    }

    /// Resets the device whose registers are `m` and brings up `pairs` queue pairs
    /// (1 or 2; more are one of each), RSS on with two, interrupts masked.
    pub fn bring_up(m: &Mmio, pairs: usize) -> Result<Vec<E1000e<H>>, Error> {
        let regs = Regs::new(m).ok_or(Error::NoRegisters)?;
        let reg =
            |off: usize| -> Result<Reg<u32, WO>, Error> { m.reg(off).ok_or(Error::NoRegisters) };
        let pairs = pairs.clamp(1, QUEUES);
        let mac = regs.reset()?;
        let mut sides = Vec::with_capacity(pairs);
        for k in 0..pairs {
            let rd = Regs::queue(m, 0x2800, k).ok_or(Error::NoRegisters)?;
            let td = Regs::queue(m, 0x3800, k).ok_or(Error::NoRegisters)?;
            let mut rx = E1000Rx::new::<H>(&regs, &rd, Layout::EXTENDED)?;
            if k == 0 {
                rx.count_device(&regs);
            }
            sides.push((rx, E1000Tx::<H>::new(&td)?));
        }
        // Interrupt routing first (harmless until MSI-X is on and a cause unmasked).
        reg(IVAR)?.write(IVAR_MAP);
        reg(EIAC)?.write(ICR_RXQ0 | ICR_RXQ0 << 1);
        // No interrupt auto-masking (IAME, EIAME: each queue's core masks its own cause);
        // MSI-X pending bits cleared by the driver's reads (PBA_CLR), as Linux sets it.
        let ext: Reg<u32, RW> = m.reg(CTRL_EXT).ok_or(Error::NoRegisters)?;
        ext.write(ext.read() & !(1 << 27 | 1 << 24) | 1 << 31);
        reg(RFCTL)?.write(RFCTL_BITS);
        regs.rxcsum.write(RXCSUM_PCSD);
        if pairs > 1 {
            for (i, w) in RSS_KEY.chunks_exact(4).enumerate() {
                reg(RSSRK + 4 * i)?.write(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            }
            for i in 0..32 {
                reg(RETA + 4 * i)?.write(RETA_ALTERNATE);
            }
            reg(MRQC)?.write(MRQC_RSS);
        } else {
            reg(MRQC)?.write(0);
        }
        regs.enable_tx();
        regs.enable_rx();
        Ok(sides
            .into_iter()
            .map(|(mut rx, tx)| {
                rx.refill();
                E1000e(E1000::from_parts(rx, tx, mac, regs))
            })
            .collect())
    }
}

impl<H: Hal> bareweb_engine::cores::CoreQueue for E1000e<H> {}

impl<H: Hal> Nic for E1000e<H> {
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

impl<H: Hal> Driver for E1000e<H> {
    type Error = Error;
    const NAME: &'static str = "e1000e";

    fn matches(dev: &Device) -> bool {
        E1000e::matches(dev)
    }

    /// Up to two queue pairs (RSS with two); pair k's receive queue wakes `wake[k]`'s
    /// core by MSI-X entry k, or, without MSI-X, pair 0's by the probed INTx line.
    fn open(dev: &Device, with: &Open<'_>) -> Result<(Vec<E1000e<H>>, usize), Error> {
        let m = e1000::map_registers::<H>(dev)?;
        let mut pairs = E1000e::<H>::bring_up(&m, with.pairs)?;
        for q in &mut pairs {
            q.0.tx_mut().set_tso(with.offload);
        }
        if with.wake.is_empty() {
            return Ok((pairs, QUEUES));
        }
        match MsiX::find::<H>(dev) {
            Some(x) => {
                for (k, (q, &apic)) in pairs.iter_mut().zip(with.wake).enumerate() {
                    if x.set(k as u16, apic, NIC_VECTOR) {
                        q.0.rx_mut().set_wake(RxWake::Msi(k as u16, ICR_RXQ0 << k));
                    }
                }
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

impl<H: Hal> E1000e<H> {
    /// The device's link: STATUS.LU, as on the 82540EM.
    pub fn link_sense(&self) -> E1000Link {
        self.0.link_sense()
    }
}

#[cfg(test)]
mod tests {
    //! The driver against `drivers::fake`'s register file playing an 82574: extended
    //! write-backs (the device overwrites the buffer address), two queues, and lies.
    use super::super::fake::{FakeE1000, FakeHal};
    use super::*;
    use bareweb_engine::nic::{RxFrame, RxRing, TxRing};

    const MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x58];
    const RING: u32 = 256;

    fn up(pairs: usize) -> (FakeE1000, Vec<E1000e<FakeHal>>) {
        let mut dev = FakeE1000::default();
        dev.set_reg(0x5400, u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]));
        dev.set_reg(0x5404, u32::from_le_bytes([MAC[4], MAC[5], 0, 0]) | 1 << 31);
        dev.set_reg(0x0008, 1 << 1);
        let nic = dev.bring_up(|m| E1000e::<FakeHal>::bring_up(m, pairs));
        (dev, nic.unwrap())
    }

    #[test]
    fn two_pairs_turn_on_rss_extended_descriptors_and_msix_routing() {
        let (dev, mut pairs) = up(QUEUES);
        assert_eq!(pairs.len(), 2);
        assert_eq!(dev.reg(RFCTL), RFCTL_BITS);
        assert!(dev.extended());
        assert_eq!(
            dev.reg(0x5000),
            RXCSUM_PCSD,
            "checksum field given to the hash"
        );
        assert_eq!(dev.reg(MRQC), MRQC_RSS);
        assert!((0..32).all(|i| dev.reg(RETA + 4 * i) == RETA_ALTERNATE));
        assert_eq!(dev.reg(RSSRK), 0xda56_5a6d);
        assert_eq!(dev.reg(IVAR), IVAR_MAP);
        assert_eq!(dev.reg(EIAC), 3 << 20);
        assert_eq!(
            dev.reg(CTRL_EXT) & (1 << 27 | 1 << 24 | 1 << 31),
            1 << 31,
            "no auto-mask"
        );
        assert_eq!(dev.reg(0x00D8), 0xFFFF_FFFF, "interrupts masked");
        assert_eq!(dev.reg(0x0100) & 2, 2, "receiver on");
        assert_eq!(dev.reg(0x0400) & 2, 2, "transmitter on");
        // Both queues' rings: DMA memory of 256 descriptors, every receive descriptor
        // but one posted with one tail write each.
        for q in 0..2 {
            for base in [0x2800, 0x3800] {
                let (at, n) = dev.ring_at(base + 0x100 * q);
                assert_eq!(n, RING);
                assert!(FakeHal::translate(at, RING as usize * 16).is_some());
            }
            assert_eq!(dev.reg(e1000::RDT + 0x100 * q), RING - 1);
            assert_eq!(dev.reg(e1000::TDT + 0x100 * q), 0);
        }
        assert_ne!(dev.ring_at(0x2800).0, dev.ring_at(0x2900).0);
        for p in &mut pairs {
            assert_eq!(p.mac(), EthernetAddress(MAC));
            assert_eq!(p.split().0.tally(), (0, 0, 1));
            assert!(p.link_sense().link_up());
        }
    }

    #[test]
    fn one_pair_leaves_rss_and_the_second_ring_off() {
        let (dev, pairs) = up(1);
        assert_eq!(pairs.len(), 1);
        assert_eq!(dev.reg(MRQC), 0);
        assert_eq!(dev.ring_at(0x2900).1, 0, "queue 1's ring never set up");
        assert!(dev.extended());
        // More pairs than the device has: two.
        assert_eq!(up(8).1.len(), 2);
    }

    #[test]
    fn each_queue_receives_and_sends_its_own_frames() {
        static BODY: [u8; 700] = [9; 700];
        let (mut dev, mut pairs) = up(2);
        let a: Vec<u8> = (0..1514).map(|i| i as u8).collect();
        let b = [7u8; 60];
        assert!(dev.deliver_q(0, &a));
        assert!(dev.deliver_q(1, &b));
        let mut out = [RxFrame { buf: 0, len: 0 }; 8];
        for (p, want) in pairs.iter_mut().zip([&a[..], &b[..]]) {
            let (rx, tx) = p.split();
            assert_eq!(rx.burst(&mut out), 1);
            assert_eq!(rx.bytes(&out[0]), want);
            assert!(rx.holds(rx.bytes(&out[0])));
            rx.recycle(out[0]);
            tx.slot().unwrap()[..54].fill(want[0]);
            tx.post(54, &BODY).unwrap();
            tx.flush();
        }
        for q in 0..2 {
            let sent = dev.transmitted_q(q);
            assert_eq!(sent.len(), 1, "queue {q}");
            assert_eq!(sent[0].len(), 54 + 700);
            assert_eq!(sent[0][0], [a[0], b[0]][q]);
        }
        // The recycled buffers go back with fresh addresses (the write-back erased them):
        // the next frames arrive in driver memory.
        for _ in 0..2 * RING {
            assert!(
                dev.deliver_q(1, &b) || {
                    let (rx, _) = pairs[1].split();
                    let n = rx.burst(&mut out);
                    out[..n].iter().for_each(|f| rx.recycle(*f));
                    dev.deliver_q(1, &b)
                }
            );
        }
    }

    #[test]
    fn segmentation_offload_is_a_context_and_data_descriptors_with_the_length_taken_out() {
        use bareweb_engine::nic::Tso;
        static BODY: [u8; 3000] = [3; 3000];
        let (mut dev, mut pairs) = up(1);
        let p = &mut pairs[0];
        assert_eq!(p.caps().tso_max, 0, "off until open asks for offloads");
        let tso = Tso {
            mss: 1460,
            l4_offset: 34,
            header_len: 54,
        };
        {
            let (_, tx) = p.split();
            tx.slot().unwrap()[..54].fill(1);
            assert!(tx.post_tso(54, &BODY, tso).is_err(), "refused while off");
        }
        p.0.tx_mut().set_tso(true);
        assert_eq!(p.caps().tso_max, bareweb_engine::iface::egress::TSO_LIMIT);
        let (_, tx) = p.split();
        let h = tx.slot().unwrap();
        h[..54].fill(1);
        // The engine's partial checksum: the pseudo-header sum with the whole TCP length.
        h[50..52].copy_from_slice(&0x1234u16.to_be_bytes());
        tx.post_tso(54, &BODY, tso).unwrap();
        // A header that cannot be: the TCP header before the end of an IPv4 one.
        tx.slot().unwrap()[..54].fill(1);
        let bad = Tso {
            l4_offset: 20,
            ..tso
        };
        assert!(tx.post_tso(54, &BODY, bad).is_err());
        tx.flush();
        let out = dev.transmitted();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 54 + 3000);
        assert_eq!(out[0][54..], BODY);
        // The length is out of the sum: adding it back gives the engine's.
        let got = u16::from_be_bytes([out[0][50], out[0][51]]) as u32 + (20 + 3000);
        assert_eq!(((got & 0xFFFF) + (got >> 16)) as u16, 0x1234);
        let c = &dev.contexts[0];
        assert_eq!((c[0], c[1], u16::from_le_bytes([c[2], c[3]])), (14, 24, 33));
        assert_eq!((c[4], c[5], u16::from_le_bytes([c[6], c[7]])), (34, 50, 0));
        let paylen = u32::from_le_bytes([c[8], c[9], c[10], 0]) & 0xF_FFFF;
        assert_eq!((paylen, c[11], c[13]), (3000, 0x27, 54));
        assert_eq!(u16::from_le_bytes([c[14], c[15]]), 1460);
        assert_eq!(dev.options, [(0x03, true)], "IPv4 and TCP checksums, TSE");
        assert_eq!(tx.tso_frames(), 1);
        // Reclaimed like any frame (its three descriptors).
        tx.flush();
        assert!(tx.room() > 0);
    }

    /// Over IPv6 (the frame's EtherType): the context without TUCMD.IP and with IPCSE 0,
    /// the data asking for the TCP checksum alone (an IPv4 checksum written at IPCSO would
    /// land in the source address); the TCP length out of the sum as over IPv4. A TCP
    /// header not right after IPv6's fixed one is refused.
    #[test]
    fn segmentation_over_ipv6_asks_for_the_tcp_checksum_alone() {
        use bareweb_engine::nic::Tso;
        static BODY: [u8; 3000] = [5; 3000];
        let (mut dev, mut pairs) = up(1);
        let p = &mut pairs[0];
        p.0.tx_mut().set_tso(true);
        assert!(p.caps().tso6);
        let (_, tx) = p.split();
        let h = tx.slot().unwrap();
        h[..74].fill(1);
        h[12..14].copy_from_slice(&[0x86, 0xDD]);
        h[70..72].copy_from_slice(&0x1234u16.to_be_bytes());
        let tso = Tso {
            mss: 1440,
            l4_offset: 54,
            header_len: 74,
        };
        tx.post_tso(74, &BODY, tso).unwrap();
        let h = tx.slot().unwrap();
        h[..74].fill(1);
        h[12..14].copy_from_slice(&[0x86, 0xDD]);
        let ext = Tso {
            l4_offset: 62,
            header_len: 82,
            ..tso
        };
        assert!(tx.post_tso(82, &BODY, ext).is_err(), "an extension header");
        tx.flush();
        let out = dev.transmitted();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0][74..], BODY);
        let got = u16::from_be_bytes([out[0][70], out[0][71]]) as u32 + (20 + 3000);
        assert_eq!(((got & 0xFFFF) + (got >> 16)) as u16, 0x1234);
        let c = &dev.contexts[0];
        // IPCSS 14, IPCSO 24 (unused), IPCSE 0; TUCSS 54, TUCSO 70.
        assert_eq!((c[0], c[1], u16::from_le_bytes([c[2], c[3]])), (14, 24, 0));
        assert_eq!((c[4], c[5], u16::from_le_bytes([c[6], c[7]])), (54, 70, 0));
        // DEXT, TSE, TCP; no IP.
        assert_eq!((c[11], c[13]), (0x25, 74));
        assert_eq!(u16::from_le_bytes([c[14], c[15]]), 1440);
        assert_eq!(dev.options, [(0x02, true)], "the TCP checksum alone, TSE");
    }

    #[test]
    fn a_lying_device_on_extended_descriptors_is_counted_and_dropped() {
        let (mut dev, mut pairs) = up(2);
        let (rx, _) = pairs[1].split();
        dev.write_back_rx_q(1, 0, 60, 0x03, 0);
        dev.write_back_rx_q(1, 1, 60, 0x01, 0); // no EOP
        dev.write_back_rx_q(1, 2, 60, 0x03, 0x01); // CRC error
        dev.write_back_rx_q(1, 3, 0, 0x03, 0);
        dev.write_back_rx_q(1, 4, 2049, 0x03, 0); // one past the buffer
        dev.write_back_rx_q(1, 5, u16::MAX, 0x03, 0);
        dev.write_back_rx_q(1, 6, 1514, 0x03, 0x20); // TCP checksum bit: the engine checks
                                                     // DD on the descriptor never posted (the one at the tail).
        dev.write_back_rx_q(1, RING - 1, 60, 0x03, 0);
        let mut out = [RxFrame { buf: 0, len: 0 }; 2 * RING as usize];
        let n = rx.burst(&mut out);
        assert_eq!(n, 2);
        assert_eq!((out[0].len, out[1].len), (60, 1514));
        assert_eq!(rx.tally().1, 5);
        assert!(out[..n].iter().all(|f| rx.holds(rx.bytes(f))));
        // Queue 0 saw nothing of it.
        assert_eq!(pairs[0].split().0.burst(&mut out), 0);
    }

    /// Fuzz-style: a device writing arbitrary bytes into any receive descriptor (posted or
    /// not, DD or not), any number of times, with the engine recycling frames and
    /// handing back frames it never got. Every frame the driver lends is inside its
    /// buffers and at most 2 KiB, no buffer is lent twice at once, and the driver keeps
    /// receiving afterwards. (The fakes are test-only code of this crate, so this runs
    /// here rather than as a cargo-fuzz target; the seeds are fixed, so it is repeatable.)
    #[test]
    fn arbitrary_write_backs_never_lead_outside_the_buffers() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut dev, mut pairs) = up(2);
        let (ring, _) = dev.ring_at(0x2800);
        let (rx, _) = pairs[0].split();
        let mut lent: Vec<RxFrame> = Vec::new();
        let mut out = [RxFrame { buf: 0, len: 0 }; 64];
        for _ in 0..20_000 {
            let r = next();
            match r % 4 {
                0 | 1 => {
                    // Arbitrary bytes over the write-back half (and the address half) of
                    // any descriptor.
                    let i = (r >> 8) % RING as u64;
                    let mut bytes = next().to_le_bytes();
                    let off = if r & 1 << 40 != 0 { 0 } else { 8 };
                    if off == 8 && r & 1 << 41 != 0 {
                        // A plausible one: DD|EOP, no errors, a length around the buffer's.
                        bytes[0] |= 3;
                        bytes[3] = 0;
                        let len = bytes[5] as u16 * 17;
                        bytes[4..6].copy_from_slice(&len.to_le_bytes());
                    }
                    FakeHal::write(ring + 16 * i + off, &bytes);
                }
                2 => {
                    let n = rx.burst(&mut out);
                    for f in &out[..n] {
                        let b = rx.bytes(f);
                        assert!(rx.holds(b) && b.len() <= 2048 && !b.is_empty());
                        assert!(!lent.iter().any(|l| l.buf == f.buf), "lent twice");
                        lent.push(*f);
                    }
                }
                _ => {
                    // The engine gives back a frame it holds, or one it never got.
                    if r & 1 << 20 != 0 && !lent.is_empty() {
                        let k = (r >> 24) as usize % lent.len();
                        rx.recycle(lent.swap_remove(k));
                    } else {
                        let bogus = RxFrame {
                            buf: (r >> 32) as u32 % 1024,
                            len: (r >> 16) as u32,
                        };
                        if !lent.iter().any(|l| l.buf == bogus.buf) {
                            rx.recycle(bogus);
                            let b = rx.bytes(&bogus);
                            assert!(b.is_empty() || rx.holds(b));
                        }
                    }
                }
            }
        }
        for f in lent.drain(..) {
            rx.recycle(f);
        }
        assert!(
            rx.tally().0 > 0 && rx.tally().1 > 0,
            "lies both taken and refused"
        );
        // Drained, it keeps working: an honest write-back at the driver's next descriptor
        // is one frame, inside the buffers.
        while rx.burst(&mut out) > 0 {
            out.iter().for_each(|f| rx.recycle(*f));
        }
        let i = rx.next_index() as u32;
        dev.write_back_rx_q(0, i, 60, 0x03, 0);
        assert_eq!(rx.burst(&mut out), 1);
        assert_eq!(out[0].len, 60);
        assert!(rx.holds(rx.bytes(&out[0])));
    }
}
