//! What the kernel tells its console once it serves: the `boot: ready` and
//! `bareweb: ready` lines, and with `log=stats` a line of counters every second.

use bareweb_engine::cores::board::Board;
use bareweb_engine::nic::Clock;
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};

use crate::arch::clock::TscClock;
use crate::arch::smp;
use crate::boot::Booted;
use crate::{kprintln, mem, nics, rest};

/// The two lines that say the kernel serves: how long the boot took (and its stages), and
/// what is served where, on `nic` (MAC `mac`) as `plan` says.
pub fn ready(booted: &Booted, nic: &str, mac: EthernetAddress, plan: &str) {
    let s = &booted.settings;
    let hz = booted.clock.hz;
    let entry = crate::ENTRY_TSC.load(core::sync::atomic::Ordering::Relaxed);
    let us = |t: u64| t / (hz / 1_000_000).max(1);
    kprintln!(
        "boot: ready {} us after the kernel's first instruction, which came {} us after the CPU's reset (firmware and loader); stages in us:{}",
        us(crate::arch::cpu::rdtsc().saturating_sub(entry)),
        us(entry),
        crate::boot_trace::Stages { since: entry, hz }
    );
    kprintln!(
        "bareweb: ready: serving {} files at http://{}:{}/{} on {nic} (MAC {mac}, {}/{} gw {}{}), sched {:?}, cc {:?}, {} TCBs per core, {plan}, stats page {}, heap used {} KiB",
        booted.site.len(),
        s.ip,
        s.port,
        UdpUrl(s.ip, s.udp),
        s.ip,
        s.prefix,
        Gw(s.gateway),
        V6(s.ip6, s.ip6_static),
        s.sched,
        s.cc,
        s.tcbs,
        if s.stats_page { "on" } else { "off" },
        mem::used() >> 10
    );
}

/// ` and bwudp://IP:PORT/` when the UDP protocol is served (nothing otherwise).
struct UdpUrl(Ipv4Address, crate::cmdline::Udp);

impl core::fmt::Display for UdpUrl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.1.port {
            Some(p) => write!(
                f,
                " and bwudp://{}:{p}/{}",
                self.0,
                if self.1.paper { " (paper mode)" } else { "" }
            ),
            None => Ok(()),
        }
    }
}

/// `, IPv6 …`: what `ip6=` holds. Each address is printed as it passes duplicate address
/// detection (`bareweb: IPv6 ADDR on the link`), a second or so after this line.
struct V6(bool, Option<bareweb_settings::Ip6Static>);

impl core::fmt::Display for V6 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            V6(false, _) => f.write_str(", IPv6 off"),
            V6(true, None) => f.write_str(
                ", IPv6 link-local and from router advertisements, each on the console once DAD passes",
            ),
            V6(true, Some(a)) => write!(
                f,
                ", IPv6 link-local and {}/{}, each on the console once DAD passes",
                bareweb_engine::wire::Ipv6Address(a.addr),
                a.prefix
            ),
        }
    }
}

/// An optional gateway, displayed as the address or `none`.
struct Gw(Option<Ipv4Address>);

impl core::fmt::Display for Gw {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(ip) => write!(f, "{ip}"),
            None => f.write_str("none"),
        }
    }
}

/// One line of `key=value` counters on the console: the engine's and the devices', summed
/// over every core's published row.
pub fn print_stats(board: &Board, clock: &TscClock) {
    // No allocation here (the heap is sealed): a snapshot per core and name, once a second.
    let st = |name: &str| {
        (0..board.cores())
            .map(|c| board.snapshot(c).stat(name))
            .sum::<u64>()
    };
    let nic = |name: &str| {
        (0..board.cores())
            .map(|c| board.snapshot(c).nic(name))
            .sum::<u64>()
    };
    let stack = (0..board.cores()).map(smp::stack_used).max().unwrap_or(0);
    kprintln!(
        "stats: uptime_ms={} cores={} http_requests={} http_2xx={} rx_frames={} tx_frames={} tcbs_in_use={} tcp_accepted={} tcp_rto_retransmits={} tx_ring_full={} nic_rx={} nic_tx={} doorbells={} rx_doorbells={} suppressed={} rx_bad={} tx_bad={} tx_full={} hw_rx={} hw_tx={} hw_missed={} hw_no_buffer={} hw_crc_errors={} dispatched={} drained={} conn_map={} udp_initial={} udp_subsequent={} udp_packets={} udp_bounded={} udp_rate_limited={} udp_ids_max={} late_allocs={} late_live={} tls_no_memory={} stack_max={}",
        clock.now_ns() / 1_000_000,
        board.cores(),
        st("http_requests"),
        st("http_2xx"),
        st("rx_frames"),
        st("tx_frames"),
        st("tcbs_in_use"),
        st("tcp_accepted"),
        st("tcp_rto_retransmits"),
        st("tx_ring_full"),
        nic("device_rx_frames"),
        nic("device_tx_frames"),
        nic("doorbells"),
        nic("rx_doorbells"),
        nic("doorbells_suppressed"),
        nic("device_rx_bad"),
        nic("device_tx_bad"),
        nic("device_tx_full"),
        nic("hw_rx_frames"),
        nic("hw_tx_frames"),
        nic("hw_rx_missed"),
        nic("hw_rx_no_buffer"),
        nic("hw_rx_crc_errors"),
        nic("dispatched"),
        nic("drained"),
        nic("conn_map"),
        st("udp_initial"),
        st("udp_subsequent"),
        st("udp_packets"),
        st("udp_bounded"),
        st("udp_rate_limited"),
        (0..board.cores())
            .map(|c| board.snapshot(c).stat("udp_ids_max"))
            .max()
            .unwrap_or(0),
        mem::late_allocs(),
        mem::late_live(),
        crate::tls::NO_MEMORY.load(core::sync::atomic::Ordering::Relaxed),
        stack
    );
    nics::print_bond(board);
    rest::print_sleeps(board);
}

/// The console's line when a drain is over, before the power-off.
pub fn drain_done(d: &bareweb_engine::server::drain::Drain) {
    let c = d.counts();
    kprintln!(
        "drain: done in {} ms: {} connections closed, {} reset at the timeout, {} refused after the grace; powering off (ACPI S5)",
        c.took_ms,
        c.closed,
        c.reset,
        c.refused
    );
}
