//! TLS microbenchmarks: sealing 16 KiB application-data records (AES-128-GCM,
//! AES-256-GCM, ChaCha20-Poly1305, through the provider's TLS 1.3 record layer, the path
//! every response byte takes) and whole handshakes per second (a rustls client with this
//! crate's provider, in memory, against the server driver): TLS 1.3 full with X25519 and
//! with P-256, TLS 1.2 full, and TLS 1.3 resumed with a ticket.
//!
//! `cargo bench -p bareweb-tls`. Throughput is per core (one thread).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bareweb_tls::provider::aead::Alg;
use bareweb_tls::rustls::client::ClientConnection;
use bareweb_tls::rustls::crypto::cipher::{AeadKey, Iv, OutboundPlainMessage, Tls13AeadAlgorithm};
use bareweb_tls::rustls::pki_types::pem::PemObject;
use bareweb_tls::rustls::pki_types::CertificateDer;
use bareweb_tls::rustls::{
    ClientConfig, ContentType, HandshakeKind, NamedGroup, ProtocolVersion, RootCertStore,
    SupportedProtocolVersion,
};
use bareweb_tls::testing::TestRandom;
use bareweb_tls::{host, Options, TlsConn, TlsServer};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn seal(c: &mut Criterion) {
    let mut g = c.benchmark_group("seal_16k_record");
    let record = vec![0x5au8; 16384];
    g.throughput(Throughput::Bytes(record.len() as u64));
    for (name, alg) in [
        ("aes128gcm", Alg::Aes128Gcm),
        ("aes256gcm", Alg::Aes256Gcm),
        ("chacha20poly1305", Alg::ChaCha20Poly1305),
    ] {
        let mut enc = Tls13AeadAlgorithm::encrypter(&alg, AeadKey::from([7; 32]), Iv::new([1; 12]));
        let mut seq = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                seq += 1;
                let m = OutboundPlainMessage {
                    typ: ContentType::ApplicationData,
                    version: ProtocolVersion::TLSv1_2,
                    payload: record.as_slice().into(),
                };
                std::hint::black_box(enc.encrypt(m, seq).unwrap());
            })
        });
    }
    g.finish();
}

static CLIENT_RNG: TestRandom = TestRandom::new(3);

fn client_config(
    version: &'static SupportedProtocolVersion,
    group: NamedGroup,
) -> Arc<ClientConfig> {
    let mut provider = bareweb_tls::provider::provider(&CLIENT_RNG);
    provider.kx_groups.retain(|k| k.name() == group);
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(include_bytes!("../testdata/ca.pem")).unwrap())
        .unwrap();
    Arc::new(
        ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// One handshake to completion, in memory; returns how it went and the time spent in the
/// server's side alone.
fn handshake(server: &TlsServer, cfg: &Arc<ClientConfig>) -> (Option<HandshakeKind>, Duration) {
    let mut server_time = Duration::ZERO;
    let mut c = ClientConnection::new(cfg.clone(), "localhost".try_into().unwrap()).unwrap();
    let mut s: TlsConn = server.accept().unwrap();
    let (mut c2s, mut s2c, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    c.writer().write_all(b"x").unwrap();
    for _ in 0..10 {
        c2s.clear();
        while c.wants_write() {
            c.write_tls(&mut c2s).unwrap();
        }
        s2c.clear();
        let t = Instant::now();
        let p = s.receive(&c2s, &mut s2c, &mut plain).unwrap();
        server_time += t.elapsed();
        let mut rd = &s2c[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
            c.process_new_packets().unwrap();
        }
        if p.established && !plain.is_empty() && !c.is_handshaking() && !c.wants_write() {
            break;
        }
    }
    (c.handshake_kind(), server_time)
}

fn handshakes(c: &mut Criterion) {
    let read = |f: &str| {
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/").to_owned() + f).unwrap()
    };
    let no_tickets = TlsServer::new(
        &read("cert.pem"),
        &read("key.pem"),
        &Options {
            tickets: false,
            ..Options::default()
        },
        &host::platform(),
    )
    .unwrap();
    let tickets = TlsServer::new(
        &read("cert.pem"),
        &read("key.pem"),
        &Options::default(),
        &host::platform(),
    )
    .unwrap();
    let mut g = c.benchmark_group("handshake");
    g.throughput(Throughput::Elements(1));
    g.sample_size(30);
    let cases = [
        (
            "tls13_x25519",
            &bareweb_tls::rustls::version::TLS13,
            NamedGroup::X25519,
        ),
        (
            "tls13_p256",
            &bareweb_tls::rustls::version::TLS13,
            NamedGroup::secp256r1,
        ),
        (
            "tls12_x25519",
            &bareweb_tls::rustls::version::TLS12,
            NamedGroup::X25519,
        ),
    ];
    for (name, version, group) in cases {
        let cfg = client_config(version, group);
        // Both sides: what one core does for a client and a server.
        g.bench_function(format!("{name}_full_pair"), |b| {
            b.iter(|| assert_eq!(handshake(&no_tickets, &cfg).0, Some(HandshakeKind::Full)))
        });
        // The server's side alone (its receive calls timed): handshakes per second per
        // server core.
        g.bench_function(format!("{name}_full_server"), |b| {
            b.iter_custom(|n| {
                (0..n)
                    .map(|_| {
                        let (kind, t) = handshake(&no_tickets, &cfg);
                        assert_eq!(kind, Some(HandshakeKind::Full));
                        t
                    })
                    .sum()
            })
        });
    }
    let cfg = client_config(&bareweb_tls::rustls::version::TLS13, NamedGroup::X25519);
    handshake(&tickets, &cfg);
    // Each resumption uses up the ticket it was given and brings a new one.
    g.bench_function("tls13_x25519_resumed_server", |b| {
        b.iter_custom(|n| {
            (0..n)
                .map(|_| {
                    let (kind, t) = handshake(&tickets, &cfg);
                    assert_eq!(kind, Some(HandshakeKind::Resumed));
                    t
                })
                .sum()
        })
    });
    g.finish();
}

criterion_group!(benches, seal, handshakes);
criterion_main!(benches);
