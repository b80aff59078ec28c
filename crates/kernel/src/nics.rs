//! The NICs the kernel serves on (bonding): every PCI function a driver drives (a set
//! may mix models: a virtio-net and an e1000e, each through its own driver), each opened
//! with as many queue pairs as the plan can use; with two or more and bonding on, one
//! `bond::BondNic` per core over that core's queue pair of every NIC, core 0's with the
//! link monitor (each device's link from [`Driver::link`], read every
//! `bond_monitor_ms`); and the console's `bond:` counters line. Runs once at start on the
//! boot CPU (the line once a second on core 0); nothing here is on the request path.

use alloc::boxed::Box;
use alloc::vec::Vec;

use bareweb_engine::bond::{
    Bond, BondNic, BondRx, BondTx, LinkWatch, Mode as BondMode, Policy as BondPolicy, MAX_NICS,
};
use bareweb_engine::cores::board::Board;
use bareweb_engine::nic::{Nic, NicCounters};
use bareweb_engine::wire::EthernetAddress;

use crate::arch::clock::TscClock;
use crate::arch::pci::Device;
use crate::cmdline::Settings;
use crate::drivers::any::{AnyNic, AnyRx, AnyTx};
use crate::drivers::{Driver, Open, WakeRx};
use crate::{fatal, kprintln};

/// The bonding the command line asks for with `found` NICs: `bond=`
/// (default `spread` with two or more), `off` or one NIC meaning none.
pub fn bonding(s: &Settings, found: usize) -> Option<(BondMode, BondPolicy, u32)> {
    let mode = s.bond.unwrap_or(if found > 1 {
        BondMode::Spread
    } else {
        BondMode::Off
    });
    if mode == BondMode::Off {
        if found > 1 {
            kprintln!("bond: off: serving on NIC 0 alone ({found} found)");
        }
        return None;
    }
    if found < 2 {
        kprintln!(
            "bond: {} needs two NICs, {found} found: serving on one",
            mode.name()
        );
        return None;
    }
    Some((mode, s.bond_policy, s.bond_monitor_ms))
}

/// The NICs opened: NIC k's queue pairs at k.
pub struct Opened {
    /// Every NIC's queue pairs (as many for each: the fewest any NIC gave).
    pub nics: Vec<Vec<AnyNic>>,
    /// Queue pairs the first NIC offered.
    pub offered: usize,
    /// Every NIC's MAC.
    pub macs: Vec<EthernetAddress>,
}

/// Opens up to `max` of `devs` (those a driver drives, in PCI order) as `with` asks (queue
/// pairs, wake-up targets, offloads). Stops the machine if one cannot be brought up.
pub fn open(devs: &[Device], with: &Open<'_>, max: usize, hz: u64) -> Opened {
    let devs: Vec<&Device> = devs
        .iter()
        .filter(|d| AnyNic::matches(d))
        .take(max.clamp(1, MAX_NICS))
        .collect();
    let bring_up = |dev: &Device, with: &Open<'_>| match AnyNic::open(dev, with) {
        Ok((queues, _)) if queues.is_empty() => fatal!("NIC at {}: no queue pair", dev.addr),
        Ok(n) => n,
        Err(e) => fatal!("NIC at {}: {e:?}", dev.addr),
    };
    let mut nics: Vec<(Vec<AnyNic>, usize, u64)> = Vec::new();
    for dev in &devs {
        let t = crate::arch::cpu::rdtsc();
        let (queues, o) = bring_up(dev, with);
        nics.push((queues, o, crate::arch::cpu::rdtsc() - t));
    }
    // The set serves on the fewest pairs any NIC gave. A NIC brought up with more would
    // steer flows (its RSS, or its TAP's queues) to pairs nobody reads: a set of mixed
    // models (an e1000e's two pairs beside an e1000's one) brings those up again with the
    // set's count. The first bring-up's memory stays behind (start-up blocks are never
    // freed); the device was reset by the second before the first's rings are dropped.
    let got = nics.iter().map(|n| n.0.len()).min().unwrap_or(0);
    for (dev, n) in devs.iter().zip(&mut nics) {
        if n.0.len() > got {
            let fewer = Open {
                pairs: got,
                wake: with.wake,
                offload: with.offload,
            };
            let t = crate::arch::cpu::rdtsc();
            n.0 = bring_up(dev, &fewer).0;
            n.0.truncate(got);
            n.2 = crate::arch::cpu::rdtsc() - t;
        }
    }
    for (k, (dev, n)) in devs.iter().zip(&mut nics).enumerate() {
        say(k, &dev.addr, &mut n.0, n.1, with.offload, n.2, hz);
    }
    let offered = nics.first().map_or(0, |n| n.1);
    let nics: Vec<Vec<AnyNic>> = nics.into_iter().map(|n| n.0).collect();
    let macs = nics.iter().map(|q| q[0].mac()).collect();
    Opened {
        nics,
        offered,
        macs,
    }
}

/// The set's models as the console names them: `virtio-net`, or `e1000e + virtio-net`.
pub fn models(opened: &Opened) -> alloc::string::String {
    let mut names: Vec<&str> = Vec::new();
    for q in &opened.nics {
        if let Some(n) = q.first().map(AnyNic::name) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names.join(" + ")
}

/// The console's `nic:` line for NIC `k` at `at`: bring-up time (`ticks` of the TSC),
/// MAC, queue pairs, how its interrupts wake a halted core, whether it segments.
fn say(
    k: usize,
    at: &dyn core::fmt::Display,
    queues: &mut [AnyNic],
    offered: usize,
    offload: bool,
    ticks: u64,
    hz: u64,
) {
    let Some(q) = queues.first_mut() else { return };
    let (mac, tso, name) = (q.mac(), q.caps().tso_max, q.name());
    let wake = q.split().0.wake();
    kprintln!(
        "nic: {} {k} at {at} up in {} ms, MAC {mac}, {} of {offered} queue pair(s), wake-ups by {wake}, segmentation offload {}",
        name,
        ticks * 1000 / hz,
        queues.len(),
        match tso {
            0 if offload => "none offered",
            0 => "off",
            _ => "on",
        }
    );
}

/// One NIC opened some other way than from PCI (a microVM's virtio-mmio device, at `at`),
/// as [`Opened`].
pub fn opened(
    mut queues: Vec<AnyNic>,
    offered: usize,
    at: &str,
    offload: bool,
    t: u64,
    hz: u64,
) -> Opened {
    let Some(mac) = queues.first().map(Nic::mac) else {
        fatal!("NIC at {at}: no queue pair")
    };
    say(
        0,
        &at,
        &mut queues,
        offered,
        offload,
        crate::arch::cpu::rdtsc() - t,
        hz,
    );
    Opened {
        nics: alloc::vec![queues],
        offered,
        macs: alloc::vec![mac],
    }
}

/// One queue pair's device counters (both sides), for `BondNic::with_device_counters`.
pub fn device_counters(r: &AnyRx, t: &AnyTx, c: &mut NicCounters) {
    AnyNic::rx_counters(r, c);
    AnyNic::tx_counters(t, c);
}

/// A NIC set's device counters, summed over its NICs (network-core mode's core 0).
pub fn bond_counters(r: &BondRx<AnyRx>, t: &BondTx<AnyTx>, c: &mut NicCounters) {
    for (r, t) in r.rings().iter().zip(t.rings()) {
        device_counters(r, t, c);
    }
}

/// One `BondNic` per queue pair `q` (core `q`'s), over queue pair `q` of every NIC of
/// `opened`, for `queues` cores; core 0's reads every NIC's link.
pub fn sets(
    bond: &'static Bond,
    opened: Opened,
    queues: usize,
    clock: TscClock,
) -> Vec<BondNic<AnyRx, AnyTx>> {
    let links = opened.nics.iter().map(|q| q[0].link()).collect();
    let mut watch = Some(LinkWatch::new(bond, links, Box::new(clock)));
    let mut per_nic: Vec<_> = opened.nics.into_iter().map(Vec::into_iter).collect();
    (0..queues)
        .map(|core| {
            let members: Vec<AnyNic> = per_nic.iter_mut().filter_map(Iterator::next).collect();
            let set = BondNic::from_nics(bond, core, members, AnyNic::into_rings)
                .with_device_counters(device_counters);
            match watch.take() {
                Some(w) => set.with_watch(w),
                None => set,
            }
        })
        .collect()
}

/// With a NIC set, a second line: `bond: receive=K elections=N` and per NIC k
/// `nick_link=0|1 nick_tx=frames nick_moved=connections nick_garps=N`.
pub fn print_bond(board: &Board) {
    let Some(b) = board.bond() else { return };
    let l = b.links();
    let (_, _, elections) = b.events(0);
    crate::kprint!("bond: receive={} elections={elections}", l.receive);
    for k in 0..b.count() {
        let c = b.counts(k);
        crate::kprint!(
            " nic{k}_link={} nic{k}_tx={} nic{k}_moved={} nic{k}_garps={}",
            u8::from(l.is_up(k)),
            c.tx_frames,
            c.moved_off,
            c.garps
        );
    }
    kprintln!();
}
