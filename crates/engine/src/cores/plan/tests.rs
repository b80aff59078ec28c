//! The plan: the mode chosen for every (cores, asked, queues) case, roles and per-core
//! configurations, the board, and a network-core wiring that carries a connection from
//! core 0 to an HTTP core's server and its answer back to the device.

use std::cell::Cell;
use std::rc::Rc;

use super::*;
use crate::fake::FakeQueues;
use crate::resource::Found;
use crate::server::NoLog;
use crate::tcp::port_table::Peer;
use crate::wire::{
    ethernet, ipv4, tcp as wtcp, EtherType, EthernetFrame, IpProtocol, Ipv4Address, Ipv4Packet,
    Ipv4Repr, TcpPacket,
};

const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
const CLIENT_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
const IP: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT_IP: Ipv4Address = Ipv4Address([10, 0, 0, 1]);

#[derive(Clone, Copy)]
struct Empty;

impl Lookup<'static> for Empty {
    fn lookup(&self, _: &[u8]) -> Found<'static> {
        Found::NotFound
    }
}

#[derive(Clone)]
struct TestClock(Rc<Cell<u64>>);

impl Clock for TestClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000
    }
}

fn plan(mode: Mode, cores: usize) -> Plan<Empty> {
    let mut cfg = Config::new(IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    Plan::new(mode, cores, Empty, cfg, MAC)
}

#[test]
fn the_mode_for_every_case() {
    use Asked::*;
    let nc = |bsp_http| Mode::NetCore { bsp_http };
    let cases = [
        // (cores, asked, bsp_http, queues) → (mode, why)
        (
            (1, None, false, 1),
            (Mode::Single, Why::OneCore { asked: None }),
        ),
        (
            (1, Some(NetCore), false, 1),
            (
                Mode::Single,
                Why::OneCore {
                    asked: Some(NetCore),
                },
            ),
        ),
        (
            (1, Some(NetCore), true, 1),
            (
                Mode::Single,
                Why::OneCore {
                    asked: Some(NetCore),
                },
            ),
        ),
        (
            (1, Some(PerQueue), false, 1),
            (
                Mode::Single,
                Why::OneCore {
                    asked: Some(PerQueue),
                },
            ),
        ),
        ((2, None, false, 2), (Mode::PerQueue, Why::QueuePerCore)),
        (
            (4, Some(PerQueue), false, 4),
            (Mode::PerQueue, Why::AskedFor),
        ),
        ((2, Some(NetCore), false, 1), (nc(false), Why::AskedFor)),
        ((3, Some(NetCore), true, 1), (nc(true), Why::AskedFor)),
        (
            (2, None, false, 1),
            (
                nc(false),
                Why::FewQueues {
                    asked_perqueue: false,
                    queues: 1,
                    cores: 2,
                },
            ),
        ),
        (
            (4, Some(PerQueue), false, 2),
            (
                nc(false),
                Why::FewQueues {
                    asked_perqueue: true,
                    queues: 2,
                    cores: 4,
                },
            ),
        ),
    ];
    for ((cores, asked, bsp, queues), (mode, why)) in cases {
        assert_eq!(
            decide(cores, asked, bsp, queues),
            Decision { mode, why },
            "{cores} cores, {asked:?}, bsp_http {bsp}, {queues} queues"
        );
    }
    assert_eq!(queues_wanted(1, None), 1);
    assert_eq!(queues_wanted(4, None), 4);
    assert_eq!(queues_wanted(4, Some(PerQueue)), 4);
    assert_eq!(queues_wanted(4, Some(NetCore)), 1);
}

#[test]
fn what_is_worth_saying_says_why() {
    let one = decide(1, Some(Asked::NetCore), false, 1);
    assert!(one.worth_saying());
    let s = one.why.to_string();
    assert!(
        s.contains("one core") && s.contains("network-core mode needs two"),
        "{s}"
    );
    assert!(!decide(1, None, false, 1).worth_saying());
    assert!(!decide(2, None, false, 2).worth_saying());
    assert!(!decide(2, Some(Asked::NetCore), false, 1).worth_saying());
    let few = decide(2, Some(Asked::PerQueue), false, 1);
    assert!(few.worth_saying());
    assert_eq!(
        few.why.to_string(),
        "per-queue mode asked for, but 1 queue pair(s) for 2 cores"
    );
}

#[test]
fn roles_and_each_cores_configuration() {
    let p = plan(Mode::NetCore { bsp_http: false }, 3);
    assert_eq!(p.roles(), [Role::Net, Role::Http, Role::Http]);
    assert_eq!(
        p.config(0).tcbs,
        1,
        "a network core serving no HTTP keeps one TCB"
    );
    assert_eq!(p.config(1).tcbs, 8);
    let p = plan(Mode::NetCore { bsp_http: true }, 2);
    assert_eq!(p.roles(), [Role::NetHttp, Role::Http]);
    assert_eq!(p.config(0).tcbs, 8);
    assert_eq!(plan(Mode::PerQueue, 2).roles(), [Role::Queue, Role::Queue]);
    assert_eq!(plan(Mode::Single, 1).roles(), [Role::Single]);
    let p = plan(Mode::PerQueue, 2).with_board(crate::cores::pages::PageSettings::default());
    let board = p.board.expect("a board");
    assert_eq!(board.cores(), 2);
    assert!(plan(Mode::Single, 1).board.is_none());
}

fn syn(port: u16) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: port,
        dst_port: 80,
        seq_number: 1000,
        ack_number: None,
        flags: wtcp::Flags {
            fin: false,
            syn: true,
            rst: false,
            psh: false,
            ack: false,
        },
        window_len: 65535,
        max_seg_size: Some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    };
    let l2l3 = ethernet::HEADER_LEN + ipv4::HEADER_LEN;
    let hl = repr.header_len();
    let mut buf = vec![0u8; l2l3 + hl];
    let mut eth = EthernetFrame::new_unchecked(&mut buf[..]);
    ethernet::Repr {
        src_addr: CLIENT_MAC,
        dst_addr: MAC,
        ethertype: EtherType::Ipv4,
    }
    .emit(&mut eth);
    Ipv4Repr {
        src_addr: CLIENT_IP,
        dst_addr: IP,
        next_header: IpProtocol::Tcp,
        payload_len: hl,
        hop_limit: 64,
    }
    .emit(&mut Ipv4Packet::new_unchecked(
        &mut eth.payload_mut()[..ipv4::HEADER_LEN],
    ));
    repr.emit_header(&mut buf[l2l3..]);
    TcpPacket::new_unchecked(&mut buf[l2l3..]).fill_checksum(CLIENT_IP, IP);
    buf
}

#[test]
fn the_network_core_wiring_carries_a_connection_there_and_back() {
    let p = plan(Mode::NetCore { bsp_http: false }, 3);
    let clock = TestClock(Rc::new(Cell::new(1_000_000)));
    let mut q = p.netcore(
        FakeQueues::default(),
        FakeQueues::default(),
        clock.clone(),
        &Doze::none(),
        |_| Doze::none(),
    );
    assert_eq!(q.http.len(), 2);
    let mut servers: Vec<_> = (0..3).map(|k| p.server(k)).collect();
    q.core0.inner_mut().0.inbox.extend([syn(1000), syn(1001)]);
    servers[0].poll(&mut q.core0, &clock, &mut NoLog);
    let peer = |port| Peer::v4(CLIENT_IP.0, port);
    assert_eq!(q.core0.map().core_of(peer(1000)), Some(1));
    assert_eq!(q.core0.map().core_of(peer(1001)), Some(2));
    for (k, nic) in q.http.iter_mut().enumerate() {
        servers[k + 1].poll(nic, &clock, &mut NoLog);
        assert_eq!(servers[k + 1].stats().tcp_accepted, 1);
        assert_eq!(servers[k + 1].stats().rx_frames, 1);
    }
    // Core 0's next flush drains both SYN-ACKs onto the device.
    servers[0].poll(&mut q.core0, &clock, &mut NoLog);
    let out = &q.core0.inner().1.outbox;
    assert_eq!(out.len(), 2, "two SYN-ACKs");
    for f in out {
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.syn() && tcp.ack());
    }
}

#[test]
#[should_panic(expected = "Plan::netcore in perqueue mode")]
fn netcore_wiring_outside_netcore_mode_is_a_bug() {
    let p = plan(Mode::PerQueue, 2);
    let clock = TestClock(Rc::new(Cell::new(0)));
    let _ = p.netcore(
        FakeQueues::default(),
        FakeQueues::default(),
        clock,
        &Doze::none(),
        |_| Doze::none(),
    );
}
