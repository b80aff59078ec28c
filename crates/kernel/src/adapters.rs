//! What the engine asks of its platform, the kernel's way: the site the servers look up
//! ([`Pages`]: with or without the stats page), the access log ([`ConsoleLog`]: Common Log
//! Format lines on the console) and the key of the servers' initial sequence numbers
//! ([`isn_key`]: from RDRAND, else the TSC).

use bareweb_engine::cores::board::WithStatsPage;
use bareweb_engine::http::log::LogFormat;
use bareweb_engine::resource::{Chosen, Found, Lookup, Redirect, Resource};
use bareweb_engine::server::{AccessLog, AccessRecord};
use bareweb_engine::site::Site;

/// The site, with or without the stats page (`stats_page=`): one type for every core.
#[derive(Clone, Copy)]
pub enum Pages {
    /// The site alone.
    Plain(Site<'static>),
    /// The site and the server's own pages (stats, metrics, health).
    WithStats(WithStatsPage<Site<'static>>),
}

impl Lookup<'static> for Pages {
    fn for_host(&self, host: Option<&[u8]>) -> Chosen<Self> {
        match self {
            Pages::Plain(s) => match s.for_host(host) {
                Chosen::Other(o) => Chosen::Other(Pages::Plain(o)),
                Chosen::This => Chosen::This,
                Chosen::Misdirected => Chosen::Misdirected,
            },
            Pages::WithStats(s) => match s.for_host(host) {
                Chosen::Other(o) => Chosen::Other(Pages::WithStats(o)),
                Chosen::This => Chosen::This,
                Chosen::Misdirected => Chosen::Misdirected,
            },
        }
    }

    fn lookup(&self, path: &[u8]) -> Found<'static> {
        match self {
            Pages::Plain(s) => s.lookup(path),
            Pages::WithStats(s) => s.lookup(path),
        }
    }

    fn redirect(&self, path: &[u8]) -> Option<Redirect<'static>> {
        match self {
            Pages::Plain(s) => s.redirect(path),
            Pages::WithStats(s) => s.redirect(path),
        }
    }

    fn error_page(&self, status: u16) -> Option<Resource<'static>> {
        match self {
            Pages::Plain(s) => s.error_page(status),
            Pages::WithStats(s) => s.error_page(status),
        }
    }

    fn common_headers(&self) -> &'static str {
        match self {
            Pages::Plain(s) => s.common_headers(),
            Pages::WithStats(s) => s.common_headers(),
        }
    }

    fn server_name(&self) -> Option<&'static str> {
        match self {
            Pages::Plain(s) => s.server_name(),
            Pages::WithStats(s) => s.server_name(),
        }
    }
}

/// Access log lines in the chosen format (`log_format=`) on the console (one VM exit per
/// byte: for debugging), when on (`None`: off); on the screen, rate-limited
/// ([`crate::console::print_busy`]).
pub struct ConsoleLog(pub Option<LogFormat>);

impl ConsoleLog {
    /// The log the settings ask for.
    pub fn of(s: &bareweb_settings::Settings) -> ConsoleLog {
        ConsoleLog(s.log_access.then_some(s.log_format))
    }
}

impl AccessLog for ConsoleLog {
    fn record(&mut self, r: &AccessRecord<'_>) {
        let Some(format) = self.0 else { return };
        crate::console::print_busy(format_args!("{}\n", r.line(format)));
    }
}

/// A fresh key for the servers' initial sequence numbers: RDRAND, else the TSC.
pub fn isn_key() -> [u8; 16] {
    let a = crate::arch::cpu::rdrand().unwrap_or_else(crate::arch::cpu::rdtsc);
    let b = crate::arch::cpu::rdrand()
        .unwrap_or_else(|| crate::arch::cpu::rdtsc().rotate_left(29) ^ 0x9E37_79B9_7F4A_7C15);
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&a.to_le_bytes());
    k[8..].copy_from_slice(&b.to_le_bytes());
    k
}
