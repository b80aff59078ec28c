//! State-level tests of the connection driver: a real rustls client (with this crate's
//! provider) in memory against [`TlsConn`], every version, suite and group; resumption;
//! byte-at-a-time input; and hostile input (garbage, oversized and truncated records,
//! records after a failure, floods) ending in the right alert and no panic.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use std::io::{Read, Write};

use rustls::client::ClientConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{
    CipherSuite, ClientConfig, HandshakeKind, NamedGroup, RootCertStore, SupportedProtocolVersion,
};

use super::*;
use crate::testing::TestRandom;

static SERVER_RNG: TestRandom = TestRandom::new(11);
static CLIENT_RNG: TestRandom = TestRandom::new(22);
const CERT: &[u8] = include_bytes!("../../testdata/cert.pem");
const CA: &[u8] = include_bytes!("../../testdata/ca.pem");
const KEY: &[u8] = include_bytes!("../../testdata/key.pem");

fn platform() -> Platform {
    Platform {
        random: &SERVER_RNG,
        time: Arc::new(rustls::time_provider::DefaultTimeProvider),
    }
}

pub(super) fn server(options: &Options) -> TlsServer {
    TlsServer::new(CERT, KEY, options, &platform()).unwrap()
}

pub(super) fn client_config(
    version: &'static SupportedProtocolVersion,
    suite: Option<CipherSuite>,
    group: Option<NamedGroup>,
) -> Arc<ClientConfig> {
    let mut provider = crate::provider::provider(&CLIENT_RNG);
    if let Some(s) = suite {
        provider.cipher_suites.retain(|c| c.suite() == s);
    }
    if let Some(g) = group {
        provider.kx_groups.retain(|k| k.name() == g);
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

pub(super) fn client(cfg: &Arc<ClientConfig>) -> ClientConnection {
    ClientConnection::new(cfg.clone(), "localhost".try_into().unwrap()).unwrap()
}

/// Moves bytes both ways until neither side has anything to say; `chunk` bounds the
/// client→server pieces (1 for byte-at-a-time).
fn pump(
    c: &mut ClientConnection,
    s: &mut TlsConn,
    plain: &mut Vec<u8>,
    chunk: usize,
) -> Result<Progress, Fatal> {
    let mut progress = Progress::default();
    for _ in 0..100 {
        let mut c2s = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut c2s).unwrap();
        }
        let mut out = Vec::new();
        let mut feed = |bytes: &[u8], out: &mut Vec<u8>| -> Result<(), Fatal> {
            let p = s.receive(bytes, out, plain)?;
            progress.established = p.established;
            progress.peer_closed |= p.peer_closed;
            progress.closed |= p.closed;
            Ok(())
        };
        if c2s.is_empty() {
            feed(&[], &mut out)?;
        }
        for piece in c2s.chunks(chunk) {
            feed(piece, &mut out)?;
        }
        if out.is_empty() && c2s.is_empty() {
            return Ok(progress);
        }
        let mut rd = &out[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
            c.process_new_packets().unwrap();
        }
    }
    panic!("no quiescence");
}

pub(super) fn exchange(c: &mut ClientConnection, s: &mut TlsConn) {
    let mut plain = Vec::new();
    c.writer()
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let p = pump(c, s, &mut plain, 4096).unwrap();
    assert!(p.established);
    assert_eq!(plain, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    // A response over two records.
    let body: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    let mut out = vec![0u8; sealed_len(body.len())];
    let n = s.encrypt(&body, &mut out).unwrap();
    let mut rd = &out[..n];
    while !rd.is_empty() {
        c.read_tls(&mut rd).unwrap();
        c.process_new_packets().unwrap();
    }
    let mut got = vec![0u8; body.len()];
    c.reader().read_exact(&mut got).unwrap();
    assert_eq!(got, body);
}

#[test]
fn every_version_suite_and_group() {
    let s = server(&Options::default());
    let cases: &[(&'static SupportedProtocolVersion, CipherSuite)] = &[
        (
            &rustls::version::TLS13,
            CipherSuite::TLS13_AES_128_GCM_SHA256,
        ),
        (
            &rustls::version::TLS13,
            CipherSuite::TLS13_AES_256_GCM_SHA384,
        ),
        (
            &rustls::version::TLS13,
            CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        ),
        (
            &rustls::version::TLS12,
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            &rustls::version::TLS12,
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            &rustls::version::TLS12,
            CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ];
    for &(version, suite) in cases {
        for group in [NamedGroup::X25519, NamedGroup::secp256r1] {
            let cfg = client_config(version, Some(suite), Some(group));
            let mut c = client(&cfg);
            let mut conn = s.accept().unwrap();
            exchange(&mut c, &mut conn);
            let n = conn.negotiated().unwrap();
            assert_eq!(n.version, version.version);
            assert_eq!(n.suite, suite);
            assert_eq!(n.group, Some(group));
            assert!(n.alpn_http11);
        }
    }
}

#[test]
fn byte_at_a_time() {
    let s = server(&Options::default());
    for v in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let mut c = client(&client_config(v, None, None));
        let mut conn = s.accept().unwrap();
        let mut plain = Vec::new();
        c.writer().write_all(b"ping").unwrap();
        assert!(pump(&mut c, &mut conn, &mut plain, 1).unwrap().established);
        assert_eq!(plain, b"ping");
        assert_eq!(conn.buffered(), 0);
    }
}

#[test]
fn tickets_resume_both_versions() {
    let s = server(&Options::default());
    for v in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let cfg = client_config(v, None, None);
        let mut first = client(&cfg);
        let mut conn = s.accept().unwrap();
        exchange(&mut first, &mut conn);
        assert_eq!(first.handshake_kind(), Some(HandshakeKind::Full));
        let mut second = client(&cfg);
        let mut conn = s.accept().unwrap();
        exchange(&mut second, &mut conn);
        assert_eq!(
            second.handshake_kind(),
            Some(HandshakeKind::Resumed),
            "{v:?}"
        );
    }
    // Tickets off: no resumption.
    let s = server(&Options {
        tickets: false,
        ..Options::default()
    });
    let cfg = client_config(&rustls::version::TLS13, None, None);
    for _ in 0..2 {
        let mut c = client(&cfg);
        let mut conn = s.accept().unwrap();
        exchange(&mut c, &mut conn);
        assert_eq!(c.handshake_kind(), Some(HandshakeKind::Full));
    }
}

#[test]
fn tls13_only_refuses_a_tls12_client() {
    let s = server(&Options {
        min_version: MinVersion::Tls13,
        ..Options::default()
    });
    let mut c = client(&client_config(&rustls::version::TLS12, None, None));
    let mut conn = s.accept().unwrap();
    let mut c2s = Vec::new();
    c.write_tls(&mut c2s).unwrap();
    let mut out = Vec::new();
    let e = conn.receive(&c2s, &mut out, &mut Vec::new()).unwrap_err();
    assert!(matches!(e, Fatal::Protocol(_)), "{e:?}");
    // protocol_version alert (70), fatal.
    assert_eq!(out, [0x15, 3, 3, 0, 2, 2, 70]);
}

#[test]
fn close_notify_both_ways() {
    let s = server(&Options::default());
    let mut c = client(&client_config(&rustls::version::TLS13, None, None));
    let mut conn = s.accept().unwrap();
    exchange(&mut c, &mut conn);
    c.send_close_notify();
    let mut plain = Vec::new();
    let p = pump(&mut c, &mut conn, &mut plain, 4096).unwrap();
    assert!(p.peer_closed && !p.closed);
    let mut out = [0u8; 64];
    let n = conn.close(&mut out).unwrap();
    let mut rd = &out[..n];
    c.read_tls(&mut rd).unwrap();
    let st = c.process_new_packets().unwrap();
    assert!(st.peer_has_closed());
    let p = conn.receive(&[], &mut Vec::new(), &mut plain).unwrap();
    assert!(p.closed);
    assert_eq!(
        conn.receive(&[], &mut Vec::new(), &mut plain),
        Err(Fatal::Done)
    );
}

#[test]
fn encrypt_needs_the_handshake_and_room() {
    let s = server(&Options::default());
    let mut conn = s.accept().unwrap();
    let mut out = [0u8; 100];
    assert_eq!(conn.encrypt(b"x", &mut out), Err(SealError::NotReady));
    let mut c = client(&client_config(&rustls::version::TLS12, None, None));
    assert!(
        pump(&mut c, &mut conn, &mut Vec::new(), 4096)
            .unwrap()
            .established
    );
    let big = [7u8; 40_000];
    let need = match conn.encrypt(&big, &mut out) {
        Err(SealError::TooSmall(n)) => n,
        other => panic!("{other:?}"),
    };
    assert!(
        need <= sealed_len(big.len()),
        "{need} > {}",
        sealed_len(big.len())
    );
    let mut out = vec![0u8; need];
    assert_eq!(conn.encrypt(&big, &mut out), Ok(need));
}

/// The alert rustls sends, as (level, description), from the end of `out`.
fn alert(out: &[u8]) -> (u8, u8) {
    assert!(out.len() >= 7, "no alert in {out:?}");
    let rec = &out[out.len() - 7..];
    assert_eq!(rec[..5], [0x15, 3, 3, 0, 2], "{out:?}");
    (rec[5], rec[6])
}

fn fails_with(input: &[u8]) -> (Fatal, Vec<u8>) {
    let s = server(&Options::default());
    let mut conn = s.accept().unwrap();
    let mut out = Vec::new();
    let e = conn.receive(input, &mut out, &mut Vec::new()).unwrap_err();
    // Once failed, always failed, and no more output.
    let mut more = Vec::new();
    assert_eq!(
        conn.receive(b"\x16\x03\x01", &mut more, &mut Vec::new()),
        Err(Fatal::Done)
    );
    assert!(more.is_empty());
    (e, out)
}

#[test]
fn plain_http_is_refused() {
    let (e, out) = fails_with(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(matches!(e, Fatal::Protocol(_)));
    // decode_error (50) or unexpected_message (10), fatal.
    let (level, desc) = alert(&out);
    assert_eq!(level, 2);
    assert!(desc == 50 || desc == 10, "{desc}");
}

/// A record longer than any TLS allows (2^14 + 2048, RFC 5246 §6.2.3) is refused from its
/// header alone (rustls answers decode_error); a plaintext one within that but over 2^14
/// is parsed and refused for its content; an encrypted one over 2^14 + 256 is
/// record_overflow (the record layer checks before decrypting).
#[test]
fn records_longer_than_allowed_are_refused() {
    let record = |len: usize| {
        let mut rec = vec![0x16, 3, 3, (len >> 8) as u8, len as u8];
        rec.resize(5 + len, 0);
        rec
    };
    let (e, out) = fails_with(&record(16384 + 2048 + 1)[..5]);
    assert_eq!(
        e,
        Fatal::Protocol(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::MessageTooLarge
        ))
    );
    assert_eq!(alert(&out), (2, 50));
    let (e, out) = fails_with(&record(16384 + 256 + 1));
    assert!(matches!(e, Fatal::Protocol(_)), "{e:?}");
    assert_eq!(alert(&out).0, 2);

    let s = server(&Options::default());
    let mut c = client(&client_config(&rustls::version::TLS13, None, None));
    let mut conn = s.accept().unwrap();
    exchange(&mut c, &mut conn);
    let mut rec = record(16384 + 256 + 17);
    rec[0] = 0x17;
    let mut out = Vec::new();
    let e = conn.receive(&rec, &mut out, &mut Vec::new()).unwrap_err();
    assert_eq!(e, Fatal::Protocol(rustls::Error::PeerSentOversizedRecord));
    // The alert, encrypted: an application-data record of 2 + 1 + 16 bytes.
    assert_eq!(out[..5], [0x17, 3, 3, 0, 19]);
}

#[test]
fn truncated_client_hello_waits_then_garbage_fails() {
    let s = server(&Options::default());
    let mut c = client(&client_config(&rustls::version::TLS13, None, None));
    let mut hello = Vec::new();
    c.write_tls(&mut hello).unwrap();
    for cut in [1, 4, 5, 9, hello.len() / 2, hello.len() - 1] {
        let mut conn = s.accept().unwrap();
        let mut out = Vec::new();
        let p = conn
            .receive(&hello[..cut], &mut out, &mut Vec::new())
            .unwrap();
        assert!(!p.established && out.is_empty());
        assert_eq!(conn.buffered(), cut);
    }
    // Every single-byte corruption of a ClientHello: an alert or a handshake, no panic.
    for i in 0..hello.len() {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = hello.clone();
            bad[i] ^= flip;
            let mut conn = s.accept().unwrap();
            let mut out = Vec::new();
            match conn.receive(&bad, &mut out, &mut Vec::new()) {
                Ok(_) => {}
                // rustls refuses a handshake message longer than it takes before it has
                // an alert queued: no alert, the caller closes the connection.
                Err(Fatal::Protocol(rustls::Error::InvalidMessage(
                    rustls::InvalidMessage::HandshakePayloadTooLarge,
                ))) => assert!(out.is_empty()),
                Err(Fatal::Protocol(_)) => {
                    let (level, _) = alert_encrypted_or_plain(last_record(&out));
                    assert!(level.is_none() || level == Some(2));
                }
                Err(e) => panic!("{e:?}"),
            }
        }
    }
}

#[test]
fn flood_of_partial_input_is_bounded() {
    let s = server(&Options::default());
    let mut conn = s.accept().unwrap();
    let mut out = Vec::new();
    assert_eq!(
        conn.receive(&vec![0x16; MAX_BUFFERED + 1], &mut out, &mut Vec::new()),
        Err(Fatal::TooMuchBuffered)
    );
}

#[test]
fn records_after_the_handshake_that_do_not_decrypt_are_bad_record_mac() {
    let s = server(&Options::default());
    for v in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let mut c = client(&client_config(v, None, None));
        let mut conn = s.accept().unwrap();
        exchange(&mut c, &mut conn);
        // An application-data record of garbage, then a plaintext handshake record (a
        // renegotiating ClientHello sent in the clear).
        for rec in [
            &[
                0x17, 3, 3, 0, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                19, 20,
            ][..],
            &[0x16, 3, 3, 0, 4, 1, 0, 0, 0][..],
        ] {
            let mut conn2 = s.accept().unwrap();
            let mut c2 = client(&client_config(v, None, None));
            exchange(&mut c2, &mut conn2);
            let mut out = Vec::new();
            let e = conn2.receive(rec, &mut out, &mut Vec::new()).unwrap_err();
            assert!(matches!(e, Fatal::Protocol(_)));
            let (level, desc) = alert_encrypted_or_plain(&out);
            assert!(
                level.is_none() || level == Some(2),
                "{v:?} {rec:?}: {level:?} {desc:?} {e:?}"
            );
        }
    }
}

/// The last record of a run of records.
fn last_record(out: &[u8]) -> &[u8] {
    let mut at = 0;
    loop {
        assert!(out.len() >= at + 5, "no record at {at} of {out:?}");
        let next = at + 5 + usize::from(u16::from_be_bytes([out[at + 3], out[at + 4]]));
        if next >= out.len() {
            assert_eq!(next, out.len());
            return &out[at..];
        }
        at = next;
    }
}

/// After the handshake the alert is encrypted: in TLS 1.3 an application-data record, in
/// TLS 1.2 an alert record of 2 + 8 + 16 bytes (explicit nonce and tag, GCM).
fn alert_encrypted_or_plain(out: &[u8]) -> (Option<u8>, Option<u8>) {
    assert!(out.len() >= 5, "no alert record");
    match (out[0], out[3], out[4]) {
        (0x15, 0, 2) => (Some(out[5]), Some(out[6])),
        (0x15, 0, 26) | (0x17, 0, 19) => (None, None),
        t => panic!("record {t:?}"),
    }
}

#[test]
fn application_data_during_the_handshake_is_refused() {
    // Early data without having offered it: an application-data record right after the
    // ClientHello.
    let s = server(&Options::default());
    let mut c = client(&client_config(&rustls::version::TLS13, None, None));
    let mut input = Vec::new();
    c.write_tls(&mut input).unwrap();
    input.extend_from_slice(&[0x17, 3, 3, 0, 17]);
    input.extend_from_slice(&[0xaa; 17]);
    let mut conn = s.accept().unwrap();
    let mut out = Vec::new();
    let r = conn.receive(&input, &mut out, &mut Vec::new());
    assert!(r.is_err(), "{r:?}");
    assert!(!out.is_empty());
}

#[test]
fn bad_configurations_are_refused_with_reasons() {
    let p = platform();
    let o = Options::default();
    let msg = |r: Result<TlsServer, ConfigError>| alloc::format!("{}", r.unwrap_err());
    assert!(msg(TlsServer::new(b"not pem", KEY, &o, &p)).contains("CERTIFICATE"));
    assert!(msg(TlsServer::new(CERT, b"nothing", &o, &p)).contains("private key"));
    let rsa = include_bytes!("../../testdata/rsa.pem");
    assert!(msg(TlsServer::new(CERT, rsa, &o, &p)).contains("RUSTSEC-2023-0071"));
    let other = include_bytes!("../../testdata/key384.pem");
    let m = msg(TlsServer::new(CERT, other, &o, &p));
    assert!(m.contains("does not match"), "{m}");
    // SEC1 and P-384 keys work with their certificates.
    TlsServer::new(CERT, include_bytes!("../../testdata/key-sec1.pem"), &o, &p).unwrap();
    TlsServer::new(include_bytes!("../../testdata/cert384.pem"), other, &o, &p).unwrap();
    let _ = String::new();
}

/// Endless KeyUpdates (TLS 1.3, RFC 8446 §4.6.3), each asking for ours back, thousands of
/// them in one flight and then one at a time: the connection fails after rustls's allowance
/// of 32 with no application data between (BoringSSL's limit), answering each before that
/// with one KeyUpdate of its own; it never loops, and once failed it takes nothing more.
#[test]
fn endless_key_updates_end_the_connection() {
    let s = server(&Options::default());
    let cfg = client_config(&rustls::version::TLS13, None, None);

    // One at a time, the server's answers read by the client.
    let mut c = client(&cfg);
    let mut conn = s.accept().unwrap();
    exchange(&mut c, &mut conn);
    let mut failed_at = None;
    for i in 0..5000 {
        c.refresh_traffic_keys().unwrap();
        let mut wire = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        let mut out = Vec::new();
        match conn.receive(&wire, &mut out, &mut Vec::new()) {
            Ok(p) => {
                assert!(p.established && !p.closed);
                // Our KeyUpdate (update_not_requested), one encrypted record, at once;
                // then a response sealed under our new key, which the client reads.
                assert_eq!(out.len(), 5 + 5 + 1 + 16, "round {i}");
                let mut sealed = vec![0u8; sealed_len(5)];
                let n = conn.encrypt(b"hello", &mut sealed).unwrap();
                out.extend_from_slice(&sealed[..n]);
                let mut rd = &out[..];
                while !rd.is_empty() {
                    c.read_tls(&mut rd).unwrap();
                    c.process_new_packets().unwrap();
                }
                let mut got = [0u8; 5];
                c.reader().read_exact(&mut got).unwrap();
                assert_eq!(&got, b"hello", "round {i}");
            }
            Err(e) => {
                assert_eq!(
                    e,
                    Fatal::Protocol(rustls::Error::PeerMisbehaved(
                        rustls::PeerMisbehaved::TooManyKeyUpdateRequests
                    ))
                );
                failed_at = Some(i);
                break;
            }
        }
    }
    assert_eq!(failed_at, Some(32));
    assert_eq!(
        conn.receive(
            b"\x17\x03\x03\x00\x01\x00",
            &mut Vec::new(),
            &mut Vec::new()
        ),
        Err(Fatal::Done)
    );

    // Application data between them resets the allowance: a client that sends a request
    // between KeyUpdates is served on (and answered: the client has the same allowance).
    let mut c = client(&cfg);
    let mut conn = s.accept().unwrap();
    exchange(&mut c, &mut conn);
    for _ in 0..100 {
        c.refresh_traffic_keys().unwrap();
        c.writer().write_all(b"x").unwrap();
        let mut plain = Vec::new();
        pump(&mut c, &mut conn, &mut plain, 4096).unwrap();
        assert_eq!(plain, b"x");
        let mut sealed = vec![0u8; sealed_len(1)];
        let n = conn.encrypt(b"y", &mut sealed).unwrap();
        let mut rd = &sealed[..n];
        c.read_tls(&mut rd).unwrap();
        c.process_new_packets().unwrap();
        let mut got = [0u8; 1];
        c.reader().read_exact(&mut got).unwrap();
        assert_eq!(&got, b"y");
    }

    // Five thousand in one flight: one call, the failure after the 32nd.
    let mut c = client(&cfg);
    let mut conn = s.accept().unwrap();
    exchange(&mut c, &mut conn);
    let mut wire = Vec::new();
    for _ in 0..5000 {
        c.refresh_traffic_keys().unwrap();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
    }
    let mut out = Vec::new();
    let e = conn
        .receive(&wire[..MAX_BUFFERED], &mut out, &mut Vec::new())
        .unwrap_err();
    assert_eq!(
        e,
        Fatal::Protocol(rustls::Error::PeerMisbehaved(
            rustls::PeerMisbehaved::TooManyKeyUpdateRequests
        ))
    );
    assert!(out.len() <= 32 * (5 + 5 + 1 + 16) + 64, "{}", out.len());
}

/// A renewed certificate ([`TlsServer::with_certificate`] into a [`ServerSlot`]): a
/// connection accepted before the replacement finishes its handshake on the old
/// certificate, one accepted after gets the new; a ticket issued before still resumes
/// (the ticket keys are kept); a key that does not match is refused and the slot keeps
/// what it had.
#[test]
fn a_renewed_certificate_serves_new_connections_only() {
    let cert384: &[u8] = include_bytes!("../../testdata/cert384.pem");
    let key384: &[u8] = include_bytes!("../../testdata/key384.pem");
    let leaf = |pem: &[u8]| CertificateDer::from_pem_slice(pem).unwrap();
    let slot = ServerSlot::new(server(&Options::default()));
    let cfg = client_config(&rustls::version::TLS13, None, None);
    let mut first = client(&cfg);
    let mut first_conn = slot.accept().unwrap();
    exchange(&mut first, &mut first_conn);
    let mut before = client(&cfg);
    let mut before_conn = slot.accept().unwrap();

    let refused = slot.current().with_certificate(cert384, KEY).unwrap_err();
    assert!(
        alloc::format!("{refused}").contains("does not match"),
        "{refused}"
    );
    slot.replace(slot.current().with_certificate(cert384, key384).unwrap());

    exchange(&mut before, &mut before_conn);
    assert_eq!(before.peer_certificates().unwrap()[0], leaf(CERT));
    let fresh = client_config(&rustls::version::TLS13, None, None);
    let mut after = client(&fresh);
    let mut after_conn = slot.accept().unwrap();
    exchange(&mut after, &mut after_conn);
    assert_eq!(after.handshake_kind(), Some(HandshakeKind::Full));
    assert_eq!(after.peer_certificates().unwrap()[0], leaf(cert384));
    let mut again = client(&cfg);
    let mut again_conn = slot.accept().unwrap();
    exchange(&mut again, &mut again_conn);
    assert_eq!(again.handshake_kind(), Some(HandshakeKind::Resumed));
}

#[test]
fn a_slot_says_whether_it_holds_a_certificate_as_it_is_replaced() {
    let p = platform();
    let waiting = TlsServer::awaiting_certificate(&Options::default(), &p).unwrap();
    let slot = ServerSlot::new(waiting.clone());
    assert!(!slot.has_certificate());
    slot.replace(waiting.with_certificate(CERT, KEY).unwrap());
    assert!(slot.has_certificate());
    slot.replace(waiting);
    assert!(!slot.has_certificate());
}
