//! The whole server with HTTPS on (`Config::tls`, the engine's TLS connection kind over
//! bareweb-tls): a client (10.0.0.1) opens TCP to port 443 and sends the input as its byte
//! stream, cut into segments where the input says. The first input byte chooses: bit 0
//! whether a real rustls client first completes a handshake (TLS 1.3 or 1.2 by bit 1) and
//! the input follows as raw bytes after it (hostile records on an established
//! connection), else the input is the connection's first bytes (ClientHellos of every
//! shape; seeds are captured `openssl s_client` hellos); bits 2-6 the segment size (1 to
//! 32 bytes), bit 7 sixteen times that. Nothing may panic, what the server sends is TLS
//! records only, and after 100 s of silence no TCB is left.
#![no_main]

use std::sync::{Arc, OnceLock};

use bareweb_engine::fake::FakeNic;
use bareweb_engine::iface::egress::{write_l2l3, L2L3};
use bareweb_engine::nic::Clock;
use bareweb_engine::server::tls::rustls_session::Acceptor;
use bareweb_engine::server::tls::TlsListen;
use bareweb_engine::server::{Config, NoLog, Server};
use bareweb_engine::site::{build_from_files, Site};
use bareweb_engine::wire::{
    tcp as wtcp, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Address, Ipv4Packet, TcpPacket,
};
use bareweb_tls::testing::{FixedTime, TestRandom};
use bareweb_tls::{Options, Platform, TlsServer};
use libfuzzer_sys::fuzz_target;
use rustls::client::ClientConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

const SERVER: Ipv4Address = Ipv4Address([10, 0, 0, 2]);
const CLIENT: Ipv4Address = Ipv4Address([10, 0, 0, 1]);
const SMAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
const CMAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
const NOW: u64 = 1_800_000_000;

static SERVER_RNG: TestRandom = TestRandom::new(5);
static CLIENT_RNG: TestRandom = TestRandom::new(6);

struct FuzzClock(u64);

impl Clock for FuzzClock {
    fn now_ns(&self) -> u64 {
        self.0
    }
    fn unix_secs(&self) -> u64 {
        NOW + self.0 / 1_000_000_000
    }
}

fn site() -> Site<'static> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    let image = IMAGE.get_or_init(|| {
        build_from_files(&[
            ("/index.html".into(), b"<h1>fuzz</h1>".to_vec(), 1_700_000_000),
            ("/big.bin".into(), vec![7u8; 100_000], 1_700_000_000),
        ])
        .expect("fuzz site builds")
    });
    Site::load(image).expect("fuzz site loads")
}

fn acceptor() -> &'static Acceptor {
    static A: OnceLock<Acceptor> = OnceLock::new();
    A.get_or_init(|| {
        let platform = Platform {
            random: &SERVER_RNG,
            time: Arc::new(FixedTime::new(NOW)),
        };
        Acceptor(
            TlsServer::new(
                include_bytes!("../../crates/tls/testdata/cert.pem"),
                include_bytes!("../../crates/tls/testdata/key.pem"),
                &Options::default(),
                &platform,
            )
            .unwrap(),
        )
    })
}

/// A client of TLS 1.3 or 1.2; the configurations are made once (the provider's groups
/// live for the program, by design).
fn client(tls13: bool) -> ClientConnection {
    static CONFIGS: OnceLock<[Arc<ClientConfig>; 2]> = OnceLock::new();
    let [v13, v12] = CONFIGS.get_or_init(|| [config(true), config(false)]);
    let cfg = if tls13 { v13 } else { v12 };
    ClientConnection::new(cfg.clone(), "localhost".try_into().unwrap()).unwrap()
}

fn config(tls13: bool) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(include_bytes!("../../crates/tls/testdata/ca.pem")).unwrap())
        .unwrap();
    let version = if tls13 {
        &rustls::version::TLS13
    } else {
        &rustls::version::TLS12
    };
    let cfg = ClientConfig::builder_with_provider(Arc::new(bareweb_tls::provider::provider(
        &CLIENT_RNG,
    )))
    .with_protocol_versions(&[version])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    Arc::new(cfg)
}

/// A client segment to port 443: `ack` set, the SYN when `syn`.
fn segment(seq: u32, ack: Option<u32>, syn: bool, payload: &[u8]) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: 40000,
        dst_port: 443,
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

/// The server's segments among `frames`: (seq, payload, syn).
fn segments(frames: &[Vec<u8>]) -> Vec<(u32, Vec<u8>, bool)> {
    frames
        .iter()
        .filter_map(|f| {
            let eth = EthernetFrame::new_checked(&f[..]).ok()?;
            let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
            let t = TcpPacket::new_checked(ip.payload()).ok()?;
            Some((t.seq_number(), t.payload().to_vec(), t.syn()))
        })
        .collect()
}

/// The client's view of the connection: the server's in-order bytes.
struct Peer {
    seq: u32,
    rcv_nxt: u32,
    got: Vec<u8>,
}

impl Peer {
    fn take(&mut self, nic: &mut FakeNic) {
        for (seq, payload, _) in segments(&nic.tx.outbox) {
            if seq == self.rcv_nxt && !payload.is_empty() {
                self.rcv_nxt = self.rcv_nxt.wrapping_add(payload.len() as u32);
                self.got.extend_from_slice(&payload);
            }
        }
        nic.tx.outbox.clear();
    }

    fn send(&mut self, nic: &mut FakeNic, piece: &[u8]) {
        nic.rx.inbox.push_back(segment(self.seq, Some(self.rcv_nxt), false, piece));
        self.seq = self.seq.wrapping_add(piece.len() as u32);
    }
}

/// Whether `b` is a sequence of whole TLS records and a prefix of one (5-byte headers of
/// a known type and version, lengths within 2^14 + 256).
fn records(mut b: &[u8]) -> bool {
    while b.len() >= 5 {
        let ok_type = matches!(b[0], 20..=23);
        let len = usize::from(u16::from_be_bytes([b[3], b[4]]));
        if !ok_type || b[1] != 3 || len > 16384 + 256 {
            return false;
        }
        b = &b[(5 + len).min(b.len())..];
    }
    true
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    let mut cfg = Config::new(SERVER, 24, [0x42; 16]);
    cfg.tcbs = 4;
    cfg.tls = Some(TlsListen {
        port: 443,
        acceptor: acceptor(),
    });
    let mut server = Server::new(cfg, site(), SMAC);
    let mut nic = FakeNic::new(SMAC);
    let mut clock = FuzzClock(1);
    nic.rx.inbox.push_back(segment(1000, None, true, &[]));
    server.poll(&mut nic, &clock, &mut NoLog);
    let iss = segments(&nic.tx.outbox)
        .iter()
        .find(|s| s.2)
        .map(|s| s.0)
        .expect("a SYN-ACK");
    nic.tx.outbox.clear();
    let mut peer = Peer {
        seq: 1001,
        rcv_nxt: iss.wrapping_add(1),
        got: Vec::new(),
    };
    peer.send(&mut nic, &[]);
    server.poll(&mut nic, &clock, &mut NoLog);
    if control & 1 == 1 {
        // A real handshake first; the input follows it.
        let mut c = client(control & 2 == 0);
        let mut fed = 0;
        for _ in 0..20 {
            let mut out = Vec::new();
            while c.wants_write() {
                c.write_tls(&mut out).unwrap();
            }
            for piece in out.chunks(1000) {
                peer.send(&mut nic, piece);
            }
            clock.0 += 1_000_000;
            server.poll(&mut nic, &clock, &mut NoLog);
            peer.take(&mut nic);
            let mut rd = &peer.got[fed..];
            while !rd.is_empty() && c.read_tls(&mut rd).unwrap_or(0) > 0 {
                if c.process_new_packets().is_err() {
                    break;
                }
            }
            fed = peer.got.len();
            if !c.is_handshaking() && !c.wants_write() {
                break;
            }
        }
        assert!(!c.is_handshaking(), "the real client's handshake completes");
        assert_eq!(server.stats().tls_established, 1);
    }
    let size = usize::from((control >> 2) & 0x1f) + 1;
    let size = if control & 0x80 != 0 { size * 16 } else { size };
    for piece in stream.chunks(size) {
        peer.send(&mut nic, piece);
        clock.0 += 1_000_000;
        server.poll(&mut nic, &clock, &mut NoLog);
        peer.take(&mut nic);
        assert!(server.active() <= 1);
    }
    assert!(records(&peer.got), "the server sent bytes that are no TLS records");
    for _ in 0..100 {
        clock.0 += 1_000_000_000;
        server.poll(&mut nic, &clock, &mut NoLog);
        peer.take(&mut nic);
    }
    assert_eq!(server.active(), 0, "TCB leaked: {:?}", server.stats());
});
