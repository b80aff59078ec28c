//! The UDP protocol's options, shared by `serve` and `run` (flattened into both): paper
//! 001's stateless protocol next to HTTP over TCP, off unless `--udp-port` is given.

use bareweb_engine::udp;

#[derive(clap::Args, Clone, Debug)]
pub struct UdpArgs {
    /// Also serve paper 001's stateless UDP protocol (docs/udp-protocol.md) on this UDP
    /// port, 1-65535; off unless given.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub udp_port: Option<u16>,
    /// Request ids on the UDP server's stack (the most UDP requests in progress at once),
    /// 1 to 65535.
    #[arg(long, default_value_t = 5000, requires = "udp_port",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub udp_ids: u16,
    /// Packets the server sends per UDP GET (the paper's n, 4 to 8 there), 1 to 64.
    #[arg(long, default_value_t = 8, requires = "udp_port",
          value_parser = clap::value_parser!(u8).range(1..=64))]
    pub udp_burst: u8,
    /// UDP GETs answered per second per client address that proved it receives our
    /// packets (0: no limit); addresses that have not are held to 16 per second.
    #[arg(long, default_value_t = 20_000, requires = "udp_port")]
    pub udp_rate: u32,
    /// Paper 001 as written: no amplification bound, no address tokens, no rate limit.
    /// A small spoofed GET then draws up to n large packets at its claimed source: only
    /// on a network you trust (docs/security.md).
    #[arg(long, requires = "udp_port")]
    pub udp_paper_mode: bool,
}

impl UdpArgs {
    /// The engine's configuration (core 0's; each core's id is set by the plan).
    pub fn config(&self) -> Option<udp::Config> {
        self.udp_port.map(|port| udp::Config {
            ids: self.udp_ids,
            burst: self.udp_burst,
            paper_mode: self.udp_paper_mode,
            rate: self.udp_rate,
            ..udp::Config::new(port)
        })
    }

    /// The kernel command line words (empty when the protocol is off).
    pub fn cmdline(&self) -> String {
        let Some(port) = self.udp_port else {
            return String::new();
        };
        format!(
            " udp_port={port} udp_ids={} udp_burst={} udp_rate={}{}",
            self.udp_ids,
            self.udp_burst,
            self.udp_rate,
            if self.udp_paper_mode {
                " udp_paper=on"
            } else {
                ""
            }
        )
    }

    /// The part of a start banner that names the protocol's URL base.
    pub fn banner(&self, ip: impl std::fmt::Display) -> String {
        match self.udp_port {
            Some(p) => format!(
                " and bwudp://{ip}:{p}/{}",
                if self.udp_paper_mode {
                    " (paper mode: no bounds)"
                } else {
                    ""
                }
            ),
            None => String::new(),
        }
    }
}
