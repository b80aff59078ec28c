//! The ACME client on the bare machine (`acme_domain=`): the engine's agent
//! (`bareweb_engine::acme::Agent`, the one `bareweb serve` runs) given what the bare
//! machine has — the state area of its virtio-blk disk ([`crate::state`]), the CPU's
//! randomness ([`Csprng`]), the RTC's wall clock, the console, and the roots it trusts
//! (the image's `--acme-ca`, else the Web PKI's from `webpki-roots`).
//!
//! Two boot steps: [`prepare`] before the plan (HTTPS on its port waiting for its first
//! certificate, the frames of the agent's connection handed over by every core, the
//! disk's kept state read), then [`Prepared::agent`] once the NIC's MAC is known. Core 0
//! runs the agent in its loop's tick ([`crate::launch`]), every [`TICK_NS`] and at once
//! when frames wait for it; a save writes the disk from there, polled, a few sectors.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use bareweb_acme::order::Config as OrderConfig;
use bareweb_acme::store::State;
use bareweb_engine::acme::{self, Agent, Keeper, Settings as AgentSettings};
use bareweb_engine::cores::challenge::{Http01, Issuance};
use bareweb_engine::nic::Clock;
use bareweb_engine::server::divert::Divert;
use bareweb_engine::server::tls::rustls_session::Renewable;
use bareweb_engine::server::tls::TlsListen;
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};
use bareweb_tls::rustls::crypto::SecureRandom;
use bareweb_tls::rustls::RootCertStore;
use bareweb_tls::{Platform, ServerSlot, TlsClient, TlsServer};

use crate::arch::clock::TscClock;
use crate::arch::pci;
use crate::cmdline::Settings;
use crate::drivers::hal::Identity;
use crate::drivers::virtio::pci::PciTransport;
use crate::drivers::virtio_blk::{self, BlkError, VirtioBlk};
use crate::state::{AreaError, Patience, StateArea};
use crate::tls::{Csprng, Guarded, RtcTime};
use crate::{fatal, kprintln};

/// How often core 0 runs the agent when no frame waits for it.
pub const TICK_NS: u64 = 10_000_000;
/// The longest one disk request may take before the disk is given up (and reset).
const REQUEST_WAIT_NS: u64 = 5_000_000_000;
/// The longest a whole load or save may take (a record is up to 129 writes).
const SAVE_WAIT_NS: u64 = 30_000_000_000;

/// The state disk's area on a PCI virtio-blk device.
type Area = StateArea<PciTransport>;

/// Each disk request's bound, within the whole load's or save's.
struct DiskWait {
    clock: TscClock,
    end: u64,
    request_end: u64,
}

impl DiskWait {
    fn new(clock: TscClock) -> DiskWait {
        let end = clock.now_ns().saturating_add(SAVE_WAIT_NS);
        DiskWait {
            clock,
            end,
            request_end: end,
        }
    }
}

impl Patience<PciTransport> for DiskWait {
    fn begin(&mut self) {
        self.request_end = self
            .clock
            .now_ns()
            .saturating_add(REQUEST_WAIT_NS)
            .min(self.end);
    }

    fn wait(&mut self, _: &mut PciTransport) -> bool {
        core::hint::spin_loop();
        self.clock.now_ns() < self.request_end
    }
}

/// The bare machine's side of the agent: the disk, the CPU's randomness, the console.
struct KernelKeeper {
    /// `None` after the disk stopped (a request that did not come back): opened again at
    /// the next save.
    area: Option<Area>,
    dev: pci::Device,
    random: &'static Csprng,
    clock: TscClock,
}

impl Keeper for KernelKeeper {
    fn fill(&mut self, buf: &mut [u8]) {
        if self.random.fill(buf).is_err() {
            fatal!("acme: the CPU gave no random bytes");
        }
    }

    fn save(&mut self, state: &State) -> Result<(), String> {
        let t = self.clock.now_ns();
        let area = match self.area.take() {
            Some(a) => a,
            None => open(&self.dev).map_err(|e| {
                let e = format!(
                    "the state disk at {} cannot be opened again: {e}",
                    self.dev.addr
                );
                kprintln!("acme: {e}");
                e
            })?,
        };
        let area = self.area.insert(area);
        kprintln!("acme: writing the state to the disk's state area");
        match area.save_record(state, DiskWait::new(self.clock)) {
            Ok((slot, seq)) => {
                kprintln!(
                    "acme: state kept as record {seq} in slot {slot} of the state area ({} us)",
                    (self.clock.now_ns() - t) / 1000
                );
                Ok(())
            }
            Err(e) => {
                // A request that did not come back stopped the disk: it is opened afresh
                // (the device reset) at the next try.
                if matches!(
                    e,
                    AreaError::Disk(BlkError::Timeout | BlkError::Stopped | BlkError::Lied)
                ) {
                    self.area = None;
                }
                let e = format!("the state disk: {}", why(e));
                kprintln!("acme: {e}");
                Err(e)
            }
        }
    }

    fn say(&mut self, line: &str) {
        kprintln!("{line}");
    }
}

/// What an area error means, for the console.
fn why(e: AreaError) -> String {
    match e {
        AreaError::TooSmall(bytes) => format!(
            "{bytes} bytes, smaller than the state area's {} (bareweb run --state-disk makes one)",
            crate::state::AREA_BYTES
        ),
        AreaError::Disk(e) => format!("the disk failed ({e:?})"),
        AreaError::TooLarge => "the state does not fit a record".to_string(),
        AreaError::NotOurs => format!(
            "its last {} KiB hold data that is not a state area: not written (give a disk of \
             its own: bareweb run --state-disk FILE)",
            crate::state::AREA_BYTES / 1024
        ),
    }
}

/// The value of command-line word `word` (`word=value`) the settings table took: the
/// loader's over the image's built-in words, the last one it accepted winning (a value it
/// refused leaves the one before, as the table does).
fn word(lines: [&str; 2], word: &str) -> Option<String> {
    lines
        .iter()
        .flat_map(|l| l.split_ascii_whitespace())
        .filter_map(|w| w.split_once('='))
        .rfind(|&(k, v)| {
            k == word && bareweb_settings::Settings::default().set(k, v) == Some(Ok(()))
        })
        .map(|(_, v)| v.to_string())
}

/// The state disk's area on PCI function `dev`, brought up.
fn open(dev: &pci::Device) -> Result<Area, String> {
    let blk = PciTransport::new::<Identity>(dev)
        .map_err(|e| format!("{e:?}"))
        .and_then(|t| VirtioBlk::new::<Identity>(t).map_err(|e| format!("{e:?}")))?;
    if blk.read_only() {
        return Err("it is read-only".into());
    }
    StateArea::new(blk).map_err(why)
}

/// The state disk: the first PCI virtio-blk device, brought up, its area read. Stops the
/// boot when there is none or it cannot be used: without kept state every boot would
/// order anew, and the CA limits orders.
#[inline(never)]
fn state_disk(clock: TscClock) -> (Area, pci::Device, Option<State>) {
    let mut found = None;
    pci::enumerate(|d| {
        if found.is_none() && virtio_blk::matches(d) {
            found = Some(*d);
        }
    });
    let Some(dev) = found else {
        fatal!("acme: no state disk: acme_domain= keeps its account key and certificate on a virtio-blk disk (bareweb run --state-disk FILE, or boot a bareweb build --disk image as virtio-blk)");
    };
    let mut area = match open(&dev) {
        Ok(a) => a,
        Err(e) => fatal!("acme: the state disk at {}: {e}", dev.addr),
    };
    let kept = match area.load_record(DiskWait::new(clock)) {
        Ok(k) => k,
        Err(e) => fatal!("acme: the state disk at {}: {}", dev.addr, why(e)),
    };
    let what = match &kept {
        None => "blank (a new account key is made)".into(),
        Some((seq, s)) => format!(
            "record {seq}: an account key{}",
            if s.certificate.is_some() {
                " and a certificate"
            } else {
                ""
            }
        ),
    };
    kprintln!(
        "acme: state disk virtio-blk at {}, {} KiB, area at byte {}: {what}",
        dev.addr,
        area.disk_bytes() / 1024,
        area.offset(),
    );
    (area, dev, kept.map(|(_, s)| s))
}

/// What the boot prepared for the agent, before the NIC's MAC is known.
pub struct Prepared {
    /// HTTPS on its port, refusing handshakes until a certificate is held.
    pub listen: TlsListen,
    /// The frames of the agent's connection, handed over by every core.
    pub divert: &'static Divert,
    /// The HTTP-01 answers every core serves.
    pub http01: &'static Http01,
    /// Where issuance stands, for the pages.
    pub issuance: &'static Issuance,
    slot: &'static ServerSlot,
    order: OrderConfig,
    dns: Vec<(Ipv4Address, u16)>,
    client: TlsClient,
    kept: Option<State>,
    keeper: KernelKeeper,
}

/// Sets ACME up when `acme_domain=` is given: the randomness (stops without RDSEED or
/// RDRAND), the state disk, HTTPS awaiting its certificate, the TLS client trusting `ca`
/// (PEM, the image's `--acme-ca`) or the Web PKI's roots. `lines`: the image's built-in
/// command line and the loader's. Stops the boot on any failure: nothing starts half
/// configured. Boxed, and never inlined: core 0's boot frames stay under the serving
/// loop for good, so what is built here must not widen them (the kernel's stack is 128
/// KiB).
#[inline(never)]
pub fn prepare(
    settings: &Settings,
    lines: [&str; 2],
    ca: Option<&[u8]>,
    clock: TscClock,
) -> Option<Box<Prepared>> {
    let s = &settings.acme;
    if !s.on() {
        return None;
    }
    if settings.tls.cert {
        fatal!("acme: acme_domain= and tls_cert= both give HTTPS its certificate: choose one");
    }
    let Some(rng) = Csprng::from_cpu() else {
        fatal!("acme: this CPU has neither RDSEED nor RDRAND (CPUID): no randomness for keys; run on a CPU that has them (QEMU: -cpu host or -cpu max)");
    };
    let random: &'static Csprng = Box::leak(Box::new(rng));
    let platform = Platform {
        random,
        time: Arc::new(RtcTime(clock)),
    };
    if clock.unix_secs() == 0 {
        fatal!("acme: the RTC gave no date: certificates cannot be checked without one");
    }
    let (area, dev, kept) = state_disk(clock);
    let names: Vec<String> = word(lines, "acme_domain")
        .unwrap_or_default()
        .split(',')
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        fatal!("acme: acme_domain= names no domain the command line accepted");
    }
    let directory =
        word(lines, "acme_directory").unwrap_or_else(|| bareweb_settings::LETS_ENCRYPT.into());
    let dns: Vec<(Ipv4Address, u16)> = s.dns_servers().collect();
    if let Some(host) = acme::exchange::named_host(&directory) {
        if dns.is_empty() && !settings.dhcp {
            fatal!("acme: acme_directory's host {host} is a name: give dns=A.B.C.D (or ip=dhcp, whose lease names one) to look it up");
        }
    }
    let t = settings.tls;
    let server = match TlsServer::awaiting_certificate(&crate::tls::options(&t), &platform) {
        Ok(s) => s,
        Err(e) => fatal!("acme: HTTPS: {e}"),
    };
    let acceptor: &'static Guarded<Renewable> =
        Box::leak(Box::new(Guarded(Renewable(ServerSlot::new(server)))));
    let slot: &'static ServerSlot = &acceptor.0 .0;
    let client = match roots(ca).and_then(|r| {
        TlsClient::with_roots(r, &platform).map_err(|e| format!("the client's TLS: {e}"))
    }) {
        Ok(c) => c,
        Err(e) => fatal!("acme: {e}"),
    };
    let email = word(lines, "acme_email");
    let order = OrderConfig::new(directory, names, email.as_deref(), s.tls_alpn);
    kprintln!(
        "acme: HTTPS on port {} awaits its certificate for {} from {} ({}; roots: {})",
        t.port(),
        order.names.join(", "),
        order.directory,
        if s.tls_alpn { "TLS-ALPN-01" } else { "HTTP-01" },
        if ca.is_some() {
            "the image's --acme-ca"
        } else {
            "the Web PKI's"
        }
    );
    Some(Box::new(Prepared {
        listen: TlsListen {
            port: t.port(),
            acceptor,
        },
        divert: Box::leak(Box::new(Divert::new(acme::TCP_PORTS, acme::UDP_PORTS))),
        http01: Box::leak(Box::new(Http01::new())),
        issuance: Box::leak(Box::new(Issuance::new())),
        slot,
        order,
        dns,
        client,
        kept,
        keeper: KernelKeeper {
            area: Some(area),
            dev,
            random,
            clock,
        },
    }))
}

/// The roots the client trusts: the certificates of `ca` (PEM), else the Web PKI's.
fn roots(ca: Option<&[u8]>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match ca {
        Some(pem) => {
            let certs = bareweb_tls::server::parse_chain(pem)
                .map_err(|e| format!("the image's --acme-ca: {e}"))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err("the image's --acme-ca: no certificate in it can be a root".into());
            }
        }
        None => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(store)
}

impl Prepared {
    /// The agent, with our MAC; `dhcp_dns`: the DNS server of `ip=dhcp`'s lease, used
    /// when `dns=` gives none. Stops the boot when the kept state cannot be used. Boxed
    /// and never inlined, as [`prepare`].
    #[inline(never)]
    pub fn agent(self, mac: EthernetAddress, dhcp_dns: Option<Ipv4Address>) -> Box<Agent> {
        let mut dns = self.dns;
        if dns.is_empty() {
            // An address a DNS server can have: not 0.0.0.0, a broadcast or ours.
            let usable = |ip: &Ipv4Address| {
                ip.0 != [0; 4] && ip.0 != [255; 4] && ip.0[0] != 127 && ip.0[0] < 224
            };
            if let Some(ip) = dhcp_dns.filter(usable) {
                kprintln!("acme: DNS server {ip} from the DHCP lease");
                dns.push((ip, 53));
            }
        }
        let clock = self.keeper.clock;
        let settings = AgentSettings {
            order: self.order,
            dns,
            mac,
            user_agent: format!("bareweb/{} (bare machine)", env!("CARGO_PKG_VERSION")),
        };
        match Agent::new(
            settings,
            self.kept,
            self.client,
            self.slot,
            (self.http01, self.issuance),
            self.divert,
            Box::new(self.keeper),
            clock.unix_secs(),
        ) {
            Ok(a) => Box::new(a),
            Err(e) => fatal!("acme: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaders_words_win_over_the_images_and_the_last_over_the_first() {
        let baked = "acme_domain=a.test acme_email=x@a.test";
        let line = "port=80 acme_domain=b.test,c.test acme_domain=d.test";
        assert_eq!(
            word([baked, line], "acme_domain").as_deref(),
            Some("d.test")
        );
        assert_eq!(
            word([baked, line], "acme_email").as_deref(),
            Some("x@a.test")
        );
        assert_eq!(
            word(
                ["acme_directory=https://ca.test:14000/dir?x=1", ""],
                "acme_directory"
            )
            .as_deref(),
            Some("https://ca.test:14000/dir?x=1")
        );
        assert_eq!(word([baked, line], "acme_directory"), None);
        assert_eq!(
            word(["acme_domainx=a", "xacme_domain=b"], "acme_domain"),
            None
        );
        // A value the table refuses leaves the one before, as the table does.
        assert_eq!(
            word(
                ["acme_domain=a.test", "acme_domain=a_b.test"],
                "acme_domain"
            )
            .as_deref(),
            Some("a.test")
        );
        assert_eq!(word(["acme_domain=", ""], "acme_domain"), None);
        assert_eq!(
            word(
                ["acme_directory=http://plain.test/dir", ""],
                "acme_directory"
            ),
            None
        );
    }
}
