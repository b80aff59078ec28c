//! The record layer after the handshake, at its own level: a real handshake with a rustls
//! client, then the client's traffic keys taken from it (`dangerous_extract_secrets`) so
//! that the test seals records of any type and content as the client would, and opens the
//! server's answers. Each case: what the peer sends in, what the server sends back and
//! whether the connection goes on.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use rustls::{AlertDescription, ClientConfig, SupportedProtocolVersion};

use super::super::tests::{client, client_config, exchange, server};
use super::*;
use crate::server::{Fatal, Options, TlsConn};

/// The client's side once established: its keys, sequence numbers and version.
struct Peer {
    tx: RecordKey,
    tx_seq: u64,
    rx: RecordKey,
    rx_seq: u64,
    tls13: bool,
}

impl Peer {
    /// Seals one record of `typ` holding `plain`, as the client.
    fn record(&mut self, typ: u8, plain: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; plain.len() + RECORD_OVERHEAD];
        let n = seal_record(&self.tx, self.tx_seq, self.tls13, typ, &[plain], &mut out).unwrap();
        self.tx_seq += 1;
        out.truncate(n);
        out
    }

    /// Opens every record the server sent: (type, plaintext) each.
    fn read(&mut self, mut out: &mut [u8]) -> Vec<(u8, Vec<u8>)> {
        let mut got = Vec::new();
        while !out.is_empty() {
            let len = 5 + usize::from(u16::from_be_bytes([out[3], out[4]]));
            let (rec, rest) = out.split_at_mut(len);
            let (t, p) = open_record(&self.rx, self.rx_seq, self.tls13, rec).unwrap();
            self.rx_seq += 1;
            got.push((t, p.to_vec()));
            out = rest;
        }
        got
    }
}

/// A server connection and the client's keys, after a handshake and one response.
fn established(version: &'static SupportedProtocolVersion) -> (TlsConn, Peer) {
    let cfg = client_config(version, None, None);
    let mut cfg = ClientConfig::clone(&cfg);
    cfg.enable_secret_extraction = true;
    let mut c = client(&Arc::new(cfg));
    let mut conn = server(&Options::default()).accept().unwrap();
    exchange(&mut c, &mut conn);
    let secrets = c.dangerous_extract_secrets().unwrap();
    let peer = Peer {
        tx: RecordKey::new(&secrets.tx.1).unwrap(),
        tx_seq: secrets.tx.0,
        rx: RecordKey::new(&secrets.rx.1).unwrap(),
        rx_seq: secrets.rx.0,
        tls13: version == &rustls::version::TLS13,
    };
    (conn, peer)
}

const BOTH: [&SupportedProtocolVersion; 2] = [&rustls::version::TLS13, &rustls::version::TLS12];

fn alert(level: u8, desc: AlertDescription) -> (u8, Vec<u8>) {
    (CT_ALERT, vec![level, desc.into()])
}

#[test]
fn application_data_in_and_out() {
    for v in BOTH {
        let (mut conn, mut peer) = established(v);
        // Two records in one input, the second split across two calls.
        let mut wire = peer.record(CT_APP_DATA, b"GET / HTTP/1.1\r\n");
        wire.extend(peer.record(CT_APP_DATA, b"\r\n"));
        let (mut out, mut plain) = (Vec::new(), Vec::new());
        let cut = wire.len() - 3;
        conn.receive(&wire[..cut], &mut out, &mut plain).unwrap();
        assert_eq!(plain, b"GET / HTTP/1.1\r\n");
        conn.receive(&wire[cut..], &mut out, &mut plain).unwrap();
        assert_eq!(plain, b"GET / HTTP/1.1\r\n\r\n");
        assert!(out.is_empty());
        // A record from parts, read by the client.
        let mut rec = vec![0u8; 12 + RECORD_OVERHEAD];
        let n = conn
            .encrypt_parts(&[b"HTTP", b"/1.1 ", b"200"], &mut rec)
            .unwrap();
        assert_eq!(
            peer.read(&mut rec[..n]),
            [(CT_APP_DATA, b"HTTP/1.1 200".to_vec())]
        );
        // A short buffer is refused with the size needed.
        assert_eq!(
            conn.encrypt_parts(&[b"abc"], &mut [0u8; 8]),
            Err(SealError::TooSmall(
                5 + 3 + if peer.tls13 { 17 } else { 24 }
            ))
        );
    }
}

#[test]
fn tls13_padding_is_removed_and_an_empty_inner_type_is_refused() {
    let (mut conn, mut peer) = established(&rustls::version::TLS13);
    let mut padded = b"x".to_vec();
    padded.push(CT_APP_DATA);
    padded.extend([0u8; 300]);
    // Sealed as inner type 0 over "x", 23, zeros: the last non-zero byte is the type.
    let rec = peer.record(0, &padded[..padded.len() - 1]);
    let mut plain = Vec::new();
    conn.receive(&rec, &mut Vec::new(), &mut plain).unwrap();
    assert_eq!(plain, b"x");
    // All zeros: no content type.
    let rec = peer.record(0, &[0; 10]);
    let mut out = Vec::new();
    let e = conn.receive(&rec, &mut out, &mut Vec::new()).unwrap_err();
    assert!(matches!(
        e,
        Fatal::Protocol(Error::InappropriateMessage { .. })
    ));
    assert_eq!(
        peer.read(&mut out),
        [alert(2, AlertDescription::UnexpectedMessage)]
    );
}

#[test]
fn alerts_after_the_handshake() {
    for v in BOTH {
        // close_notify: the peer is done; what follows it is not read.
        let (mut conn, mut peer) = established(v);
        let mut wire = peer.record(CT_ALERT, &[1, 0]);
        wire.extend(peer.record(CT_APP_DATA, b"late"));
        let mut plain = Vec::new();
        let p = conn.receive(&wire, &mut Vec::new(), &mut plain).unwrap();
        assert!(p.peer_closed && plain.is_empty());
        // Our close_notify after it: closed.
        let mut out = [0u8; 64];
        let n = conn.close(&mut out).unwrap();
        assert_eq!(
            peer.read(&mut out[..n]),
            [alert(1, AlertDescription::CloseNotify)]
        );
        assert!(
            conn.receive(&[], &mut Vec::new(), &mut plain)
                .unwrap()
                .closed
        );

        // A fatal alert: the connection fails, nothing is sent back.
        let (mut conn, mut peer) = established(v);
        let mut out = Vec::new();
        let e = conn
            .receive(&peer.record(CT_ALERT, &[2, 40]), &mut out, &mut Vec::new())
            .unwrap_err();
        assert_eq!(
            e,
            Fatal::Protocol(Error::AlertReceived(AlertDescription::HandshakeFailure))
        );
        assert!(out.is_empty());

        // A malformed alert (three bytes): decode_error.
        let (mut conn, mut peer) = established(v);
        let mut out = Vec::new();
        conn.receive(
            &peer.record(CT_ALERT, &[1, 0, 0]),
            &mut out,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(
            peer.read(&mut out),
            [alert(2, AlertDescription::DecodeError)]
        );
    }

    // Warnings: TLS 1.2 takes four, the fifth is fatal.
    let (mut conn, mut peer) = established(&rustls::version::TLS12);
    for i in 0..5 {
        let mut out = Vec::new();
        let r = conn.receive(&peer.record(CT_ALERT, &[1, 90]), &mut out, &mut Vec::new());
        if i < 4 {
            assert!(r.is_ok() && out.is_empty(), "warning {i}");
        } else {
            assert_eq!(
                r,
                Err(Fatal::Protocol(
                    PeerMisbehaved::TooManyWarningAlertsReceived.into()
                ))
            );
            assert_eq!(
                peer.read(&mut out),
                [alert(2, AlertDescription::UnexpectedMessage)]
            );
        }
    }
    // TLS 1.3 outlaws warnings but user_canceled.
    let (mut conn, mut peer) = established(&rustls::version::TLS13);
    conn.receive(
        &peer.record(CT_ALERT, &[1, 90]),
        &mut Vec::new(),
        &mut Vec::new(),
    )
    .unwrap();
    let mut out = Vec::new();
    conn.receive(&peer.record(CT_ALERT, &[1, 40]), &mut out, &mut Vec::new())
        .unwrap_err();
    assert_eq!(
        peer.read(&mut out),
        [alert(2, AlertDescription::DecodeError)]
    );
}

#[test]
fn tls12_renegotiation_is_refused() {
    let (mut conn, mut peer) = established(&rustls::version::TLS12);
    let hello = [HS_CLIENT_HELLO, 0, 0, 4, 3, 3, 0, 0];
    let mut out = Vec::new();
    let mut plain = Vec::new();
    conn.receive(&peer.record(CT_HANDSHAKE, &hello), &mut out, &mut plain)
        .unwrap();
    assert_eq!(
        peer.read(&mut out),
        [alert(1, AlertDescription::NoRenegotiation)]
    );
    // Still serving.
    conn.receive(
        &peer.record(CT_APP_DATA, b"ok"),
        &mut Vec::new(),
        &mut plain,
    )
    .unwrap();
    assert_eq!(plain, b"ok");
    // The second: fatal.
    let mut out = Vec::new();
    let e = conn
        .receive(
            &peer.record(CT_HANDSHAKE, &hello),
            &mut out,
            &mut Vec::new(),
        )
        .unwrap_err();
    assert_eq!(
        e,
        Fatal::Protocol(PeerMisbehaved::TooManyRenegotiationRequests.into())
    );
    assert_eq!(
        peer.read(&mut out),
        [alert(2, AlertDescription::NoRenegotiation)]
    );
}

#[test]
fn unexpected_records_and_messages_are_fatal() {
    for v in BOTH {
        let tls13 = v == &rustls::version::TLS13;
        let cases: [(u8, &[u8]); 4] = [
            // A handshake message cut short (a KeyUpdate's header without its byte).
            (CT_HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1]),
            // Two messages in one record.
            (
                CT_HANDSHAKE,
                &[HS_KEY_UPDATE, 0, 0, 1, 0, HS_KEY_UPDATE, 0, 0, 1, 0],
            ),
            // A message of a type never taken after the handshake (Finished).
            (CT_HANDSHAKE, &[20, 0, 0, 1, 0]),
            // A protected change_cipher_spec (TLS 1.3's inner type 20; TLS 1.2's outer).
            (20, &[1]),
        ];
        for (typ, body) in cases {
            let (mut conn, mut peer) = established(v);
            let mut out = Vec::new();
            let e = conn
                .receive(&peer.record(typ, body), &mut out, &mut Vec::new())
                .unwrap_err();
            assert!(matches!(e, Fatal::Protocol(_)), "{v:?} {typ} {body:?}");
            assert_eq!(
                peer.read(&mut out),
                [alert(2, AlertDescription::UnexpectedMessage)],
                "{v:?} {typ} {body:?}"
            );
            // Failed: nothing more is taken.
            assert_eq!(
                conn.receive(&peer.record(CT_APP_DATA, b"x"), &mut out, &mut Vec::new()),
                Err(Fatal::Done)
            );
        }
        // A TLS 1.3 plaintext inner content longer than 2^14: record_overflow.
        if tls13 {
            let (mut conn, mut peer) = established(v);
            let mut body = vec![b'a'; MAX_RECORD_PLAINTEXT + 1];
            body.push(CT_APP_DATA);
            let len = body.len() + TAG_LEN;
            let head = [CT_APP_DATA, 3, 3, (len >> 8) as u8, len as u8];
            let tag = peer
                .tx
                .seal(&peer.tx.nonce(peer.tx_seq), &head, &mut body)
                .unwrap();
            let mut rec = head.to_vec();
            rec.extend(body);
            rec.extend(tag);
            let mut out = Vec::new();
            let e = conn.receive(&rec, &mut out, &mut Vec::new()).unwrap_err();
            assert_eq!(e, Fatal::Protocol(Error::PeerSentOversizedRecord));
            assert_eq!(
                peer.read(&mut out),
                [alert(2, AlertDescription::RecordOverflow)]
            );
        }
    }
}

#[test]
fn at_the_record_limit_tls13_updates_its_key_and_tls12_stops() {
    let (mut conn, mut peer) = established(&rustls::version::TLS13);
    conn.records.as_mut().unwrap().tx.seq = SEQ_LIMIT;
    peer.rx_seq = SEQ_LIMIT;
    let mut out = vec![0u8; 2 * (5 + RECORD_OVERHEAD) + 5];
    let n = conn.encrypt_parts(&[b"hello"], &mut out).unwrap();
    let out = &mut out[..n];
    // First our KeyUpdate under the old key (update_not_requested)...
    let first = 5 + usize::from(u16::from_be_bytes([out[3], out[4]]));
    assert_eq!(
        peer.read(&mut out[..first]),
        [(CT_HANDSHAKE, vec![HS_KEY_UPDATE, 0, 0, 1, 0])]
    );
    // ...then the record under the next key, from sequence number 0: not the old key's.
    let rest = &mut out[first..];
    assert_eq!(rest.len(), 5 + 5 + 1 + TAG_LEN);
    assert!(open_record(&peer.rx, SEQ_LIMIT + 1, true, &mut rest.to_vec()).is_err());
    assert!(open_record(&peer.rx, 0, true, rest).is_err());
    assert_eq!(conn.records.as_ref().unwrap().tx.seq, 1);

    let (mut conn, _) = established(&rustls::version::TLS12);
    conn.records.as_mut().unwrap().tx.seq = SEQ_LIMIT;
    assert_eq!(
        conn.encrypt_parts(&[b"hello"], &mut [0u8; 64]),
        Err(SealError::Exhausted)
    );
}

#[test]
fn key_update_requests_are_answered_once_per_response_and_bad_values_refused() {
    let (mut conn, _) = established(&rustls::version::TLS13);
    let r = conn.records.as_mut().unwrap();
    // Three requests before any response (each as the record layer takes it once opened:
    // the peer's later records would be under its next keys, which this test lacks): one
    // KeyUpdate back, and no key kept, since no record was reserved under it.
    let mut out = Vec::new();
    for _ in 0..3 {
        r.handshake([HS_KEY_UPDATE, 0, 0, 1, 1], 5, &mut out)
            .unwrap();
    }
    assert_eq!(
        out.len(),
        5 + 5 + 1 + TAG_LEN,
        "one KeyUpdate answers all three"
    );
    assert_eq!((r.epoch, r.old_tx.len()), (1, 0));
    // A record reserved, then a request: answered again, and the reserved record's key
    // kept until released.
    r.reserve(10, &mut Vec::new()).unwrap();
    let mut out = Vec::new();
    r.handshake([HS_KEY_UPDATE, 0, 0, 1, 1], 5, &mut out)
        .unwrap();
    assert_eq!(out.len(), 5 + 5 + 1 + TAG_LEN);
    assert_eq!((r.epoch, r.old_tx.len()), (2, 1));
    r.release_before(2);
    assert!(r.old_tx.is_empty());

    // request_update 2: illegal_parameter.
    let (mut conn, mut peer) = established(&rustls::version::TLS13);
    let mut out = Vec::new();
    let e = conn
        .receive(
            &peer.record(CT_HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1, 2]),
            &mut out,
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(
        matches!(e, Fatal::Protocol(Error::InvalidMessage(_))),
        "{e:?}"
    );
    assert_eq!(
        peer.read(&mut out),
        [alert(2, AlertDescription::IllegalParameter)]
    );
}

/// Decodes hex, spaces ignored.
fn unhex(s: &str) -> Vec<u8> {
    let s: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    s.chunks(2)
        .map(|p| u8::from_str_radix(core::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// An AES-128-GCM record key from the trace's key and IV.
fn trace_key(key: &str, iv: &str) -> RecordKey {
    let mut k = [0u8; 32];
    k[..16].copy_from_slice(&unhex(key));
    let iv: [u8; 12] = unhex(iv).try_into().unwrap();
    RecordKey::new(&rustls::ConnectionTrafficSecrets::Aes128Gcm {
        key: rustls::crypto::cipher::AeadKey::from(k),
        iv: rustls::crypto::cipher::Iv::new(iv),
    })
    .unwrap()
}

/// RFC 8448 §3 (the simple 1-RTT handshake, TLS_AES_128_GCM_SHA256): the application
/// traffic keys and the records sealed under them, byte for byte. The server's first
/// record under its key is the NewSessionTicket (sequence number 0), its application data
/// the second; the client's application data is its first, its close_notify the second.
#[test]
fn rfc8448_application_records() {
    let server = trace_key(
        "9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56",
        "cf 78 2b 88 dd 83 54 9a ad f1 e9 84",
    );
    let client = trace_key(
        "17 42 2d da 59 6e d5 d9 ac d8 90 e3 c6 3f 50 51",
        "5b 78 92 3d ee 08 57 90 33 e5 23 d9",
    );
    let payload: Vec<u8> = (0u8..50).collect();

    // {server} send application_data record.
    let want = unhex(
        "17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4 a4 69 32 fc
         32 25 d0 5f 82 aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8
         fc c4 9c 4b f2 e5 f0 a2 1c 00 47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d",
    );
    let mut out = vec![0u8; 100];
    // From two parts, as the engine seals a head and a body.
    let n = seal_record(
        &server,
        1,
        true,
        CT_APP_DATA,
        &[&payload[..7], &payload[7..]],
        &mut out,
    )
    .unwrap();
    assert_eq!(out[..n], want[..]);

    // {client} send application_data record, then its close_notify.
    let mut rec = unhex(
        "17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef ac ea
         42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b
         62 97 4e 1f 5a 62 92 a2 97 70 14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4",
    );
    let (t, p) = open_record(&client, 0, true, &mut rec).unwrap();
    assert_eq!((t, p), (CT_APP_DATA, &payload[..]));
    let mut alert =
        unhex("17 03 03 00 13 c9 87 27 60 65 56 66 b7 4d 7f f1 15 3e fd 6d b6 d0 b0 e3");
    let good = alert.clone();
    let (t, p) = open_record(&client, 1, true, &mut alert).unwrap();
    assert_eq!((t, p), (CT_ALERT, &[1u8, 0][..]));
    // Under another sequence number, or with a bit flipped, it does not open.
    assert!(open_record(&client, 2, true, &mut good.clone()).is_err());
    let mut bad = good;
    bad[10] ^= 1;
    assert!(open_record(&client, 1, true, &mut bad).is_err());
}

/// A record sealed a range at a time (a segment each), in order, is the record
/// `seal_record` makes, byte for byte, with its tag made by the range that reaches it;
/// ranges sent again afterwards, in any order, are the same bytes; a range that reaches
/// the tag before the ciphertext before it was sealed is refused (`Whole`). AES-GCM and
/// ChaCha20-Poly1305, both versions, segment sizes from 1 byte to past the record.
#[test]
fn records_sealed_in_ranges_are_the_records_sealed_whole() {
    let key = trace_key(
        "9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56",
        "cf 78 2b 88 dd 83 54 9a ad f1 e9 84",
    );
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n";
    let body: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let parts: [&[u8]; 2] = [head, &body];
    // Bytes `from..from + out.len()` of record 9 under `key`, alone.
    let range = |key: &RecordKey, tls13, from, out: &mut [u8], mac: &mut _, tag: &mut _| {
        seal_record_range(key, 9, tls13, CT_APP_DATA, &parts, from, out, mac, tag)
    };
    let chacha = RecordKey::new(&rustls::ConnectionTrafficSecrets::Chacha20Poly1305 {
        key: rustls::crypto::cipher::AeadKey::from([7u8; 32]),
        iv: rustls::crypto::cipher::Iv::new([1u8; 12]),
    })
    .unwrap();
    // ChaCha20 everywhere; AES-GCM ranges need the assembly (a CPU with AES-NI).
    let aes = crate::provider::aesni::available();
    let keys = [
        (&key, true),
        (&key, false),
        (&chacha, true),
        (&chacha, false),
    ];
    for (key, tls13) in keys
        .into_iter()
        .filter(|(k, _)| aes || k.alg() == Alg::ChaCha20Poly1305)
    {
        let mut whole = vec![0u8; 6000];
        let n = seal_record(key, 9, tls13, CT_APP_DATA, &parts, &mut whole).unwrap();
        whole.truncate(n);
        for seg in [1usize, 5, 13, 16, 100, 1448, 4096, n] {
            let (mut mac, mut tag) = (None, None);
            let mut got = Vec::new();
            for from in (0..n).step_by(seg) {
                let mut out = vec![0u8; seg.min(n - from)];
                range(key, tls13, from, &mut out, &mut mac, &mut tag).unwrap();
                got.extend_from_slice(&out);
            }
            assert_eq!(got, whole, "tls13 {tls13} segment {seg}");
            assert_eq!(tag.unwrap()[..], whole[n - TAG_LEN..]);
            assert!(mac.is_none());
            // Sent again, last first: the tag is kept, nothing more is absorbed.
            for from in (0..n).step_by(seg).rev() {
                let mut out = vec![0u8; seg.min(n - from)];
                range(key, tls13, from, &mut out, &mut mac, &mut tag).unwrap();
                assert_eq!(out, whole[from..from + out.len()]);
            }
        }
        // The last segment first: its ciphertext can be made, its tag cannot.
        let (mut mac, mut tag) = (None, None);
        let mut out = vec![0u8; 1448];
        let r = range(key, tls13, n - 1448, &mut out, &mut mac, &mut tag);
        assert_eq!(r, Err(SealError::Whole));
        // A gap (a range skipped) leaves the MAC behind: the tag is refused, not wrong.
        let (mut mac, mut tag) = (None, None);
        for from in [0, 2000, n - 100] {
            let mut out = vec![0u8; 100];
            let r = range(key, tls13, from, &mut out, &mut mac, &mut tag);
            if from == n - 100 {
                assert_eq!(r, Err(SealError::Whole));
            } else {
                r.unwrap();
                assert_eq!(out, whole[from..from + 100]);
            }
        }
        // Past the record's end.
        let r = range(key, tls13, n - 1, &mut [0u8; 2], &mut None, &mut None);
        assert_eq!(r, Err(SealError::TooSmall(n)));
    }
}
