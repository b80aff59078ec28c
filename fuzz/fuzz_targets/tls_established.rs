//! The record layer after the handshake (crates/tls/src/server/records.rs) with records a
//! real client could send: a rustls client completes a handshake (TLS 1.3 or 1.2 by the
//! first input byte's bit 0), its traffic keys are taken from it, and the rest of the input
//! is a list of steps, each a record *sealed with the client's key* (so that it opens, and
//! the fuzzer reaches what lies inside: alerts, handshake messages, KeyUpdates, padding) or
//! raw bytes, fed whole or cut. Checks: no panic; what the server sends is whole TLS
//! records; after a failure every call fails; while only sealed records were sent and
//! nothing failed, the plaintext the server read is exactly the application data sent.
#![no_main]

use std::io::Write;
use std::sync::{Arc, OnceLock};

use bareweb_tls::provider::aead::RecordKey;
use bareweb_tls::server::{seal_record, CT_APP_DATA, RECORD_OVERHEAD};
use bareweb_tls::testing::{FixedTime, TestRandom};
use bareweb_tls::{Fatal, Options, Platform, TlsServer};
use libfuzzer_sys::fuzz_target;
use rustls::client::ClientConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

static SERVER_RNG: TestRandom = TestRandom::new(5);
static CLIENT_RNG: TestRandom = TestRandom::new(6);

fn server() -> &'static TlsServer {
    static S: OnceLock<TlsServer> = OnceLock::new();
    S.get_or_init(|| {
        let platform = Platform {
            random: &SERVER_RNG,
            time: Arc::new(FixedTime::new(1_800_000_000)),
        };
        TlsServer::new(
            include_bytes!("../../crates/tls/testdata/cert.pem"),
            include_bytes!("../../crates/tls/testdata/key.pem"),
            &Options::default(),
            &platform,
        )
        .unwrap()
    })
}

/// The client's configuration per version, made once (the provider is kept for the
/// program's life).
fn client(tls13: bool) -> ClientConnection {
    static CFG: OnceLock<[Arc<ClientConfig>; 2]> = OnceLock::new();
    let cfgs = CFG.get_or_init(|| {
        let mut roots = RootCertStore::empty();
        roots
            .add(
                CertificateDer::from_pem_slice(include_bytes!("../../crates/tls/testdata/ca.pem"))
                    .unwrap(),
            )
            .unwrap();
        let provider = Arc::new(bareweb_tls::provider::provider(&CLIENT_RNG));
        [&rustls::version::TLS12, &rustls::version::TLS13].map(|version| {
            let mut cfg = ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&[version])
                .unwrap()
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            cfg.enable_secret_extraction = true;
            Arc::new(cfg)
        })
    });
    let cfg = cfgs[usize::from(tls13)].clone();
    ClientConnection::new(cfg, "localhost".try_into().unwrap()).unwrap()
}

/// Every byte of `out` is whole TLS records of the known content types.
fn records(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        assert!(out.len() >= at + 5);
        assert!(matches!(out[at], 20..=23), "content type {}", out[at]);
        at += 5 + usize::from(u16::from_be_bytes([out[at + 3], out[at + 4]]));
    }
    assert_eq!(at, out.len());
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, mut steps)) = data.split_first() else {
        return;
    };
    let tls13 = first & 1 == 1;
    let mut c = client(tls13);
    let mut conn = server().accept().unwrap();
    // The handshake, whole flights each way.
    for _ in 0..16 {
        let mut wire = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        if wire.is_empty() && !c.is_handshaking() {
            break;
        }
        let mut out = Vec::new();
        conn.receive(&wire, &mut out, &mut Vec::new()).unwrap();
        let mut rd = &out[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
            c.process_new_packets().unwrap();
        }
    }
    assert!(!c.is_handshaking());
    c.writer().flush().unwrap();
    let secrets = c.dangerous_extract_secrets().unwrap();
    let key = RecordKey::new(&secrets.tx.1).unwrap();
    let mut seq = secrets.tx.0;

    let (mut failed, mut raw, mut closed) = (false, false, false);
    let (mut sent, mut got) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    // Step: [kind, type, len_hi, len_lo, bytes...]: kind bit 0 raw, bit 1 cut in two.
    while let [kind, typ, hi, lo, rest @ ..] = steps {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])) % 20_000;
        let (body, next) = rest.split_at(len.min(rest.len()));
        steps = next;
        let wire = if kind & 1 == 1 {
            raw = true;
            body.to_vec()
        } else {
            let body = &body[..body.len().min(16_384)];
            let mut rec = vec![0u8; body.len() + RECORD_OVERHEAD];
            let n = seal_record(&key, seq, tls13, *typ, &[body], &mut rec).unwrap();
            rec.truncate(n);
            seq += 1;
            // What the server will see: in TLS 1.3 the type is the last non-zero byte of
            // the body and the type sealed (zeros after it are padding).
            let (t, content) = if tls13 {
                if *typ != 0 {
                    (*typ, body)
                } else {
                    match body.iter().rposition(|&b| b != 0) {
                        Some(end) => (body[end], &body[..end]),
                        None => (0, &body[..0]),
                    }
                }
            } else {
                (*typ, body)
            };
            if t == CT_APP_DATA && !closed {
                sent.extend_from_slice(content);
            }
            // A close_notify ends what the server reads.
            closed |= t == 21 && content.len() == 2 && content[1] == 0;
            rec
        };
        let cut = if kind & 2 == 2 { wire.len() / 2 } else { wire.len() };
        for piece in [&wire[..cut], &wire[cut..]] {
            out.clear();
            let r = conn.receive(piece, &mut out, &mut got);
            records(&out);
            match r {
                Ok(_) => assert!(!failed, "a call after a failure succeeded"),
                Err(Fatal::Done) => assert!(failed || closed),
                Err(_) => failed = true,
            }
        }
        // The server seals a response now and then (after a KeyUpdate, under its new key).
        if kind & 4 == 4 && !failed {
            let mut rec = vec![0u8; body.len().min(16_384) + 2 * RECORD_OVERHEAD + 5];
            if let Ok(n) = conn.encrypt_parts(&[&body[..body.len().min(16_384)]], &mut rec) {
                records(&rec[..n]);
            }
        }
    }
    if !raw && !failed {
        assert_eq!(got, sent, "the plaintext read is the application data sent");
    }
});
