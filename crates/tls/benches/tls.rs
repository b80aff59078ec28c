//! TLS microbenchmarks: sealing 16 KiB application-data records (AES-128-GCM,
//! AES-256-GCM, ChaCha20-Poly1305, through the provider's TLS 1.3 record layer, the path
//! every response byte takes), AES-GCM alone on each of its two paths (the AES-NI assembly and
//! the `aes-gcm` crate) for one 16 KiB record and for 1 MiB as 64 records, with TSC cycles per
//! byte printed for the latter, and whole handshakes per second (a rustls client with this
//! crate's provider, in memory, against the server driver): TLS 1.3 full with X25519 and
//! with P-256, TLS 1.2 full, and TLS 1.3 resumed with a ticket.
//!
//! `cargo bench -p bareweb-tls`. Throughput is per core (one thread).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use bareweb_tls::provider::aead::{Alg, Gcm};
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

/// One AES-GCM key on one path.
#[allow(clippy::large_enum_variant)] // four of them, made once
enum Path {
    A128(Gcm<Aes128Gcm>),
    A256(Gcm<Aes256Gcm>),
}

impl Path {
    fn seal(&self, nonce: &[u8; 12], buf: &mut [u8]) {
        let aad = [0x17, 3, 3, 0x40, 0x11];
        let t = match self {
            Path::A128(g) => g.encrypt_in_place_detached(nonce.into(), &aad, buf),
            Path::A256(g) => g.encrypt_in_place_detached(nonce.into(), &aad, buf),
        };
        std::hint::black_box(t.unwrap());
    }
}

/// The AES-GCM paths to compare: the assembly (where the CPU has it) and the crate.
fn gcm_paths() -> Vec<(&'static str, Path)> {
    let (k16, k32) = ([7u8; 16], [7u8; 32]);
    let mut v = Vec::new();
    if bareweb_tls::provider::aesni::available() {
        v.push((
            "aes128gcm_asm",
            Path::A128(Gcm::new_from_slice(&k16).unwrap()),
        ));
        v.push((
            "aes256gcm_asm",
            Path::A256(Gcm::new_from_slice(&k32).unwrap()),
        ));
    }
    v.push(("aes128gcm_crate", Path::A128(Gcm::new_soft(&k16.into()))));
    v.push(("aes256gcm_crate", Path::A256(Gcm::new_soft(&k32.into()))));
    v
}

#[cfg(target_arch = "x86_64")]
fn tsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64 user mode (Linux allows it).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// AES-GCM alone, per path: one 16 KiB record in place, and 1 MiB as 64 such records (each
/// its own nonce); then TSC cycles per byte of the 1 MiB series, printed (the TSC counts at
/// the CPU's nominal rate, not its boost clock).
fn gcm(c: &mut Criterion) {
    let paths = gcm_paths();
    let mut g = c.benchmark_group("seal_16k_aead");
    g.throughput(Throughput::Bytes(16384));
    let mut buf = vec![0x5au8; 16384];
    for (name, p) in &paths {
        let mut n = 0u64;
        g.bench_function(*name, |b| {
            b.iter(|| {
                n += 1;
                let mut nonce = [1u8; 12];
                nonce[4..].copy_from_slice(&n.to_be_bytes());
                p.seal(&nonce, &mut buf)
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("seal_1m_64_records");
    g.throughput(Throughput::Bytes(1 << 20));
    let mut big = vec![0x5au8; 1 << 20];
    let series = |p: &Path, big: &mut [u8], n: &mut u64| {
        for rec in big.chunks_mut(16384) {
            *n += 1;
            let mut nonce = [1u8; 12];
            nonce[4..].copy_from_slice(&n.to_be_bytes());
            p.seal(&nonce, rec);
        }
    };
    for (name, p) in &paths {
        let mut n = 0u64;
        g.bench_function(*name, |b| b.iter(|| series(p, &mut big, &mut n)));
        #[cfg(target_arch = "x86_64")]
        {
            let reps = 32u64;
            let (t0, c0) = (Instant::now(), tsc());
            for _ in 0..reps {
                series(p, &mut big, &mut n);
            }
            let (cycles, secs) = (tsc() - c0, t0.elapsed().as_secs_f64());
            let bytes = (reps << 20) as f64;
            println!(
                "seal_1m_64_records/{name}: {:.2} TSC cycles/byte, {:.2} GB/s, TSC {:.2} GHz",
                cycles as f64 / bytes,
                bytes / secs / 1e9,
                cycles as f64 / secs / 1e9
            );
        }
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

criterion_group!(benches, seal, gcm, handshakes);
criterion_main!(benches);
