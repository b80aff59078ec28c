//! One path through the whole server with the PROXY protocol on: a client (10.0.0.1)
//! completes a handshake, then sends the input as its byte stream, cut into segments where
//! the input says; the server reads the header (or refuses it), answers what follows, and
//! times out. The first input byte chooses: bit 0 whether the client is a trusted balancer
//! (`proxy_protocol` 10.0.0.0/24) or not (then a header is forbidden), bits 1-7 the
//! segment size (1 to 128 bytes). Nothing may panic, and after 100 s of silence no TCB is
//! left.
#![no_main]

use bareweb_engine::fake::FakeNic;
use bareweb_engine::iface::egress::{write_l2l3, L2L3};
use bareweb_engine::nic::Clock;
use bareweb_engine::server::{Config, NoLog, ProxySources, Server};
use bareweb_engine::site::{build_from_files, Site};
use bareweb_engine::wire::{
    tcp as wtcp, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Address, Ipv4Packet, TcpPacket,
};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const SERVER: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
const SMAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
const CMAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);

struct FuzzClock(u64);

impl Clock for FuzzClock {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        1_700_000_000 + self.0 / 1_000_000_000
    }
}

fn site() -> Site<'static> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    let image = IMAGE.get_or_init(|| {
        build_from_files(&[("/index.html".into(), b"<h1>fuzz</h1>".to_vec(), 1_700_000_000)])
            .expect("fuzz site builds")
    });
    Site::load(image).expect("fuzz site loads")
}

/// A client segment: `ack` set, the SYN when `syn`.
fn segment(seq: u32, ack: Option<u32>, syn: bool, payload: &[u8]) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: 40000,
        dst_port: 80,
        seq_number: seq,
        ack_number: ack,
        flags: wtcp::Flags {
            fin: false,
            syn,
            rst: false,
            psh: !payload.is_empty(),
            ack: ack.is_some(),
        },
        window_len: 65535,
        max_seg_size: syn.then_some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    };
    let hl = repr.header_len();
    let mut f = vec![0u8; L2L3 + hl + payload.len()];
    write_l2l3(&mut f, CMAC, SMAC, CLIENT, SERVER, IpProtocol::Tcp, hl + payload.len());
    repr.emit_header(&mut f[L2L3..]);
    f[L2L3 + hl..].copy_from_slice(payload);
    TcpPacket::new_unchecked(&mut f[L2L3..]).fill_checksum(CLIENT, SERVER);
    f
}

/// The sequence number of the server's SYN-ACK among `frames`.
fn syn_ack(frames: &[Vec<u8>]) -> Option<u32> {
    frames.iter().find_map(|f| {
        let eth = EthernetFrame::new_checked(&f[..]).ok()?;
        let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
        let t = TcpPacket::new_checked(ip.payload()).ok()?;
        (t.syn() && t.ack()).then(|| t.seq_number())
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    let mut cfg = Config::new(SERVER, 24, [0x42; 16]);
    cfg.tcbs = 4;
    let mut sources = ProxySources::NONE;
    let net = if control & 1 == 1 { [10, 0, 0, 0] } else { [192, 0, 2, 0] };
    sources.add(Ipv4Address(net), 24);
    cfg.proxy_protocol = sources;
    let mut server = Server::new(cfg, site(), SMAC);
    let mut nic = FakeNic::new(SMAC);
    let mut clock = FuzzClock(1);
    nic.rx.inbox.push_back(segment(1000, None, true, &[]));
    server.poll(&mut nic, &clock, &mut NoLog);
    let iss = syn_ack(&nic.tx.outbox).expect("a SYN-ACK");
    nic.tx.outbox.clear();
    let ack = iss.wrapping_add(1);
    nic.rx.inbox.push_back(segment(1001, Some(ack), false, &[]));
    server.poll(&mut nic, &clock, &mut NoLog);
    let size = usize::from(control >> 1) + 1;
    let mut seq = 1001u32;
    for piece in stream.chunks(size) {
        nic.rx.inbox.push_back(segment(seq, Some(ack), false, piece));
        seq = seq.wrapping_add(piece.len() as u32);
        clock.0 += 1_000_000;
        server.poll(&mut nic, &clock, &mut NoLog);
        nic.tx.outbox.clear();
        assert!(server.active() <= 1);
    }
    let s = server.stats();
    let refused = s.proxy_missing + s.proxy_malformed + s.proxy_too_long + s.proxy_forbidden;
    assert!(s.proxy_headers + refused <= 1, "one header per connection: {s:?}");
    for _ in 0..100 {
        clock.0 += 1_000_000_000;
        server.poll(&mut nic, &clock, &mut NoLog);
        nic.tx.outbox.clear();
    }
    assert_eq!(server.active(), 0, "TCB leaked: {:?}", server.stats());
});
