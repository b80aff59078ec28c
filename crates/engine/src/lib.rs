//! bareweb's engine: everything protocol- and scheduling-related, with no operating system.
//!
//! Layers, bottom up. A module uses only the modules of lower levels; the modules of one
//! level do not use each other. `cargo xtask layers` (part of `cargo xtask test`) reads
//! this list, in this form, and checks every `crate::` path of the engine's code against
//! it (test code, `#[cfg(test)]`, may use any module).
//!
//! - Level 0
//!   - [`wire`]: zero-copy views over Ethernet, ARP, IPv4, ICMP, IPv6, ICMPv6 (NDP, MLD),
//!     TCP and UDP frames, DHCPv6's client messages, and the Internet checksum. After
//!     `new_checked` succeeds no accessor panics.
//!   - [`mailbox`]: frames posted by any core to one owner (DHCP replies, the server's own
//!     client connection), lock-free, a few slots.
//!   - [`ring`]: the lock-free single-producer single-consumer ring cores talk through.
//!   - [`stats`]: one core's counters and live measurements, and the counters a platform
//!     keeps outside the engine (`stats::platform`).
//! - Level 1
//!   - [`nic`]: the device seam, traits `Nic` (one RX/TX queue pair) and `Clock`.
//!   - [`resource`]: what the site gives the HTTP layer: a resource, its stored bodies
//!     with their block sums, the `Lookup` trait, the header name characters.
//! - Level 2
//!   - [`iface`]: received frames classified (ARP, echo, TCP segment, drop reason) and
//!     frames built (headers, checksums, offload, RST).
//!   - [`site`]: the site image: its format, checked loader, lookup and (std) builder.
//!   - [`dhcp`]: the DHCP client (RFC 2131) as a state machine, its messages and frames.
//!   - [`dns`]: the DNS stub resolver as a state machine (queries, checked answers, the
//!     TTL cache) and its messages.
//!   - [`bond`]: one server on a set of NICs (the bonding paper): the receive NIC, send
//!     NICs chosen per connection (the send-id), the set as one `Nic`, link monitoring.
//! - Level 3
//!   - [`tcp`]: the connection as a state machine (segment in → `Outcome`; next segment;
//!     timer actions), RTT, loss recovery (NewReno without SACK, RFC 6675 with), CUBIC
//!     and BBR, the TCB, the port table, ISNs, SYN cookies.
//! - Level 4
//!   - [`http`]: request parsing and response choice (pure functions), the HTTP side of a
//!     connection (`http::conn`), the access record (`http::log`).
//! - Level 5
//!   - [`udp`]: the stateless UDP web protocol: its formats, the answer to a request,
//!     tokens, the rate limit, the request-id stack, the fetcher's state machine.
//!   - [`fetch`]: the engine fetching over HTTP on its own TCP (active open): the
//!     [`fetch::Fetcher`], the bare load generator's transport.
//! - Level 6
//!   - [`server`]: one core's server, the glue that applies what the layers decide, driven
//!     by `Server::poll` (or the split API for the parallel runners).
//! - Level 7
//!   - [`cores`]: many cores: the plan, network-core dispatch over rings, the stats board
//!     and pages, the per-core loop both platforms run.
//! - Level 8
//!   - [`acme`]: (feature `acme`) the ACME client inside the server: the order driven
//!     over the engine's own TCP, TLS client and DNS, its answers and certificate put in
//!     service.
//!   - `fake`: (std) test devices: an in-memory queue pair and a fault injector.
//!   - `memwire`: (std) two engines wired together in memory.
//!
//! The engine never touches a port, a register or a file descriptor: hardware is reached
//! through the traits in [`nic`], implemented by the `kernel` and `host` crates.
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(any(test, feature = "alloc"))]
extern crate alloc;

#[cfg(feature = "acme")]
pub mod acme;
#[cfg(any(test, feature = "alloc"))]
pub mod bond;
#[cfg(test)]
mod capture_tests;
#[cfg(any(test, feature = "alloc"))]
pub mod cores;
pub mod dhcp;
pub mod dns;
#[cfg(any(test, feature = "std"))]
pub mod fake;
#[cfg(any(test, feature = "alloc"))]
pub mod fetch;
pub mod http;
#[cfg(any(test, feature = "alloc"))]
pub mod iface;
pub mod mailbox;
#[cfg(any(test, feature = "std"))]
pub mod memwire;
pub mod nic;
pub mod resource;
#[cfg(any(test, feature = "alloc"))]
pub mod ring;
#[cfg(any(test, feature = "alloc"))]
pub mod server;
pub mod site;
pub mod stats;
pub mod tcp;
pub mod udp;
pub mod wire;
