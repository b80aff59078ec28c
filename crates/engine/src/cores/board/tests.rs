//! Board tests: publish/snapshot round trip, totals, JSON shape, the stats response, and
//! a writer thread racing a reader that must never see a torn row.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use super::*;
use crate::cores::{pages, DispatchCounters};
use crate::http::{parse, Parse};
use crate::resource::{Found, Lookup};

fn stats_with(requests: u64, rx: u64) -> Stats {
    Stats {
        http_requests: requests,
        rx_frames: rx,
        tcbs_max: requests,
        ..Stats::default()
    }
}

#[test]
fn snapshot_returns_what_was_published() {
    let b = Board::new("netcore", &[Role::Net, Role::Http]);
    let mut stay = Stay::default();
    stay.record(3_000);
    stay.parallel_max = 7;
    let times = CoreTimes {
        rcv_ns: 11,
        http_ns: 22,
        busy_polls: 3,
    };
    b.publish_server(1, &stats_with(5, 40), &times, &stay);
    b.publish_run(
        1,
        &NicCounters {
            rx_ring_high: 9,
            ..NicCounters::default()
        },
        &DispatchCounters::default(),
        1_000,
        4,
    );
    let s = b.snapshot(1);
    assert_eq!(s.stat("http_requests"), 5);
    assert_eq!(s.stat("rx_frames"), 40);
    assert_eq!(b.snapshot(0).stat("http_requests"), 0);
    assert_eq!(total_requests(&b), 5);
    // Out of range is ignored, never a panic.
    b.publish_server(9, &stats_with(1, 1), &times, &stay);
    assert_eq!(b.snapshot(9).stat("http_requests"), 0);
}

#[test]
fn json_has_every_core_and_totals() {
    let b = Board::new("perqueue", &[Role::Queue, Role::Queue]);
    let t = CoreTimes::default();
    b.publish_server(0, &stats_with(3, 10), &t, &Stay::default());
    b.publish_server(1, &stats_with(4, 20), &t, &Stay::default());
    b.publish_run(
        0,
        &NicCounters::default(),
        &DispatchCounters::default(),
        100,
        0,
    );
    let mut out = vec![0u8; JSON_MAX];
    let n = b.render_json(&mut out).unwrap();
    let j = std::str::from_utf8(&out[..n]).unwrap();
    assert!(j.starts_with("{\"mode\":\"perqueue\",\"cores\":[{\"core\":0,\"role\":\"queue\","));
    assert!(j.contains("\"core\":1,"));
    // Totals add requests and frames, and take the max of maxima.
    let total = &j[j.find("\"total\":").unwrap()..];
    assert!(total.contains("\"requests\":7,"), "{total}");
    assert!(total.contains("\"rx_frames\":30,"), "{total}");
    assert!(total.contains("\"tcbs_max\":4,"), "{total}");
    assert_eq!(j.matches('{').count(), j.matches('}').count());
    // A buffer too small fails cleanly.
    assert_eq!(b.render_json(&mut out[..50]), None);
}

#[test]
fn json_has_the_nic_set_when_there_is_one() {
    use crate::bond::{Bond, Mode, Policy};
    use crate::wire::EthernetAddress;
    let macs = [
        EthernetAddress([2, 0, 0, 0, 0, 1]),
        EthernetAddress([2, 0, 0, 0, 0, 2]),
    ];
    let bond = Bond::new(Mode::Split, Policy::Size, &macs, 100, 2)
        .unwrap()
        .leak();
    let b = Board::new("perqueue", &[Role::Queue, Role::Queue]).with_bond(Some(bond));
    let mut out = vec![0u8; JSON_MAX];
    let n = b.render_json(&mut out).unwrap();
    let j = std::str::from_utf8(&out[..n]).unwrap();
    let at = j
        .find(",\"bond\":{\"mode\":\"split\",\"policy\":\"size\"")
        .expect(j);
    assert!(
        j[at..].contains("\"role\":\"receive\"") && j.ends_with("}]}}"),
        "{j}"
    );
    assert_eq!(j.matches('{').count(), j.matches('}').count());
    // No set: no `bond` object.
    let plain = Board::new("single", &[Role::Single]);
    let n = plain.render_json(&mut out).unwrap();
    assert!(!std::str::from_utf8(&out[..n]).unwrap().contains("\"bond\""));
}

#[test]
fn stats_target_is_exact() {
    assert!(is_stats_target(b"/.well-known/bareweb/stats"));
    assert!(is_stats_target(b"/.well-known/bareweb/stats?t=1"));
    assert!(!is_stats_target(b"/.well-known/bareweb/statsx"));
    assert!(!is_stats_target(b"/.well-known/bareweb/"));
    assert!(!is_stats_target(b"/stats"));
}

#[test]
fn stats_response_head_and_body() {
    let b = Board::new("single", &[Role::Single]);
    b.publish_server(
        0,
        &stats_with(2, 2),
        &CoreTimes::default(),
        &Stay::default(),
    );
    let rx = b"GET /.well-known/bareweb/stats HTTP/1.1\r\nHost: x\r\n\r\n";
    let Parse::Complete { request, .. } = parse(rx) else {
        panic!()
    };
    let mut out = vec![0u8; JSON_MAX];
    let r = respond_stats(&b, &request, 1_700_000_000, "bareweb", &mut out);
    assert_eq!(r.status, 200);
    assert!(!r.close);
    let text = std::str::from_utf8(&out[..r.head_len]).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(head.contains("Content-Type: application/json"));
    assert!(head.contains(&format!("Content-Length: {}", body.len())));
    assert!(body.starts_with("{\"mode\":\"single\""));
    // HEAD: the same head, no body.
    let rx = b"HEAD /.well-known/bareweb/stats HTTP/1.0\r\n\r\n";
    let Parse::Complete { request, .. } = parse(rx) else {
        panic!()
    };
    let r = respond_stats(&b, &request, 1_700_000_000, "bareweb", &mut out);
    let text = std::str::from_utf8(&out[..r.head_len]).unwrap();
    assert!(text.ends_with("\r\n\r\n") && r.close);
}

#[test]
fn page_is_served_and_self_contained() {
    struct Nothing;
    impl Lookup<'static> for Nothing {
        fn lookup(&self, _: &[u8]) -> Found<'static> {
            Found::NotFound
        }
    }
    let site = WithStatsPage::new(Nothing);
    let Found::Resource(r) = site.lookup(PAGE_PATH) else {
        panic!("no page")
    };
    assert!(r.content_type.starts_with("text/html"));
    let html = std::str::from_utf8(r.identity.data).unwrap();
    assert!(html.contains("<svg") && html.contains("fetch(URL_STATS"));
    // No external assets: nothing is loaded from another origin.
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert_eq!(site.lookup(b"/.well-known/bareweb"), Found::AddSlash);
    assert_eq!(site.lookup(b"/other"), Found::NotFound);
}

#[test]
fn page_explains_its_figures_and_a_refusal() {
    let html = PAGE_HTML;
    // The split's words, and the table's less obvious rows, carry an explanation.
    for word in ["RCV", "HTTP", "SEND", "lock wait"] {
        assert!(html.contains(&format!("\">{word}</b>")), "{word}");
    }
    for row in [
        "\"dispatched\"",
        "\"drained\"",
        "\"conn map now / high\"",
        "\"doorbells (rx) / suppressed\"",
    ] {
        let at = html.find(row).unwrap_or_else(|| panic!("{row}"));
        let line = &html[at..html[at..].find(']').map_or(html.len(), |e| at + e)];
        assert!(
            line.matches('"').count() >= 4,
            "{row} has no explanation: {line}"
        );
    }
    // The stay-time figure says it counts connections, not requests.
    assert!(html.contains("\"connections timed \" + s.count"));
    assert!(!html.contains("\"requests \" + s.count"));
    // The split's figures end inside the picture (anchored at its right edge).
    assert!(html.contains("text(svg, W - 2, i * rowH + 15, label.join(\" / \"), \"end\")"));
    // A refusal's text is shown, not parsed as JSON.
    let ok = html.find("if (!r.ok)").unwrap();
    assert!(ok < html.find("await r.json()").unwrap());
}

/// A writer keeps publishing rows whose words all equal one counter; a reader on another
/// thread must never see a row mixing two publications.
#[test]
fn reader_never_sees_a_torn_row() {
    let b = Arc::new(Board::new("single", &[Role::Single]));
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(AtomicU64::new(0));
    let (bw, sw, pw) = (b.clone(), stop.clone(), published.clone());
    let writer = std::thread::spawn(move || {
        let mut i = 0u64;
        while !sw.load(Ordering::Relaxed) {
            i += 1;
            let s = stats_with(i, i);
            bw.publish_server(0, &s, &CoreTimes::default(), &Stay::default());
            pw.store(i, Ordering::Relaxed);
        }
        i
    });
    // Read at least 20,000 times and until the writer has published 1,000 rows (it may
    // start late on a busy machine), within 30 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (mut reads, mut consistent) = (0u64, 0u64);
    while (reads < 20_000 || published.load(Ordering::Relaxed) < 1_000)
        && std::time::Instant::now() < deadline
    {
        reads += 1;
        let mut words = [0u64; WORDS];
        if b.rows[0].read(&mut words) {
            assert_eq!(
                words[stat_index("http_requests").unwrap()],
                words[stat_index("rx_frames").unwrap()]
            );
            consistent += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(writer.join().unwrap() >= 1_000, "the writer hardly ran");
    assert!(
        consistent > 0,
        "the reader got no consistent snapshot at all"
    );
}

#[test]
fn lock_wait_is_its_own_part_of_the_split() {
    let b = Board::new("pool", &[Role::Net, Role::Worker, Role::Server]);
    let t = CoreTimes {
        rcv_ns: 100,
        http_ns: 200,
        busy_polls: 1,
    };
    b.publish_server(1, &Stats::default(), &t, &Stay::default());
    b.publish_run(
        1,
        &NicCounters::default(),
        &DispatchCounters::default(),
        1_000,
        0,
    );
    b.publish_lock_wait(1, 300);
    b.publish_server(
        2,
        &stats_with(9, 50),
        &CoreTimes::default(),
        &Stay::default(),
    );
    let mut out = vec![0u8; JSON_MAX];
    let n = b.render_json(&mut out).unwrap();
    let j = std::str::from_utf8(&out[..n]).unwrap();
    assert!(
        j.contains("\"core\":1,\"role\":\"worker\",\"requests\":0,\"elapsed_ns\":1000,\"rcv_ns\":100,\"http_ns\":200,\"send_ns\":0,\"lock_ns\":300,\"main_ns\":400,"),
        "{j}"
    );
    assert!(j.contains("\"core\":2,\"role\":\"server\",\"requests\":9,\"elapsed_ns\":0,"));
    // Rows that never wait report 0, so Main is as before for the other modes.
    assert!(j.contains("\"core\":0,\"role\":\"net\",\"requests\":0,\"elapsed_ns\":0,\"rcv_ns\":0,\"http_ns\":0,\"send_ns\":0,\"lock_ns\":0,\"main_ns\":0,"));
}

#[test]
fn sleep_is_its_own_part_of_the_split_with_its_wake_ups() {
    let b = Board::new("single", &[Role::Single]);
    b.publish_run(
        0,
        &NicCounters::default(),
        &DispatchCounters::default(),
        10_000,
        5,
    );
    b.publish_sleeps(
        0,
        &crate::cores::run::SleepCounters {
            sleeps: 4,
            slept_ns: 6_000,
            woken_by_device: 2,
            woken_by_timer: 1,
            woken_by_core: 1,
        },
    );
    let mut out = vec![0u8; JSON_MAX];
    let n = b.render_json(&mut out).unwrap();
    let j = std::str::from_utf8(&out[..n]).unwrap();
    assert!(
        j.contains("\"lock_ns\":0,\"main_ns\":4000,\"sleep_ns\":6000,\"busy_polls\":0,\"idle_polls\":5,\"sleeps\":4,\"wakes\":{\"device\":2,\"timer\":1,\"core\":1},"),
        "{j}"
    );
}

#[test]
fn the_time_split_reads_the_dispatch_and_drain_words() {
    assert_eq!(NIC_NAMES[NIC_DISPATCH_NS], "dispatch_ns");
    assert_eq!(NIC_NAMES[NIC_DRAIN_NS], "drain_ns");
    let d = DispatchCounters {
        dispatch_ns: 7,
        drain_ns: 11,
        conn_map_expired: 1000,
        ..DispatchCounters::default()
    };
    let w = nic_words(&NicCounters::default(), &d);
    assert_eq!((w[NIC_DISPATCH_NS], w[NIC_DRAIN_NS]), (7, 11));
}

use crate::stats::platform::PlatformCounters;

/// Two sockets' counters; the second cannot be read at the moment; a third has a name
/// that would break the JSON.
#[derive(Debug)]
struct Sockets;

impl PlatformCounters for Sockets {
    fn name(&self) -> &'static str {
        "xdp"
    }
    fn unit(&self) -> &'static str {
        "queue"
    }
    fn units(&self) -> usize {
        3
    }
    fn read(&self, i: usize, f: &mut dyn FnMut(&'static str, u64)) -> Option<u64> {
        match i {
            0 => {
                f("rx_dropped", 4);
                f("bad\"name", 1);
                f("tx_ring_empty_descs", 9);
                Some(0)
            }
            1 => None,
            _ => {
                f("rx_dropped", 5);
                Some(7)
            }
        }
    }
}

#[test]
fn platform_counters_in_json_and_metrics() {
    static S: Sockets = Sockets;
    let b = Board::new("single", &[Role::Single]).with_platform(Some(&S));
    let mut out = [0u8; 65536];
    let n = b.render_json(&mut out).unwrap();
    let j = std::str::from_utf8(&out[..n]).unwrap();
    assert!(
        j.ends_with(
            ",\"xdp\":[{\"queue\":0,\"rx_dropped\":4,\"tx_ring_empty_descs\":9},{\"queue\":7,\"rx_dropped\":5}]}"
        ),
        "{j}"
    );
    let n = pages::render_metrics(&b, &mut out).unwrap();
    let m = std::str::from_utf8(&out[..n]).unwrap();
    let tail = m
        .split_once("# TYPE bareweb_xdp_rx_dropped_total")
        .unwrap()
        .1;
    assert_eq!(
        tail,
        " counter\nbareweb_xdp_rx_dropped_total{queue=\"0\"} 4\nbareweb_xdp_rx_dropped_total{queue=\"7\"} 5\n\
         # HELP bareweb_xdp_tx_ring_empty_descs_total The platform's xdp counter \
         tx_ring_empty_descs, per queue (AF_XDP: the kernel's XDP_STATISTICS of each socket).\n\
         # TYPE bareweb_xdp_tx_ring_empty_descs_total counter\n\
         bareweb_xdp_tx_ring_empty_descs_total{queue=\"0\"} 9\n"
    );
    pages::tests::check_exposition(m).unwrap();
    assert!(!m.contains("xdp_bad"));
    // Without: no `xdp` object.
    let plain = Board::new("single", &[Role::Single]);
    let n = plain.render_json(&mut out).unwrap();
    assert!(!std::str::from_utf8(&out[..n]).unwrap().contains("xdp"));
}

/// 40 queues, two counters each, reads counted.
#[derive(Debug)]
struct ManyQueues(std::sync::atomic::AtomicUsize);

impl PlatformCounters for ManyQueues {
    fn name(&self) -> &'static str {
        "xdp"
    }
    fn unit(&self) -> &'static str {
        "queue"
    }
    fn units(&self) -> usize {
        40
    }
    fn read(&self, i: usize, f: &mut dyn FnMut(&'static str, u64)) -> Option<u64> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if i == 5 || i == 35 {
            return None; // unreadable now: left out, cached or not
        }
        f("rx_dropped", i as u64 * 10);
        f("tx_invalid", i as u64 * 10 + 1);
        f("rx_dropped", 999_999); // said twice: the first value stands
        Some(i as u64)
    }
}

#[test]
fn metrics_read_each_platform_unit_once_and_group_each_family() {
    use crate::stats::platform::UNITS_CACHED;
    use std::sync::atomic::Ordering;
    static M: ManyQueues = ManyQueues(std::sync::atomic::AtomicUsize::new(0));
    let b = Board::new("single", &[Role::Single]).with_platform(Some(&M));
    let mut out = [0u8; 65536];
    let n = pages::render_metrics(&b, &mut out).unwrap();
    let m = std::str::from_utf8(&out[..n]).unwrap();
    // The cached units once each; the ones past the cache once for their names and once
    // per counter.
    let extra = 40 - UNITS_CACHED;
    assert_eq!(M.0.load(Ordering::Relaxed), UNITS_CACHED + 3 * extra);
    assert!(!m.contains("999999") && !m.contains("queue=\"5\"") && !m.contains("queue=\"35\""));
    for (k, name) in ["rx_dropped", "tx_invalid"].iter().enumerate() {
        let family = m
            .split_once(&format!("# TYPE bareweb_xdp_{name}_total counter\n"))
            .unwrap()
            .1;
        for i in (0..40u64).filter(|i| *i != 5 && *i != 35) {
            let line = format!(
                "bareweb_xdp_{name}_total{{queue=\"{i}\"}} {}\n",
                i * 10 + k as u64
            );
            let at = family
                .find(&line)
                .unwrap_or_else(|| panic!("{line} in {m}"));
            // Together: no other family's header before this sample.
            assert!(!family[..at].contains("# TYPE"), "{name} {i}");
        }
    }
}

/// The stats JSON and the metrics of a board fit the buffer it asks its servers for
/// ([`Board::buffer_len`]), from one core to the bare machine's most (32), in the mode
/// with the most rows, with DHCP's and a drain's families too.
#[test]
fn the_pages_fit_their_buffer_on_every_core_count() {
    static DHCP: std::sync::OnceLock<crate::dhcp::shared::Shared> = std::sync::OnceLock::new();
    let dhcp = DHCP.get_or_init(crate::dhcp::shared::Shared::new);
    let drain: &'static crate::server::drain::Drain =
        Box::leak(Box::new(crate::server::drain::Drain::new(5_000, 30_000)));
    for n in [1usize, 2, 9, 10, 16, 32] {
        let roles: Vec<Role> = (0..n)
            .map(|i| if i == 0 { Role::Net } else { Role::Http })
            .collect();
        let board = Board::new("netcore", &roles)
            .with_dhcp(Some(dhcp))
            .with_drain(Some(drain));
        // Every word at its widest.
        for core in 0..n {
            let stats = crate::stats::Stats::filled(u64::MAX);
            board.publish_server(core, &stats, &Default::default(), &Default::default());
        }
        let len = board.buffer_len();
        let mut out = vec![0u8; len];
        let m = crate::cores::pages::render_metrics(&board, &mut out);
        assert!(m.is_some(), "{n} cores: the metrics overflow {len} bytes");
        assert!(
            board.render_json(&mut out).is_some(),
            "{n} cores: the JSON overflows {len}"
        );
    }
}
