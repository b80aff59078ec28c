//! The bare UDP fetcher (the UDP paper's "bare PC" client): booted with `client=udp`, the
//! kernel runs the engine's load generator (`udp::bare::BareFetcher`) on core 0 over the
//! NIC, polling without sleeping as the paper's client did, prints its report on the
//! console (`client: report k=v …`, read by `bareweb load --udp --kernel`) and stops QEMU
//! (exit status 33). The other cores stay parked.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use bareweb_engine::iface::{FetchLink, FetchV6};
use bareweb_engine::nic::Clock;
use bareweb_engine::udp::bare::{BareConfig, BareFetcher};
use bareweb_engine::udp::fetch::Timing;
use bareweb_engine::udp::load::{Config, Counters, Schedule};
use bareweb_engine::wire::{Ipv4Address, Ipv6Address};

use crate::arch::clock::TscClock;
use crate::arch::exit;
use crate::cmdline::Settings;
use crate::drivers::Driver;
use crate::{fatal, kprintln, mem};

/// Runs the fetcher over the first queue pair of `nics`; never returns.
pub fn run<D: Driver>(s: &Settings, clock: TscClock, mut nics: Vec<D>) -> ! {
    let c = &s.client;
    if let Some(p) = c.problem() {
        fatal!("client: {p}");
    }
    // An IPv4 server, or an IPv6 one (`server=[ADDR]:PORT`, the client at `ip6=`).
    let (server, port, v6) = match (c.server, c.server6) {
        (Some((server, port)), _) => (server, port, None),
        (None, Some((server6, port))) => {
            let Some(me) = s.ip6_static else {
                fatal!("client: an IPv6 server needs ip6=ADDR/PREFIX (the client's address)")
            };
            let v6 = FetchV6 {
                ip: Ipv6Address(me.addr),
                prefix_len: me.prefix,
                gateway: s.gateway6.map(Ipv6Address),
                server: Ipv6Address(server6),
            };
            (Ipv4Address([0; 4]), port, Some(v6))
        }
        (None, None) => fatal!("client: no server"),
    };
    let host = match v6 {
        Some(v) => format!("[{}]:{port}", v.server),
        None => format!("{server}:{port}"),
    };
    if nics.is_empty() {
        fatal!("client: no queue pair");
    }
    let mut nic = nics.swap_remove(0);
    let schedule = match (c.frequency, c.maxreq, c.rate, c.parallel) {
        (Some(frequency), Some(maxreq), _, _) => Schedule::Paper { frequency, maxreq },
        (_, _, Some(r), _) => Schedule::Interval {
            interval_ns: 1_000_000_000 / u64::from(r),
        },
        _ => Schedule::Closed,
    };
    let slots = match schedule {
        Schedule::Closed => c.parallel.unwrap_or(1),
        _ => c.slots,
    } as usize;
    let rto = u64::from(c.rto_ms) * 1_000_000;
    let load = Config {
        schedule,
        slots,
        requests: c.requests,
        timing: Timing {
            rto_ns: rto,
            rto_max_ns: rto.max(1_000_000_000),
            tries: c.tries,
        },
    };
    let paths: Vec<String> = c.paths().map(String::from).collect();
    let mut client = BareFetcher::new(BareConfig {
        link: FetchLink {
            mac: nic.mac(),
            ip: s.ip,
            prefix_len: s.prefix,
            gateway: s.gateway,
            server,
            port,
            v6,
        },
        host: host.clone(),
        paths,
        load,
        pad: c.pad,
    });
    let me = match v6 {
        Some(v) => format!("{}/{}", v.ip, v.prefix_len),
        None => format!("{}/{}", s.ip, s.prefix),
    };
    // Over IPv6 the NIC's multicast filter takes the client's groups (its addresses'
    // solicited-node groups, all-nodes for routers' advertisements), kept in step below.
    let mut filter = v6.map(|_| nic.multicast());
    let mut groups = None;
    let mut next_groups = 0u64;
    mem::seal();
    kprintln!(
        "bareweb: client: {} paths from {host} as {me} (MAC {}), {:?}, {} slots, {} requests in {} s",
        c.paths().count(),
        nic.mac(),
        schedule,
        slots,
        c.requests,
        c.seconds
    );
    let run_ns = u64::from(c.seconds) * 1_000_000_000;
    let t0 = clock.now_ns();
    // Over IPv6 both addresses pass DAD before the next hop is asked: more time.
    let wait_ns = if v6.is_some() { 10 } else { 5 } * 1_000_000_000;
    loop {
        let now = clock.now_ns();
        // The groups change only as the link runs: looked at every 100 ms, not every poll.
        if let (Some(f), Some(link), true) = (filter.as_mut(), client.link6(), now >= next_groups) {
            next_groups = now + 100_000_000;
            let want = link.multicast_macs();
            if groups != Some(want) {
                f.set(&want);
                groups = Some(want);
            }
        }
        client.poll(&mut nic, now);
        if client.load().is_none() && now - t0 > wait_ns {
            match v6 {
                Some(_) => fatal!(
                    "client: no neighbour advertisement from the server (or its router) in 10 s, or ip6='s address held by another node"
                ),
                None => fatal!("client: no ARP answer from the server (or its router) in 5 s"),
            }
        }
        if client.started_ns() > 0 && now >= client.started_ns() + run_ns {
            client.stop_starting();
        }
        if client.finished() {
            break;
        }
        crate::arch::cpu::relax();
    }
    let elapsed = clock.now_ns() - client.started_ns();
    let Some(l) = client.load() else {
        fatal!("client: finished without a load")
    };
    report(&l.counters, elapsed, &client);
    kprintln!("bareweb: client: done");
    exit::finish()
}

/// The counters as one console line of `key=value` words.
fn report(k: &Counters, elapsed_ns: u64, c: &BareFetcher) {
    kprintln!(
        "client: report elapsed_ns={elapsed_ns} started={} completed={} failed_status={} failed_timeout={} failed_refused={} failed_other={} skipped={} bytes={} packets={} duplicates={} rerequested={} gets={} timeouts={} bounded={} bad={} max_parallel={} time_sum_ns={} time_max_ns={} time_p50_ns={} time_p99_ns={} frames_rx={} frames_tx={} tx_full={}",
        k.started,
        k.completed,
        k.failed_status,
        k.failed_timeout,
        k.failed_refused,
        k.failed_other,
        k.skipped,
        k.bytes,
        k.packets,
        k.duplicates,
        k.rerequested,
        k.gets,
        k.timeouts,
        k.bounded,
        k.bad,
        k.max_parallel,
        k.time_sum_ns,
        k.time_max_ns,
        k.time_quantile_ns(500),
        k.time_quantile_ns(990),
        c.frames.rx,
        c.frames.tx,
        c.frames.tx_full,
    );
}
