//! The plan for a machine's cores: which mode, which role each core plays, which server
//! configuration it gets, and how the network core is wired to the HTTP cores. Both
//! platforms call it (the host from `cli`/`host::cores`, the kernel from `serve`), so the
//! two cannot disagree; what stays theirs is how a core is started (a pinned thread, an
//! INIT-SIPI-SIPI job), how it idles, and which devices give the queue pairs.
//!
//! ```text
//!  cores, mode asked ──► queues_wanted ──► platform opens the device ──► queue pairs got
//!                                                                          │
//!  decide(cores, asked, queues got) ──► Decision { mode, why } ──► Plan::new(..).with_board
//!    Plan::server(core)           the core's Server (its config, its board row)
//!    Plan::netcore(rx, tx, ..)    core 0's NetCoreNic and one RingNic per HTTP core
//! ```
//!
//! Everything here runs once at start; nothing is on the request path.
//!
//! **One core.** A network core exists to hand connections to other cores, so with one
//! core either mode is the single-core server: [`decide`] says so ([`Why::OneCore`]) and the
//! platform prints it. The number of cores is known only at run time on the bare machine
//! (an application processor may not start), so this is a fallback, not an error.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use super::board::{Board, Role};
use super::netcore::{links_dozing, Addressing, NetCoreNic, NetCoreSetup, RingNic, RingSizes};
use super::pages::PageSettings;
use crate::iface::share6::{share, Share};
use crate::nic::{Clock, RxRing, TxRing};
use crate::resource::Lookup;
use crate::ring::Doze;
use crate::server::{Config, Server};
use crate::wire::EthernetAddress;

/// How the cores share the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One core, one queue: the server as it always was.
    Single,
    /// The papers' design: core 0 owns the NIC; with `bsp_http` it serves HTTP too.
    NetCore {
        /// Core 0 serves HTTP as well.
        bsp_http: bool,
    },
    /// One queue pair per core.
    PerQueue,
}

impl Mode {
    /// The board's name for the mode.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::NetCore { .. } => "netcore",
            Mode::PerQueue => "perqueue",
        }
    }

    /// The role of core `core`.
    pub fn role(self, core: usize) -> Role {
        match (self, core) {
            (Mode::Single, _) => Role::Single,
            (Mode::PerQueue, _) => Role::Queue,
            (Mode::NetCore { bsp_http: true }, 0) => Role::NetHttp,
            (Mode::NetCore { bsp_http: false }, 0) => Role::Net,
            (Mode::NetCore { .. }, _) => Role::Http,
        }
    }

    /// Each core's role.
    pub fn roles(self, cores: usize) -> Vec<Role> {
        (0..cores).map(|k| self.role(k)).collect()
    }
}

/// The mode a user asked for (`--mode`, `mode=`); none asked: the platform's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `netcore`.
    NetCore,
    /// `perqueue`.
    PerQueue,
}

/// Queue pairs to ask the device for: one per core unless one core serves or network-core
/// mode is asked for (core 0 alone touches the device).
pub fn queues_wanted(cores: usize, asked: Option<Asked>) -> usize {
    if cores > 1 && asked != Some(Asked::NetCore) {
        cores
    } else {
        1
    }
}

/// Why a mode was chosen (printed by the platform).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// One core serves everything: no other core to hand work to. `asked` is the mode
    /// asked for, which does not apply.
    OneCore {
        /// The mode asked for, if any.
        asked: Option<Asked>,
    },
    /// The mode asked for.
    AskedFor,
    /// Per-queue mode by default: the device gave a queue pair per core.
    QueuePerCore,
    /// Network-core mode because the device gave fewer queue pairs than cores.
    FewQueues {
        /// Whether per-queue mode was asked for (and cannot be had).
        asked_perqueue: bool,
        /// Queue pairs the device gave.
        queues: usize,
        /// Cores serving.
        cores: usize,
    },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Why::OneCore { asked: None } => f.write_str("one core"),
            Why::OneCore {
                asked: Some(Asked::NetCore),
            } => f.write_str(
                "one core: network-core mode needs two or more (core 0 hands connections \
                 to HTTP cores), so the one core serves everything",
            ),
            Why::OneCore {
                asked: Some(Asked::PerQueue),
            } => f.write_str("one core: per-queue mode with one queue is the one-core server"),
            Why::AskedFor => f.write_str("asked for"),
            Why::QueuePerCore => f.write_str("a queue pair per core"),
            Why::FewQueues {
                asked_perqueue,
                queues,
                cores,
            } => write!(
                f,
                "{}{queues} queue pair(s) for {cores} cores",
                if asked_perqueue {
                    "per-queue mode asked for, but "
                } else {
                    ""
                }
            ),
        }
    }
}

/// The mode the cores run in, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The mode.
    pub mode: Mode,
    /// Why it was chosen.
    pub why: Why,
}

impl Decision {
    /// Whether the platform should tell the user (the mode is not simply what was asked
    /// for, or the default that needs no word).
    pub fn worth_saying(&self) -> bool {
        match self.why {
            Why::OneCore { asked } => asked.is_some(),
            Why::AskedFor | Why::QueuePerCore => false,
            Why::FewQueues { .. } => true,
        }
    }
}

/// The mode for `cores` cores when `asked` was asked for (`bsp_http`: core 0 serves HTTP
/// in network-core mode) and the device gave `queues` queue pairs (after being asked for
/// [`queues_wanted`]).
///
/// - one core: the single-core server, whatever was asked ([`Why::OneCore`]);
/// - a queue pair per core and network-core mode not asked: per-queue mode;
/// - otherwise network-core mode (asked, or the device has too few queues).
pub fn decide(cores: usize, asked: Option<Asked>, bsp_http: bool, queues: usize) -> Decision {
    let netcore = Mode::NetCore { bsp_http };
    let (mode, why) = match asked {
        _ if cores <= 1 => (Mode::Single, Why::OneCore { asked }),
        Some(Asked::NetCore) => (netcore, Why::AskedFor),
        _ if queues >= cores => (
            Mode::PerQueue,
            if asked.is_some() {
                Why::AskedFor
            } else {
                Why::QueuePerCore
            },
        ),
        _ => (
            netcore,
            Why::FewQueues {
                asked_perqueue: asked == Some(Asked::PerQueue),
                queues,
                cores,
            },
        ),
    };
    Decision { mode, why }
}

/// Builds a server with `cfg` over `site`, answering the stats page from row `row` of
/// `board` when given (every core's server, and a runner's shared one, is made here).
pub fn server<L: Lookup<'static>>(
    cfg: Config,
    site: L,
    mac: EthernetAddress,
    board: Option<(&'static Board, usize)>,
) -> Server<L> {
    let mut s = Server::new(cfg, site, mac);
    if let Some((b, row)) = board {
        s.serve_stats(b, row);
    }
    s
}

/// Everything the cores are made from.
pub struct Plan<L> {
    /// The mode.
    pub mode: Mode,
    /// Cores serving (threads on the host, processors on the bare machine).
    pub cores: usize,
    /// The site (every core's server has a copy of the handle).
    pub site: L,
    /// Server configuration; `tcbs` is per core.
    pub cfg: Config,
    /// The station address.
    pub mac: EthernetAddress,
    /// The board every core publishes to, if any.
    pub board: Option<&'static Board>,
    /// Whether the servers answer any of their own pages (stats JSON, metrics, health
    /// check: the board's `PageSettings`) from the board.
    pub stats_page: bool,
    /// ACME's HTTP-01 answers ([`Plan::with_http01`]).
    pub http01: Option<&'static super::challenge::Http01>,
    /// Where the ACME client stands ([`Plan::with_issuance`]).
    pub issuance: Option<&'static super::challenge::Issuance>,
}

impl<L: Lookup<'static> + Copy> Plan<L> {
    /// A plan without a board.
    pub fn new(mode: Mode, cores: usize, site: L, cfg: Config, mac: EthernetAddress) -> Self {
        // Every core runs a server, and each one drains.
        if let Some(d) = cfg.drain {
            d.set_cores(cores as u32);
        }
        Plan {
            mode,
            cores,
            site,
            cfg,
            mac,
            board: None,
            stats_page: false,
            http01: None,
            issuance: None,
        }
    }

    /// The plan with a board of one row per core (allocated now and kept for the life of
    /// the program); the servers answer the pages `pages` turns on from it.
    pub fn with_board(mut self, pages: PageSettings) -> Self {
        let board = Board::new(self.mode.name(), &self.roles())
            .with_bond(self.cfg.bond.map(|r| r.bond))
            .with_dhcp(self.cfg.dhcp)
            .with_drain(self.cfg.drain)
            .with_platform(self.cfg.platform)
            .with_reload(self.cfg.reload)
            .with_pages(pages)
            .with_http01(self.http01)
            .with_issuance(self.issuance);
        let board: &'static Board = Box::leak(Box::new(board));
        self.board = Some(board);
        self.stats_page = pages.any() || self.http01.is_some();
        self
    }

    /// ACME's HTTP-01 answers, served by every core from the board [`with_board`]
    /// makes (call this first; the board's page answers them whatever pages are on).
    ///
    /// [`with_board`]: Plan::with_board
    pub fn with_http01(mut self, http01: Option<&'static super::challenge::Http01>) -> Self {
        self.http01 = http01;
        self
    }

    /// Where the platform's ACME client stands, on the board's pages (call this before
    /// [`Plan::with_board`]).
    pub fn with_issuance(mut self, issuance: Option<&'static super::challenge::Issuance>) -> Self {
        self.issuance = issuance;
        self
    }

    /// Core `core`'s role.
    pub fn role(&self, core: usize) -> Role {
        self.mode.role(core)
    }

    /// Every core's role.
    pub fn roles(&self) -> Vec<Role> {
        self.mode.roles(self.cores)
    }

    /// Core `core`'s server configuration: the plan's with the core's id for the UDP
    /// protocol, except for a network core that serves no HTTP, whose own server then only answers ARP, ICMP, strays, and with a SYN
    /// cookie the SYNs no HTTP core has room for (one TCB, never used for a connection:
    /// the ACK returning the cookie is dispatched to an HTTP core). On a NIC set each
    /// server publishes its counters as its core's, and core 0's sends the gratuitous ARPs.
    pub fn config(&self, core: usize) -> Config {
        let mut cfg = self.cfg.clone();
        if let Some(r) = cfg.bond.as_mut() {
            r.core = core;
            r.announcer = core == 0;
        }
        // One server runs IPv6 on the link (its address, DAD, the neighbour cache); in the
        // per-queue mode the others follow it (`servers`, `iface::share6`).
        cfg.ipv6 &= core == 0 || self.shares_ipv6();
        if self.role(core) == Role::Net {
            // With IPv6 on, core 0 serves IPv6's connections itself (the HTTP cores have
            // no link): it keeps its TCBs, and still answers every SYN with a cookie.
            if !cfg.ipv6 {
                cfg.tcbs = 1;
            }
            cfg.syn_backlog = Some(0);
        }
        // The UDP protocol's packets say which core answered (the UDP paper, Fig. 7a).
        if let Some(u) = cfg.udp.as_mut() {
            u.core = core.min(255) as u8;
        }
        cfg
    }

    /// Core `core`'s server (its configuration, its board row). The per-queue mode's
    /// servers are made together, by [`servers`](Self::servers).
    pub fn server(&self, core: usize) -> Server<L> {
        let board = self.board.filter(|_| self.stats_page).map(|b| (b, core));
        server(self.config(core), self.site, self.mac, board)
    }

    /// Whether the cores share one IPv6 link over their queues
    /// ([`crate::iface::share6`]): the per-queue mode with two or more cores and IPv6 on.
    fn shares_ipv6(&self) -> bool {
        self.mode == Mode::PerQueue && self.cores > 1 && self.cfg.ipv6
    }

    /// Every core's server, core 0's first ([`server`](Self::server) each): in the
    /// per-queue mode with IPv6 on, core 0's runs the link and the others follow it, each
    /// given its end of the sharing now (its rings allocated).
    pub fn servers(&self) -> Vec<Server<L>> {
        let mut ends: Vec<Option<Share>> = match self.shares_ipv6() {
            true => share(self.cores).into_iter().map(Some).collect(),
            false => Vec::new(),
        };
        (0..self.cores)
            .map(|core| {
                let mut s = self.server(core);
                if let Some(end) = ends.get_mut(core).and_then(Option::take) {
                    s.share_ipv6(end);
                }
                s
            })
            .collect()
    }

    /// Network-core mode's queue pairs over the device's two sides `rx` and `tx`: core 0's
    /// `NetCoreNic` and one `RingNic` per HTTP core (core `k` at `k - 1`), with ring sizes
    /// for the plan's TCBs. Core 0 sleeps on `net` (shared by all its links) and HTTP core
    /// `k` on `http_doze(k)`; a platform whose cores never sleep gives `Doze::none()`.
    ///
    /// # Panics
    ///
    /// If the plan's mode is not network-core mode (a bug in the platform).
    pub fn netcore<R: RxRing, T: TxRing, C: Clock + Clone>(
        &self,
        rx: R,
        tx: T,
        clock: C,
        net: &Doze,
        mut http_doze: impl FnMut(usize) -> Doze,
    ) -> NetCoreQueues<R, T, C> {
        let Mode::NetCore { bsp_http } = self.mode else {
            panic!("Plan::netcore in {} mode", self.mode.name());
        };
        let sizes =
            RingSizes::for_tcbs(self.cfg.tcbs).with_udp_ids(self.cfg.udp.map_or(0, |u| u.ids));
        let (ends, http): (Vec<_>, Vec<_>) = (1..self.cores)
            .map(|k| links_dozing(sizes, net, http_doze(k)))
            .unzip();
        let setup = NetCoreSetup {
            ends,
            http_tcbs: self.cfg.tcbs,
            bsp_tcbs: bsp_http.then_some(self.cfg.tcbs),
            addressing: Addressing::new(&self.cfg, self.mac),
        };
        NetCoreQueues {
            core0: NetCoreNic::new(rx, tx, self.mac, clock, setup),
            http: http
                .into_iter()
                .map(|e| RingNic::new(e, self.mac))
                .collect(),
        }
    }
}

/// The queue pairs of network-core mode.
pub struct NetCoreQueues<R: RxRing, T: TxRing, C: Clock> {
    /// Core 0's: the device's rings, dispatching and draining.
    pub core0: NetCoreNic<R, T, C>,
    /// HTTP core `k`'s at `k - 1`.
    pub http: Vec<RingNic>,
}

#[cfg(test)]
mod tests;
