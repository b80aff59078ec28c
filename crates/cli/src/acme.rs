//! `serve --acme-domain`: the ACME client inside the server, set up for the host. The
//! engine's [`Agent`] does the work on core 0 (its tick, [`AcmeTick`]); this gives it what
//! the host has: the state directory (`--state`, `bareweb_host::acme_state`), randomness,
//! the console, the roots it trusts (the Web PKI's, or `--acme-ca`), and the server's
//! HTTPS port waiting for its first certificate.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bareweb_acme::order::Config as OrderConfig;
use bareweb_acme::store::State;
use bareweb_engine::acme::{self, Agent, Keeper, Settings};
use bareweb_engine::cores::challenge::{Http01, Issuance};
use bareweb_engine::nic::Nic;
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::divert::Divert;
use bareweb_engine::server::tls::rustls_session::Renewable;
use bareweb_engine::server::tls::TlsListen;
use bareweb_engine::server::{Config, Server};
use bareweb_engine::wire::EthernetAddress;
use bareweb_host::acme_state::StateDir;
use bareweb_host::reload::CoreHook;
use bareweb_tls::rustls::RootCertStore;
use bareweb_tls::{Options, ServerSlot, TlsClient, TlsServer};

use crate::opts::ServerOpts;

/// How often core 0 runs the agent when no frame waits for it (its timers: TCP's, DNS's,
/// the order's polls).
const TICK_NS: u64 = 10_000_000;

/// The ACME client of a `serve`, shared with the cores (leaked at start).
pub struct Acme {
    agent: Mutex<Agent>,
    start: Instant,
    /// The HTTP-01 answers every core serves.
    pub http01: &'static Http01,
    /// Where issuance stands, for the pages.
    pub issuance: &'static Issuance,
}

/// The host's side of the agent: the state directory, the OS's randomness, stderr.
struct HostKeeper {
    dir: StateDir,
}

impl Keeper for HostKeeper {
    fn fill(&mut self, buf: &mut [u8]) {
        use bareweb_tls::rustls::crypto::SecureRandom;
        if bareweb_tls::host::HostRandom.fill(buf).is_err() {
            // getrandom failing is not survivable for key generation.
            panic!("the OS gave no random bytes");
        }
    }

    fn save(&mut self, state: &State) -> Result<(), String> {
        self.dir
            .save(state)
            .map_err(|e| format!("{}: {e}", self.dir.path().display()))
    }

    fn say(&mut self, line: &str) {
        eprintln!("bareweb: {line}");
    }
}

/// The values of the options given more than once, as one list.
fn values(o: &ServerOpts, long: &str) -> Vec<String> {
    o.given(long)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The roots the client trusts: the certificates of `ca` (PEM), else the Web PKI's.
fn roots(ca: Option<&Path>) -> Result<RootCertStore, String> {
    match ca {
        Some(path) => read_roots(path).map(|(_, store)| store),
        None => {
            let mut store = RootCertStore::empty();
            store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            Ok(store)
        }
    }
}

/// `--acme-ca FILE` read and checked (serve's, and run's and build's before the bytes go
/// into the image): its PEM bytes, and the roots at least one of its certificates makes.
pub fn read_roots(path: &Path) -> Result<(Vec<u8>, RootCertStore), String> {
    let pem = std::fs::read(path).map_err(|e| format!("--acme-ca {}: {e}", path.display()))?;
    let certs = bareweb_tls::server::parse_chain(&pem)
        .map_err(|e| format!("--acme-ca {}: {e}", path.display()))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "--acme-ca {}: no certificate in it can be a root",
            path.display()
        ));
    }
    Ok((pem, store))
}

/// `--acme-directory`'s host when it is a name (not `A.B.C.D`) and no `--dns` is given to
/// look it up: refused with what to do (serve, run and build alike). `dhcp`: the kernel
/// takes its address from DHCP, whose lease names a DNS server (option 6), used when
/// `--dns` is not given.
pub fn check_directory_host(o: &ServerOpts, dhcp: bool) -> Result<(), String> {
    let s = &o.settings.acme;
    if !s.on() || s.dns_servers().next().is_some() || dhcp {
        return Ok(());
    }
    let directory = o
        .given("acme-directory")
        .unwrap_or(bareweb_settings::LETS_ENCRYPT);
    if let Some(host) = acme::exchange::named_host(directory) {
        return Err(format!(
            "--acme-directory's host {host} is a name: give --dns A.B.C.D, a DNS server the \
             server can reach, to look it up (on the bare machine, --ip dhcp's lease names \
             one too)"
        ));
    }
    Ok(())
}

/// Sets up ACME for `serve` when `--acme-domain` is given: HTTPS on its port with the
/// kept certificate or none yet (handshakes refused with an alert until one is issued),
/// the frames of the client's connection handed over, the agent made. `None` without
/// `--acme-domain`.
pub fn prepare(
    o: &ServerOpts,
    state: Option<&PathBuf>,
    ca: Option<&PathBuf>,
    cfg: &mut Config,
    mac: EthernetAddress,
) -> Result<Option<&'static Acme>, String> {
    let s = &o.settings.acme;
    if !s.on() {
        return Ok(None);
    }
    let state = state.ok_or(
        "--acme-domain needs --state DIR: the account key and the certificate are kept there \
         (without them every start would order anew, and the CA limits orders)",
    )?;
    let mut dir = StateDir::open(state).map_err(|e| format!("--state {}: {e}", state.display()))?;
    let kept = dir
        .load()
        .map_err(|e| format!("--state {}: {}: {e}", state.display(), dir.path().display()))?;
    let names = values(o, "acme-domain");
    let directory = o
        .given("acme-directory")
        .unwrap_or(bareweb_settings::LETS_ENCRYPT)
        .to_string();
    let dns: Vec<_> = s.dns_servers().collect();
    check_directory_host(o, false)?;
    let platform = bareweb_tls::host::platform();
    let mut options = Options::default();
    if o.settings.tls.min13 {
        options.min_version = bareweb_tls::MinVersion::Tls13;
    }
    let server =
        TlsServer::awaiting_certificate(&options, &platform).map_err(|e| format!("HTTPS: {e}"))?;
    let acceptor: &'static Renewable = Box::leak(Box::new(Renewable(ServerSlot::new(server))));
    // The slot new handshakes are accepted from: the agent changes what it holds.
    let slot: &'static ServerSlot = &acceptor.0;
    cfg.tls = Some(TlsListen {
        port: o.settings.tls.port(),
        acceptor,
    });
    let divert: &'static Divert =
        Box::leak(Box::new(Divert::new(acme::TCP_PORTS, acme::UDP_PORTS)));
    cfg.divert = Some(divert);
    let http01: &'static Http01 = Box::leak(Box::new(Http01::new()));
    let issuance: &'static Issuance = Box::leak(Box::new(Issuance::new()));
    let client = TlsClient::with_roots(roots(ca.map(PathBuf::as_path))?, &platform)
        .map_err(|e| format!("the ACME client's TLS: {e}"))?;
    let order = OrderConfig::new(directory, names, o.given("acme-email"), s.tls_alpn);
    let settings = Settings {
        order,
        dns,
        mac,
        user_agent: format!("bareweb/{}", env!("CARGO_PKG_VERSION")),
    };
    let keeper = Box::new(HostKeeper { dir });
    let agent = Agent::new(
        settings,
        kept,
        client,
        slot,
        (http01, issuance),
        divert,
        keeper,
        unix_now(),
    )?;
    Ok(Some(Box::leak(Box::new(Acme {
        agent: Mutex::new(agent),
        start: Instant::now(),
        http01,
        issuance,
    }))))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A core hook that also runs the ACME agent on core 0 (its lock taken there alone, in
/// the tick: never on the request path).
pub struct AcmeTick<H>(pub H, pub Option<&'static Acme>);

impl<L: Lookup<'static>, H: CoreHook<L>> CoreHook<L> for AcmeTick<H> {
    fn every_ns(&self) -> u64 {
        match self.1 {
            Some(_) => self.0.every_ns().min(TICK_NS),
            None => self.0.every_ns(),
        }
    }

    fn tick<N: Nic>(&self, core: usize, server: &mut Server<L>, nic: &mut N) {
        self.0.tick(core, server, nic);
        let Some(acme) = self.1 else { return };
        if core != 0 {
            return;
        }
        let (ip, prefix, _) = server.address();
        let gateway = server.config().gateway;
        let now = acme.start.elapsed().as_nanos() as u64;
        if let Ok(mut agent) = acme.agent.lock() {
            let (_, tx) = nic.split();
            agent.run((ip, prefix, gateway), now, unix_now(), tx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roots_file_is_checked_and_a_named_directory_needs_dns() {
        let dir = std::env::temp_dir().join(format!("bareweb-acme-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("ca.pem");
        let pem = include_bytes!("../../tls/testdata/ca.pem");
        std::fs::write(&good, pem).unwrap();
        let (bytes, store) = read_roots(&good).unwrap();
        assert_eq!((bytes.as_slice(), store.len()), (&pem[..], 1));
        let bad = dir.join("not.pem");
        std::fs::write(&bad, "no certificate here\n").unwrap();
        let e = read_roots(&bad).unwrap_err();
        assert!(
            e.starts_with(&format!("--acme-ca {}", bad.display())),
            "{e}"
        );
        let e = read_roots(&dir.join("missing.pem")).unwrap_err();
        assert!(e.contains("--acme-ca") && e.contains("missing.pem"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
        let o = |w: &[&str]| ServerOpts::parse(w).unwrap();
        assert!(check_directory_host(&o(&[]), false).is_ok());
        let e = check_directory_host(&o(&["--acme-domain", "a.test"]), false).unwrap_err();
        assert!(e.contains("acme-v02.api.letsencrypt.org is a name"), "{e}");
        assert!(check_directory_host(&o(&["--acme-domain", "a.test"]), true).is_ok());
        assert!(
            check_directory_host(&o(&["--acme-domain", "a.test", "--dns", "10.0.0.1"]), false)
                .is_ok()
        );
        assert!(check_directory_host(
            &o(&[
                "--acme-domain",
                "a.test",
                "--acme-directory",
                "https://10.0.0.1:14000/dir"
            ]),
            false
        )
        .is_ok());
    }
}
