//! The TLS connection kind (`server::tls`), state-level: a real rustls client (with
//! bareweb-tls's provider) behind a small TCP client made of frames, against the server
//! over a `FakeNic`. Handshake bytes in → records out on both versions; keep-alive,
//! pipelining and a 1 MiB file byte-exact; close_notify both ways and `Connection:
//! close`; dynamic record sizes; the 408 of a silent client; hostile bytes ending in an
//! alert and a FIN; the handshake bound per round; and `--http-redirect` on the plain port.

use std::io::{Read, Write};
use std::sync::Arc;
use std::vec::Vec;

use rustls::client::ClientConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, ProtocolVersion, RootCertStore, SupportedProtocolVersion};

use super::*;
use crate::server::tls::rustls_session::Acceptor;
use crate::server::tls::TlsListen;
use bareweb_tls::testing::TestRandom;
use bareweb_tls::{Options, Platform, TlsServer};

static SERVER_RNG: TestRandom = TestRandom::new(7);
static CLIENT_RNG: TestRandom = TestRandom::new(8);
const CERT: &[u8] = include_bytes!("../../../../tls/testdata/cert.pem");
const KEY: &[u8] = include_bytes!("../../../../tls/testdata/key.pem");
const CA: &[u8] = include_bytes!("../../../../tls/testdata/ca.pem");
const HTTPS: u16 = 443;

fn acceptor() -> &'static Acceptor {
    let platform = Platform {
        random: &SERVER_RNG,
        time: Arc::new(rustls::time_provider::DefaultTimeProvider),
    };
    let server = TlsServer::new(CERT, KEY, &Options::default(), &platform).unwrap();
    Box::leak(Box::new(Acceptor(server)))
}

fn tls_server(tcbs: usize) -> Server<TestSite> {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = tcbs;
    cfg.max_per_ip = Some(tcbs);
    cfg.syn_backlog = Some(tcbs);
    cfg.tls = Some(TlsListen {
        port: HTTPS,
        acceptor: acceptor(),
    });
    Server::new(cfg, TestSite::new(), SERVER_MAC)
}

fn client_config(version: &'static SupportedProtocolVersion) -> Arc<ClientConfig> {
    client_config_chacha(version, false)
}

/// As [`client_config`]; with `chacha`, offering ChaCha20-Poly1305 alone.
fn client_config_chacha(
    version: &'static SupportedProtocolVersion,
    chacha: bool,
) -> Arc<ClientConfig> {
    let mut provider = bareweb_tls::provider::provider(&CLIENT_RNG);
    if chacha {
        provider.cipher_suites.retain(|s| {
            matches!(
                s.suite(),
                rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
                    | rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
            )
        });
    }
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA).unwrap())
        .unwrap();
    let mut cfg = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}

/// A client → server TCP frame to port `dport`.
fn frame_to(
    dport: u16,
    sport: u16,
    seq: u32,
    ack: Option<u32>,
    f: wtcp::Flags,
    payload: &[u8],
) -> Vec<u8> {
    let repr = wtcp::Repr {
        src_port: sport,
        dst_port: dport,
        seq_number: seq,
        ack_number: ack,
        flags: f,
        window_len: 65535,
        max_seg_size: f.syn.then_some(1460),
        window_scale: None,
        sack_permitted: false,
        timestamps: None,
    };
    let hl = repr.header_len();
    let mut fr = vec![0u8; L2L3 + hl + payload.len()];
    write_l2l3(
        &mut fr,
        CLIENT_MAC,
        SERVER_MAC,
        CLIENT_IP,
        SERVER_IP,
        IpProtocol::Tcp,
        hl + payload.len(),
    );
    repr.emit_header(&mut fr[L2L3..]);
    fr[L2L3 + hl..].copy_from_slice(payload);
    TcpPacket::new_unchecked(&mut fr[L2L3..]).fill_checksum(CLIENT_IP, SERVER_IP);
    fr
}

/// One TCP connection of the test client to `dport`, in order, ACKing every round.
struct Tcp {
    dport: u16,
    sport: u16,
    snd_nxt: u32,
    rcv_nxt: u32,
    /// Stream bytes received in order.
    got: Vec<u8>,
    fin: bool,
    rst: bool,
    /// Drops data segments as the network would, and checks each retransmission.
    loss: Option<Loss>,
}

/// Segment loss: every `every`-th data segment is dropped, `left` more times; every byte
/// the server sends is noted at its stream offset, and a byte sent again must be the same.
struct Loss {
    every: usize,
    left: usize,
    n: usize,
    base: u32,
    stream: Vec<Option<u8>>,
    resent: usize,
}

impl Tcp {
    fn open(
        s: &mut Server<TestSite>,
        nic: &mut FakeNic,
        clock: &ManualClock,
        dport: u16,
        sport: u16,
    ) -> Tcp {
        nic.rx.inbox.push_back(frame_to(
            dport,
            sport,
            1000,
            None,
            flags(true, false, false, false),
            &[],
        ));
        let out = run(s, nic, clock);
        assert!(
            out.len() == 1 && out[0].syn && out[0].ack == 1001,
            "{out:?}"
        );
        let srv = out[0].seq.wrapping_add(1);
        nic.rx.inbox.push_back(frame_to(
            dport,
            sport,
            1001,
            Some(srv),
            flags(false, true, false, false),
            &[],
        ));
        assert!(run(s, nic, clock).is_empty());
        Tcp {
            dport,
            sport,
            snd_nxt: 1001,
            rcv_nxt: srv,
            got: Vec::new(),
            fin: false,
            rst: false,
            loss: None,
        }
    }

    /// Queues `data` as segments of up to 1000 bytes.
    fn send(&mut self, nic: &mut FakeNic, data: &[u8]) {
        for piece in data.chunks(1000) {
            nic.rx.inbox.push_back(frame_to(
                self.dport,
                self.sport,
                self.snd_nxt,
                Some(self.rcv_nxt),
                flags(false, true, false, false),
                piece,
            ));
            self.snd_nxt = self.snd_nxt.wrapping_add(piece.len() as u32);
        }
    }

    fn send_fin(&mut self, nic: &mut FakeNic) {
        nic.rx.inbox.push_back(frame_to(
            self.dport,
            self.sport,
            self.snd_nxt,
            Some(self.rcv_nxt),
            flags(false, true, true, false),
            &[],
        ));
        self.snd_nxt = self.snd_nxt.wrapping_add(1);
    }

    /// Takes the server's segments of this round: in-order bytes kept, then one ACK.
    fn take(&mut self, out: &[Out], nic: &mut FakeNic) -> usize {
        let before = self.got.len();
        let mut advanced = false;
        for o in out {
            self.rst |= o.rst;
            if let Some(l) = self.loss.as_mut() {
                if !o.payload.is_empty() {
                    let at = o.seq.wrapping_sub(l.base) as usize;
                    if l.stream.len() < at + o.payload.len() {
                        l.stream.resize(at + o.payload.len(), None);
                    }
                    let mut again = false;
                    for (i, &b) in o.payload.iter().enumerate() {
                        match l.stream[at + i] {
                            Some(was) => {
                                assert_eq!(was, b, "byte {} sent again differs", at + i);
                                again = true;
                            }
                            None => l.stream[at + i] = Some(b),
                        }
                    }
                    l.resent += usize::from(again);
                    l.n += 1;
                    if l.left > 0 && l.n % l.every == 0 {
                        l.left -= 1;
                        continue;
                    }
                }
            }
            if o.seq != self.rcv_nxt && !o.payload.is_empty() && self.loss.is_some() {
                // Out of order after a loss: a duplicate ACK, as a receiver sends.
                nic.rx.inbox.push_back(frame_to(
                    self.dport,
                    self.sport,
                    self.snd_nxt,
                    Some(self.rcv_nxt),
                    flags(false, true, false, false),
                    &[],
                ));
                continue;
            }
            if o.seq == self.rcv_nxt && !o.payload.is_empty() {
                self.got.extend_from_slice(&o.payload);
                self.rcv_nxt = self.rcv_nxt.wrapping_add(o.payload.len() as u32);
                advanced = true;
            }
            if o.fin && o.seq.wrapping_add(o.payload.len() as u32) == self.rcv_nxt {
                self.rcv_nxt = self.rcv_nxt.wrapping_add(1);
                self.fin = true;
                advanced = true;
            }
        }
        if advanced {
            nic.rx.inbox.push_back(frame_to(
                self.dport,
                self.sport,
                self.snd_nxt,
                Some(self.rcv_nxt),
                flags(false, true, false, false),
                &[],
            ));
        }
        self.got.len() - before
    }
}

/// A TLS client on a [`Tcp`] connection.
struct TlsClient {
    tcp: Tcp,
    tls: ClientConnection,
    /// Decrypted response bytes.
    plain: Vec<u8>,
    /// TLS bytes received and given to the client so far.
    fed: usize,
    closed_by_peer: bool,
}

impl TlsClient {
    fn connect(
        s: &mut Server<TestSite>,
        nic: &mut FakeNic,
        clock: &mut ManualClock,
        version: &'static SupportedProtocolVersion,
        sport: u16,
    ) -> TlsClient {
        Self::connect_with(s, nic, clock, client_config(version), sport)
    }

    /// As [`TlsClient::connect`], with the client configured by `cfg`.
    fn connect_with(
        s: &mut Server<TestSite>,
        nic: &mut FakeNic,
        clock: &mut ManualClock,
        cfg: Arc<ClientConfig>,
        sport: u16,
    ) -> TlsClient {
        let tcp = Tcp::open(s, nic, clock, HTTPS, sport);
        let tls = ClientConnection::new(cfg, "localhost".try_into().unwrap()).unwrap();
        let mut c = TlsClient {
            tcp,
            tls,
            plain: Vec::new(),
            fed: 0,
            closed_by_peer: false,
        };
        c.pump(s, nic, clock, 50);
        assert!(!c.tls.is_handshaking(), "handshake did not complete");
        c
    }

    /// Rounds of: client's TLS out, server poll, server's bytes into the client, until
    /// quiet.
    fn pump(
        &mut self,
        s: &mut Server<TestSite>,
        nic: &mut FakeNic,
        clock: &mut ManualClock,
        rounds: usize,
    ) {
        let mut quiet = 0;
        for _ in 0..rounds {
            let mut c2s = Vec::new();
            while self.tls.wants_write() {
                self.tls.write_tls(&mut c2s).unwrap();
            }
            self.tcp.send(nic, &c2s);
            clock.0 += 100_000;
            let out = run(s, nic, clock);
            let n = self.tcp.take(&out, nic);
            if self.fed < self.tcp.got.len() {
                let mut rd = &self.tcp.got[self.fed..];
                let mut buf = vec![0u8; 65536];
                while !rd.is_empty() {
                    let k = self.tls.read_tls(&mut rd).unwrap();
                    if k == 0 {
                        break;
                    }
                    self.tls.process_new_packets().expect("client: TLS error");
                    loop {
                        match self.tls.reader().read(&mut buf) {
                            Ok(0) => {
                                self.closed_by_peer = true;
                                break;
                            }
                            Ok(k) => self.plain.extend_from_slice(&buf[..k]),
                            Err(_) => break,
                        }
                    }
                }
                self.fed = self.tcp.got.len();
            }
            if n == 0 && c2s.is_empty() && out.is_empty() {
                quiet += 1;
                if quiet > 2 {
                    break;
                }
            } else {
                quiet = 0;
            }
        }
    }

    fn write(&mut self, data: &[u8]) {
        self.tls.writer().write_all(data).unwrap();
    }
}

/// The responses in `plain`: (status line, body) each, by Content-Length.
fn responses(mut plain: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    while let Some(end) = plain.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = std::str::from_utf8(&plain[..end]).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |n| n.parse().unwrap());
        let body_end = (end + 4 + len).min(plain.len());
        let status = head.lines().next().unwrap().to_string();
        v.push((status, plain[end + 4..body_end].to_vec()));
        plain = &plain[body_end..];
    }
    v
}

fn nic_and_clock() -> (FakeNic, ManualClock) {
    (FakeNic::new(SERVER_MAC), ManualClock(1_000_000))
}

#[test]
fn both_versions_answer_keep_alive_and_pipelined_requests() {
    for (version, want) in [
        (&rustls::version::TLS13, ProtocolVersion::TLSv1_3),
        (&rustls::version::TLS12, ProtocolVersion::TLSv1_2),
    ] {
        let mut s = tls_server(4);
        let (mut nic, mut clock) = nic_and_clock();
        let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, version, 40000);
        assert_eq!(c.tls.protocol_version(), Some(want));
        assert_eq!(c.tls.alpn_protocol(), Some(&b"http/1.1"[..]));
        c.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        c.pump(&mut s, &mut nic, &mut clock, 20);
        let r = responses(&c.plain);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, "HTTP/1.1 200 OK");
        assert_eq!(r[0].1, b"<h1>hello</h1>\n");
        // Three pipelined in one write (one record), the last closing.
        c.write(
            b"GET /index.html HTTP/1.1\r\nHost: a\r\n\r\nHEAD / HTTP/1.1\r\nHost: a\r\n\r\n\
              GET /nothing HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        );
        c.pump(&mut s, &mut nic, &mut clock, 40);
        let text = String::from_utf8_lossy(&c.plain).into_owned();
        assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 3, "{text}");
        assert!(text.contains("HTTP/1.1 404 Not Found"), "{text}");
        assert!(c.closed_by_peer, "close_notify after Connection: close");
        assert!(c.tcp.fin, "and a FIN");
        let st = s.stats();
        assert_eq!((st.tls_sessions, st.tls_established), (1, 1));
        assert_eq!((st.http_requests, st.tls_failed), (4, 0));
        // The client's FIN ends it.
        c.tcp.send_fin(&mut nic);
        run(&mut s, &mut nic, &clock);
        assert_eq!(s.active(), 0, "TCB freed");
    }
}

#[test]
fn a_mebibyte_arrives_byte_exact() {
    let mut s = tls_server(2);
    let (mut nic, mut clock) = nic_and_clock();
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 40001);
    c.write(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n");
    c.pump(&mut s, &mut nic, &mut clock, 4000);
    let r = responses(&c.plain);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, "HTTP/1.1 200 OK");
    assert!(
        r[0].1 == big_file(),
        "body differs ({} bytes)",
        r[0].1.len()
    );
    // ACK-clocked to the end: the records still in flight after the response is sealed
    // whole go out as ACKs come, not at a retransmission timeout.
    let st = s.stats();
    assert_eq!(
        (st.tcp_rto_retransmits, st.tcp_loss_probes),
        (0, 0),
        "{st:?}"
    );
    // AES-GCM on AES-NI: every segment sealed straight into its frame, no record whole.
    if bareweb_tls::provider::aesni::available() {
        assert_eq!(st.tls_sealed_whole, 0, "{st:?}");
    }
    // Then another request on the same connection.
    c.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    c.pump(&mut s, &mut nic, &mut clock, 20);
    assert_eq!(responses(&c.plain).len(), 2);
}

/// With segmentation offload on a ring that copies at post (the host's TAP): TLS segments
/// go as offloaded frames of several records, each record's part sealed straight into the
/// frame's buffer; the file arrives byte-exact, in far fewer frames than segments.
#[test]
fn offloaded_frames_carry_records_whole_and_in_part() {
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let mut s = tls_server(2);
        let (mut nic, mut clock) = nic_and_clock();
        nic.tso_max = 65_536;
        let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, version, 40001);
        c.write(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n");
        c.pump(&mut s, &mut nic, &mut clock, 4000);
        let r = responses(&c.plain);
        assert_eq!(r.len(), 1, "{version:?}");
        assert!(
            r[0].1 == big_file(),
            "{version:?}: body differs ({} bytes)",
            r[0].1.len()
        );
        assert!(nic.tx.tso_frames > 0, "{version:?}: no offloaded frame");
        assert_eq!(s.stats().tls_failed, 0);
        if bareweb_tls::provider::aesni::available() {
            assert_eq!(s.stats().tls_sealed_whole, 0, "{version:?}");
        }
    }
}

/// A reload frees the old site image once no connection sends from it: an HTTPS response
/// reserved whole still reads its body from the image until its records are
/// acknowledged (each is sealed when sent, again for a retransmission).
#[test]
fn records_not_yet_acknowledged_hold_the_site_image_for_a_reload() {
    let mut s = tls_server(2);
    let (mut nic, mut clock) = nic_and_clock();
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 40001);
    c.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let mut c2s = Vec::new();
    while c.tls.wants_write() {
        c.tls.write_tls(&mut c2s).unwrap();
    }
    c.tcp.send(&mut nic, &c2s);
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().any(|o| !o.payload.is_empty()), "the response");
    assert_eq!(
        s.responses_in(0..usize::MAX),
        1,
        "records in flight read the image"
    );
    c.tcp.take(&out, &mut nic);
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.responses_in(0..usize::MAX), 0, "acknowledged: released");
}

/// Segments lost on the way: the records are sealed again for their retransmission (no
/// ciphertext is kept), and every retransmitted byte is the byte first sent, also across
/// a KeyUpdate; the file arrives byte-exact over both versions, and the client keeps its
/// connection for the next request. With AES-GCM on AES-NI and with ChaCha20-Poly1305 a
/// segment is sealed alone, straight into its frame, and a segment sent again too (the
/// record's tag kept).
#[test]
fn lost_segments_are_sealed_again_the_same_and_the_file_arrives_whole() {
    let chacha = [false, false, true];
    let versions = [
        &rustls::version::TLS13,
        &rustls::version::TLS12,
        &rustls::version::TLS13,
    ];
    for (version, chacha) in versions.into_iter().zip(chacha) {
        let mut s = tls_server(2);
        let (mut nic, mut clock) = nic_and_clock();
        let cfg = client_config_chacha(version, chacha);
        let mut c = TlsClient::connect_with(&mut s, &mut nic, &mut clock, cfg, 40001);
        c.tcp.loss = Some(Loss {
            every: 7,
            left: 15,
            n: 0,
            base: c.tcp.rcv_nxt,
            stream: Vec::new(),
            resent: 0,
        });
        c.write(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n");
        for i in 0..300 {
            if i == 1 && version == &rustls::version::TLS13 {
                // A KeyUpdate asking for ours while records sealed under the old key are
                // still to be sent again: they keep their key until acknowledged.
                c.tls.refresh_traffic_keys().unwrap();
            }
            c.pump(&mut s, &mut nic, &mut clock, 400);
            if responses(&c.plain)
                .first()
                .is_some_and(|r| r.1.len() == big_file().len())
            {
                break;
            }
            // Quiet: let a retransmission timer fire.
            clock.0 += 300_000_000;
        }
        let r = responses(&c.plain);
        assert_eq!(r.len(), 1, "{version:?}");
        assert!(
            r[0].1 == big_file(),
            "{version:?}: body differs ({} bytes)",
            r[0].1.len()
        );
        let l = c.tcp.loss.take().unwrap();
        assert_eq!(l.left, 0, "{version:?}: all losses happened");
        assert!(
            l.resent >= 15,
            "{version:?}: {} segments sent again",
            l.resent
        );
        let st = s.stats();
        assert_eq!(st.tls_failed, 0);
        let suite = c.tls.negotiated_cipher_suite().unwrap().suite();
        assert_eq!(format!("{suite:?}").contains("CHACHA"), chacha, "{suite:?}");
        if chacha || bareweb_tls::provider::aesni::available() {
            // Every segment, sent again or not, sealed alone: the lost ones that held a
            // tag went again after the tag was made by the first copy.
            assert_eq!(st.tls_sealed_whole, 0, "{st:?}");
        }
        c.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        c.pump(&mut s, &mut nic, &mut clock, 50);
        assert_eq!(responses(&c.plain).len(), 2, "{version:?}");
    }
}

/// The lengths of the application-data records (type 23) in `stream`, a run of whole
/// TLS records.
fn app_records(mut stream: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    while stream.len() >= 5 {
        let n = usize::from(u16::from_be_bytes([stream[3], stream[4]]));
        if stream[0] == 23 {
            v.push(n);
        }
        stream = &stream[(5 + n).min(stream.len())..];
    }
    v
}

#[test]
fn records_start_one_segment_each_then_grow_and_start_small_again_after_idle() {
    use crate::server::tls::{MAX_RECORD, RECORD_IDLE_NS, SMALL_RECORDS};
    let mut s = tls_server(2);
    let (mut nic, mut clock) = nic_and_clock();
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 40009);
    // The client's SYN offers an MSS of 1460 (no timestamps): "one segment" is a record of
    // at most 1460 bytes with its header.
    let one_segment = 1460 - 5;
    let mut fetch = |c: &mut TlsClient, s: &mut Server<TestSite>, clock: &mut ManualClock| {
        let from = c.tcp.got.len();
        c.write(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n");
        c.pump(s, &mut nic, clock, 8000);
        app_records(&c.tcp.got[from..])
    };
    let small = SMALL_RECORDS as usize;
    // TLS 1.3 adds the content type and a 16-byte tag to each record's plaintext.
    let full = MAX_RECORD + 17;
    let first = fetch(&mut c, &mut s, &mut clock);
    assert!(
        first[..small].iter().all(|&n| n <= one_segment),
        "{first:?}"
    );
    assert!(first[small..].iter().all(|&n| n > one_segment), "{first:?}");
    assert_eq!(first.iter().max(), Some(&full), "{first:?}");
    // Straight after: the connection is warm, no record is small (but the response's
    // last; some are cut to the room left under the unacknowledged ciphertext's bound).
    let warm = fetch(&mut c, &mut s, &mut clock);
    assert_eq!(warm[0], full, "{warm:?}");
    assert!(warm[..warm.len() - 1].iter().all(|&n| n > 4096), "{warm:?}");
    // After a second of silence: small again.
    clock.0 += RECORD_IDLE_NS + 1;
    let cold = fetch(&mut c, &mut s, &mut clock);
    assert!(cold[..small].iter().all(|&n| n <= one_segment), "{cold:?}");
    assert_eq!(cold.iter().max(), Some(&full), "{cold:?}");
    let r = responses(&c.plain);
    assert_eq!(r.len(), 3);
    assert!(r
        .iter()
        .all(|(status, body)| status == "HTTP/1.1 200 OK" && *body == big_file()));
}

/// A KeyUpdate asking for ours (RFC 8446 §4.6.3, OpenSSL's `K`), then a request, ten
/// times: each response arrives, under the new keys, our KeyUpdate ahead of it (the next
/// seal once failed and closed the connection).
#[test]
fn key_updates_between_requests_are_answered_and_the_requests_too() {
    let mut s = tls_server(2);
    let (mut nic, mut clock) = nic_and_clock();
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 40006);
    for i in 1..=10 {
        c.tls.refresh_traffic_keys().unwrap();
        c.pump(&mut s, &mut nic, &mut clock, 10);
        c.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        c.pump(&mut s, &mut nic, &mut clock, 20);
        assert_eq!(responses(&c.plain).len(), i, "after KeyUpdate {i}");
    }
    assert_eq!(s.stats().tls_failed, 0);
    assert!(!c.tcp.fin);
}

#[test]
fn close_notify_from_the_client_is_answered_with_ours_and_a_fin() {
    let mut s = tls_server(2);
    let (mut nic, mut clock) = nic_and_clock();
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS12, 40002);
    c.tls.send_close_notify();
    c.pump(&mut s, &mut nic, &mut clock, 20);
    assert!(c.closed_by_peer && c.tcp.fin, "close_notify and FIN back");
    c.tcp.send_fin(&mut nic);
    run(&mut s, &mut nic, &clock);
    assert_eq!(s.active(), 0);
}

/// An idle keep-alive connection is closed with our close_notify before the FIN (a client
/// tells that from a cut), on both versions.
#[test]
fn an_idle_connection_gets_close_notify_then_a_fin() {
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let mut s = tls_server(2);
        let (mut nic, mut clock) = nic_and_clock();
        let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, version, 40005);
        c.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        c.pump(&mut s, &mut nic, &mut clock, 20);
        assert_eq!(responses(&c.plain).len(), 1, "{version:?}");
        assert!(!c.closed_by_peer && !c.tcp.fin);
        clock.0 += 31_000_000_000;
        c.pump(&mut s, &mut nic, &mut clock, 10);
        assert!(c.closed_by_peer, "{version:?}: close_notify");
        assert!(c.tcp.fin, "{version:?}: FIN");
    }
}

#[test]
fn a_silent_client_gets_a_sealed_408_and_one_mid_handshake_a_fin() {
    let mut s = tls_server(2);
    let (mut nic, mut clock) = nic_and_clock();
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 40003);
    c.write(b"GET / HTTP/1.1\r\n"); // never finished
    c.pump(&mut s, &mut nic, &mut clock, 5);
    clock.0 += 11_000_000_000;
    c.pump(&mut s, &mut nic, &mut clock, 10);
    let text = String::from_utf8_lossy(&c.plain).into_owned();
    assert!(text.starts_with("HTTP/1.1 408 Request Timeout"), "{text}");
    assert!(c.closed_by_peer && c.tcp.fin);

    // A client that opens TCP and sends half a ClientHello.
    let mut t = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 40004);
    t.send(&mut nic, &[0x16, 0x03, 0x01, 0x01, 0x00, 0x01]);
    run(&mut s, &mut nic, &clock);
    clock.0 += 11_000_000_000;
    for _ in 0..2 {
        // The timer scan ends one poll, the connection's step sends in the next.
        let out = run(&mut s, &mut nic, &clock);
        t.take(&out, &mut nic);
    }
    assert!(t.fin && t.got.is_empty(), "only a FIN");
    assert_eq!(s.stats().tls_failed, 0);
}

/// A client that sends half a ClientHello and then its FIN will never finish the hello:
/// the connection is closed at once (as plain HTTP closes one whose request was cut off
/// by the FIN), not held until the request timeout.
#[test]
fn a_fin_in_the_middle_of_the_hello_closes_at_once() {
    let mut s = tls_server(2);
    let (mut nic, clock) = nic_and_clock();
    let mut t = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 40005);
    t.send(&mut nic, &[0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00]);
    run(&mut s, &mut nic, &clock);
    t.send_fin(&mut nic);
    for _ in 0..3 {
        // The clock does not move: no timer may be what closes it.
        let out = run(&mut s, &mut nic, &clock);
        t.take(&out, &mut nic);
    }
    assert!(t.fin && t.got.is_empty(), "only a FIN");
    assert_eq!(s.active(), 0, "TCB freed");
    assert_eq!(s.stats().http_4xx, 0, "no 408: no request timeout ran out");
}

#[test]
fn hostile_bytes_end_in_an_alert_and_a_fin_never_a_panic() {
    let garbage: [&[u8]; 5] = [
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", // plain HTTP on the TLS port
        &[0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0, 0, 0], // a record over 2^14 + 256
        &[0x17, 0x03, 0x03, 0x00, 0x05, 1, 2, 3, 4, 5], // data before any handshake
        &[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28], // a fatal alert
        &[0x16, 0x03, 0x03, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00], // an empty ClientHello
    ];
    for (k, bytes) in garbage.iter().enumerate() {
        let mut s = tls_server(2);
        let (mut nic, clock) = nic_and_clock();
        let mut t = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 41000 + k as u16);
        t.send(&mut nic, bytes);
        for _ in 0..5 {
            let out = run(&mut s, &mut nic, &clock);
            t.take(&out, &mut nic);
        }
        assert!(t.fin, "case {k}: FIN");
        assert_eq!(s.stats().tls_failed, 1, "case {k}");
        if t.got.len() >= 7 {
            assert_eq!(t.got[0], 0x15, "case {k}: an alert record");
        }
        t.send_fin(&mut nic);
        run(&mut s, &mut nic, &clock);
        assert_eq!(s.active(), 0, "case {k}: TCB freed");
    }
    // Random bytes in random pieces, on an established connection too.
    let mut x = 0x1234_5678_u64;
    for round in 0..20 {
        let mut s = tls_server(2);
        let (mut nic, mut clock) = nic_and_clock();
        let mut c =
            TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 42000);
        let mut junk = vec![0u8; 50 + round * 97];
        for b in junk.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        if round % 2 == 0 {
            junk[0] = 0x17;
            junk[1] = 3;
            junk[2] = 3;
        }
        c.tcp.send(&mut nic, &junk);
        for _ in 0..5 {
            let out = run(&mut s, &mut nic, &clock);
            c.tcp.take(&out, &mut nic);
        }
        if !c.tcp.fin {
            // A record header announcing more than came: rustls waits for the rest,
            // and the request timeout ends the wait.
            assert_eq!(s.stats().tls_failed, 0, "round {round}");
            clock.0 += 11_000_000_000;
            for _ in 0..3 {
                let out = run(&mut s, &mut nic, &clock);
                c.tcp.take(&out, &mut nic);
            }
        } else {
            assert_eq!(s.stats().tls_failed, 1, "round {round}");
        }
        assert!(c.tcp.fin, "round {round}: closed");
    }
}

/// [`run`], with each segment's destination port (the client it is for).
fn run_ports(s: &mut Server<TestSite>, nic: &mut FakeNic, clock: &ManualClock) -> Vec<(u16, Out)> {
    s.poll(nic, clock, &mut NoLog);
    nic.tx
        .outbox
        .drain(..)
        .map(|f| {
            let port = u16::from_be_bytes([f[L2L3 - 20 + 22], f[L2L3 - 20 + 23]]);
            (port, parse_out(&f).unwrap())
        })
        .collect()
}

#[test]
fn handshakes_per_round_are_bounded_and_all_complete() {
    let n = 12u16;
    let mut s = tls_server(usize::from(n) + 1);
    let (mut nic, mut clock) = nic_and_clock();
    // An established keep-alive client, whose request comes in the same round as every
    // ClientHello: it is answered in that round.
    let mut old = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 42999);
    let mut clients: Vec<(Tcp, ClientConnection, usize)> = (0..n)
        .map(|i| {
            let tcp = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 43000 + i);
            let tls = ClientConnection::new(
                client_config(&rustls::version::TLS13),
                "localhost".try_into().unwrap(),
            )
            .unwrap();
            (tcp, tls, 0)
        })
        .collect();
    let mut first = true;
    old.write(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    let mut c2s = Vec::new();
    while old.tls.wants_write() {
        old.tls.write_tls(&mut c2s).unwrap();
    }
    for _ in 0..30 {
        for (tcp, tls, _) in &mut clients {
            let mut c2s = Vec::new();
            while tls.wants_write() {
                tls.write_tls(&mut c2s).unwrap();
            }
            tcp.send(&mut nic, &c2s);
        }
        if first {
            old.tcp.send(&mut nic, &c2s);
        }
        clock.0 += 100_000;
        let outs = run_ports(&mut s, &mut nic, &clock);
        if first {
            let mine: Vec<Out> = outs
                .iter()
                .filter(|(p, _)| *p == old.tcp.sport)
                .map(|(_, o)| o.clone())
                .collect();
            assert!(
                old.tcp.take(&mine, &mut nic) > 0,
                "the established client is answered in the round of the hellos"
            );
            assert_eq!(s.stats().http_requests, 1);
            // Every ClientHello came in this one round: only some were taken.
            first = false;
            let begun = s.stats().tls_sessions - 1; // the established client's
            assert!(
                begun <= u64::from(crate::server::tls::HANDSHAKES_PER_ROUND),
                "{begun} handshakes in one round"
            );
            // One: each handshake step is ~1.5 ms of a core that the established
            // connections of the round wait for (the flood measurement in
            // docs/perf/log/2026-11-28-tls-handshake-flood.md).
            assert_eq!(begun, 1, "one handshake step per round");
            assert!(s.stats().tls_handshakes_deferred > 0);
        }
        for (tcp, tls, fed) in &mut clients {
            let mine: Vec<Out> = outs
                .iter()
                .filter(|(p, _)| *p == tcp.sport)
                .map(|(_, o)| o.clone())
                .collect();
            tcp.take(&mine, &mut nic);
            let mut rd = &tcp.got[*fed..];
            while !rd.is_empty() && tls.read_tls(&mut rd).unwrap() > 0 {
                tls.process_new_packets().unwrap();
            }
            *fed = tcp.got.len();
        }
    }
    assert!(clients.iter().all(|(_, tls, _)| !tls.is_handshaking()));
    assert_eq!(s.stats().tls_established, u64::from(n) + 1);
}

#[test]
fn http_redirect_sends_plain_http_to_https_but_acme_challenges() {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 4;
    cfg.https_redirect = Some(8443);
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let (mut nic, clock) = nic_and_clock();
    let mut t = Tcp::open(&mut s, &mut nic, &clock, 80, 44000);
    t.send(
        &mut nic,
        b"GET /a/b?c=d HTTP/1.1\r\nHost: example.org:8080\r\n\r\n\
          GET /.well-known/acme-challenge/tok HTTP/1.1\r\nHost: example.org\r\n\r\n\
          GET / HTTP/1.0\r\n\r\n",
    );
    for _ in 0..10 {
        let out = run(&mut s, &mut nic, &clock);
        t.take(&out, &mut nic);
    }
    let text = String::from_utf8_lossy(&t.got).into_owned();
    let r = responses(&t.got);
    assert_eq!(r.len(), 3, "{text}");
    assert_eq!(r[0].0, "HTTP/1.1 308 Permanent Redirect");
    assert!(
        text.contains("Location: https://example.org:8443/a/b?c=d\r\n"),
        "{text}"
    );
    assert_eq!(
        r[1].0, "HTTP/1.1 404 Not Found",
        "the challenge is the site's"
    );
    assert_eq!(r[2].0, "HTTP/1.1 400 Bad Request", "no Host: nowhere to go");
}

/// Captured `openssl s_client` ClientHellos (TLS 1.3 and 1.2 only; the fuzz seeds, after
/// their control byte): each gets the server's first flight, a ServerHello record first.
#[test]
fn captured_openssl_hellos_get_a_server_hello() {
    let hellos: [&[u8]; 2] = [
        include_bytes!("../../../../../fuzz/corpus/tls_server/s_client_tls13"),
        include_bytes!("../../../../../fuzz/corpus/tls_server/s_client_tls12"),
    ];
    for (k, hello) in hellos.iter().enumerate() {
        let hello = &hello[1..];
        assert_eq!(hello[0], 0x16, "a handshake record");
        let mut s = tls_server(2);
        let (mut nic, clock) = nic_and_clock();
        let mut t = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 45000 + k as u16);
        t.send(&mut nic, hello);
        for _ in 0..3 {
            let out = run(&mut s, &mut nic, &clock);
            t.take(&out, &mut nic);
        }
        assert!(t.got.len() > 100, "hello {k}: {} bytes back", t.got.len());
        // Record: handshake, TLS 1.2 on the wire; message: ServerHello (2).
        assert_eq!(&t.got[..3], &[0x16, 0x03, 0x03], "hello {k}");
        assert_eq!(t.got[5], 2, "hello {k}: ServerHello first");
        assert!(!t.fin, "hello {k}: waiting for the client's next flight");
        assert_eq!(s.stats().tls_failed, 0);
    }
}

#[test]
fn a_proxy_header_before_the_hello_names_the_client_on_the_https_port() {
    // HAProxy in TCP mode in front of the HTTPS port (`send-proxy`): the header, then
    // the TLS bytes. The header's client is the connection's (here: the per-address
    // limit of one counts it), and the session never sees the header.
    let mut s = {
        let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
        cfg.tcbs = 8;
        cfg.max_per_ip = Some(1);
        cfg.syn_backlog = Some(8);
        let mut sources = crate::server::config::ProxySources::NONE;
        assert!(sources.add(Ipv4Address([10, 0, 0, 0]), 24));
        cfg.proxy_protocol = sources;
        cfg.tls = Some(TlsListen {
            port: HTTPS,
            acceptor: acceptor(),
        });
        Server::new(cfg, TestSite::new(), SERVER_MAC)
    };
    let (mut nic, mut clock) = nic_and_clock();
    let header = b"PROXY TCP4 192.0.2.9 10.0.0.2 5555 443\r\n";
    let mut tcp = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 47000);
    tcp.send(&mut nic, header);
    let tls = ClientConnection::new(
        client_config(&rustls::version::TLS13),
        "localhost".try_into().unwrap(),
    )
    .unwrap();
    let mut c = TlsClient {
        tcp,
        tls,
        plain: Vec::new(),
        fed: 0,
        closed_by_peer: false,
    };
    c.pump(&mut s, &mut nic, &mut clock, 50);
    assert!(!c.tls.is_handshaking(), "handshake did not complete");
    c.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    c.pump(&mut s, &mut nic, &mut clock, 50);
    let r = responses(&c.plain);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].0.starts_with("HTTP/1.1 200"), "{r:?}");
    assert_eq!(s.stats().proxy_headers, 1);
    // The same client again through the balancer: past its limit of one, reset.
    let mut second = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 47001);
    second.send(&mut nic, header);
    clock.0 += 100_000;
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().any(|o| o.rst), "{out:?}");
    assert_eq!(s.stats().tcp_per_ip_refused, 1);
    // A connection from the balancer with no header: refused by reason, never a session.
    let mut bare = Tcp::open(&mut s, &mut nic, &clock, HTTPS, 47002);
    bare.send(&mut nic, &[0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0]);
    clock.0 += 100_000;
    let out = run(&mut s, &mut nic, &clock);
    assert!(out.iter().any(|o| o.rst), "{out:?}");
    let st = s.stats();
    assert_eq!(st.proxy_missing + st.proxy_malformed, 1, "{st:?}");
}

#[test]
fn hsts_is_on_every_https_response_and_never_on_plain_http() {
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.max_per_ip = Some(8);
    cfg.tls = Some(TlsListen {
        port: HTTPS,
        acceptor: acceptor(),
    });
    cfg.hsts = crate::http::Hsts::parse("max-age=63072000; includeSubDomains");
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let (mut nic, mut clock) = nic_and_clock();
    let field = "Strict-Transport-Security: max-age=63072000; includeSubDomains\r\n";
    // The same 200 twice (the second from the head cache), a 404, a 405 and a 400.
    let asks: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n\
        GET /nothing HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\n\r\n\
        GET nope\r\n\r\n";
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 48000);
    c.write(asks);
    c.pump(&mut s, &mut nic, &mut clock, 60);
    let text = String::from_utf8_lossy(&c.plain).into_owned();
    assert_eq!(responses(&c.plain).len(), 5, "{text}");
    assert_eq!(text.matches(field).count(), 5, "{text}");

    let mut t = Tcp::open(&mut s, &mut nic, &clock, 80, 48001);
    t.send(&mut nic, asks);
    for _ in 0..10 {
        let out = run(&mut s, &mut nic, &clock);
        t.take(&out, &mut nic);
    }
    let text = String::from_utf8_lossy(&t.got).into_owned();
    assert_eq!(responses(&t.got).len(), 5, "{text}");
    assert!(!text.contains("Strict-Transport-Security"), "{text}");

    // The server's own pages too: the stats JSON, /metrics, /healthz and a POST to one.
    let pages = crate::cores::pages::PageSettings {
        metrics: true,
        healthz: true,
        ..Default::default()
    };
    let board = crate::cores::board::Board::new("single", &[crate::cores::board::Role::Single])
        .with_pages(pages);
    s.serve_stats(Box::leak(Box::new(board)), 0);
    let own: &[u8] = b"GET /.well-known/bareweb/stats HTTP/1.1\r\nHost: a\r\n\r\n\
        GET /metrics HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n\
        POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 48002);
    c.write(own);
    c.pump(&mut s, &mut nic, &mut clock, 60);
    let text = String::from_utf8_lossy(&c.plain).into_owned();
    let got = responses(&c.plain);
    let codes: Vec<&str> = got.iter().map(|(status, _)| &status[9..12]).collect();
    assert_eq!(codes, ["200", "200", "200", "405"], "{text}");
    assert_eq!(text.matches(field).count(), 4, "{text}");
    let mut t = Tcp::open(&mut s, &mut nic, &clock, 80, 48003);
    t.send(&mut nic, own);
    for _ in 0..10 {
        let out = run(&mut s, &mut nic, &clock);
        t.take(&out, &mut nic);
    }
    let text = String::from_utf8_lossy(&t.got).into_owned();
    assert_eq!(responses(&t.got).len(), 4, "{text}");
    assert!(!text.contains("Strict-Transport-Security"), "{text}");
}

#[test]
fn acme_http01_answers_are_served_to_anyone_on_both_ports_while_published() {
    use crate::cores::challenge::Http01;
    let mut cfg = Config::new(SERVER_IP, 24, [0x42; 16]);
    cfg.tcbs = 8;
    cfg.https_redirect = Some(HTTPS);
    cfg.tls = Some(TlsListen {
        port: HTTPS,
        acceptor: acceptor(),
    });
    let mut s = Server::new(cfg, TestSite::new(), SERVER_MAC);
    let (mut nic, mut clock) = nic_and_clock();
    let table: &'static Http01 = Box::leak(Box::new(Http01::new()));
    // The stats page and metrics only for a network the client is not in: the answers
    // are for anyone (the CA's validators).
    let pages = crate::cores::pages::PageSettings {
        allow: crate::cores::pages::Allow::Network([192, 0, 2, 0], 24),
        ..Default::default()
    };
    let board = crate::cores::board::Board::new("single", &[crate::cores::board::Role::Single])
        .with_pages(pages)
        .with_http01(Some(table));
    s.serve_stats(Box::leak(Box::new(board)), 0);
    let token = "vqjo61Y5ozTrXwYkiYrsr2q90SutyD_H3S3bGVaGYjw";
    let ka = format!("{token}.6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM");
    let ask = format!(
        "GET /.well-known/acme-challenge/{token} HTTP/1.1\r\nHost: acme.test\r\n\r\n\
         GET /.well-known/acme-challenge/other HTTP/1.1\r\nHost: acme.test\r\n\r\n\
         GET /.well-known/bareweb/stats HTTP/1.1\r\nHost: acme.test\r\n\r\n"
    );
    let plain = |s: &mut Server<TestSite>, nic: &mut FakeNic, clock: &ManualClock, port| {
        let mut t = Tcp::open(s, nic, clock, 80, port);
        t.send(nic, ask.as_bytes());
        for _ in 0..10 {
            let out = run(s, nic, clock);
            t.take(&out, nic);
        }
        t.got
    };
    // Nothing published: the redirect takes the stats page; the challenge path is the
    // site's (404).
    let got = plain(&mut s, &mut nic, &clock, 49001);
    let r = responses(&got);
    let codes: Vec<&str> = r.iter().map(|(status, _)| &status[9..12]).collect();
    assert_eq!(
        codes,
        ["404", "404", "308"],
        "{}",
        String::from_utf8_lossy(&got)
    );
    // Published: the answer, byte for byte; another token 404.
    table.publish(token, &ka).unwrap();
    let got = plain(&mut s, &mut nic, &clock, 49002);
    let text = String::from_utf8_lossy(&got).into_owned();
    let r = responses(&got);
    let codes: Vec<&str> = r.iter().map(|(status, _)| &status[9..12]).collect();
    assert_eq!(codes, ["200", "404", "308"], "{text}");
    assert!(
        text.contains(&format!("Content-Length: {}\r\n", ka.len())),
        "{text}"
    );
    assert!(
        text.contains(&format!("\r\n\r\n{ka}HTTP/1.1 404")),
        "{text}"
    );
    // Over HTTPS too (a validator that followed a redirect).
    let mut c = TlsClient::connect(&mut s, &mut nic, &mut clock, &rustls::version::TLS13, 49003);
    c.write(ask.as_bytes());
    c.pump(&mut s, &mut nic, &mut clock, 60);
    let text = String::from_utf8_lossy(&c.plain).into_owned();
    let codes: Vec<String> = responses(&c.plain)
        .iter()
        .map(|(s, _)| s[9..12].to_string())
        .collect();
    assert_eq!(codes, ["200", "404", "403"], "{text}");
    assert!(text.contains(&ka), "{text}");
    // Withdrawn: the site's again.
    table.withdraw_all();
    let got = plain(&mut s, &mut nic, &clock, 49004);
    let codes: Vec<String> = responses(&got)
        .iter()
        .map(|(s, _)| s[9..12].to_string())
        .collect();
    assert_eq!(codes, ["404", "404", "308"]);
}
