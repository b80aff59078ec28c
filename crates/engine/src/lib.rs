//! bareweb's engine: everything protocol- and scheduling-related, with no operating system.
//!
//! Layers, bottom up (each uses only those below it):
//! - [`wire`]: zero-copy views over Ethernet, ARP, IPv4, ICMP, TCP and UDP frames, and the
//!   Internet checksum. After `new_checked` succeeds no accessor panics.
//! - [`site`] and [`resource`]: the site image (format, loader, lookup) and the stored
//!   bodies with their block sums.
//! - [`nic`]: the device seam, traits `Nic` (one RX/TX queue pair) and `Clock`.
//! - [`iface`]: received frames classified (ARP, echo, TCP segment, drop reason) and frames
//!   built (headers, checksums, offload, RST).
//! - [`tcp`]: the connection as a state machine (segment in → `Outcome`; next segment;
//!   timer actions), RTT, NewReno, the TCB, the port table, ISNs.
//! - [`http`]: request parsing and response choice (pure functions), the HTTP side of a
//!   connection (`http::conn`), the access record (`http::log`).
//! - [`udp`]: paper 001's stateless UDP web protocol: its formats, the answer to a request,
//!   tokens, the rate limit, the request-id stack, and the client's state machine.
//! - [`server`]: one core's server, the glue that applies what the layers decide, driven by
//!   `Server::poll` (or the split API for paper 003's runners).
//! - [`client`]: the engine as an HTTP client on its own TCP (active open), the bare load
//!   client's transport; [`memwire`] (std): two engines wired together in memory.
//! - [`cores`]: many cores: network-core dispatch and rings, the stats board, the per-core
//!   loop. [`ring`]: the lock-free SPSC ring. [`stats`]: counters.
//! - [`dhcp`]: the DHCP client (RFC 2131) as a state machine, its messages and frames.
//! - [`bond`]: one server on a set of NICs (paper 002): the receive NIC, send NICs chosen
//!   per connection (the send-id), the NIC set as one `Nic`, link monitoring and failover.
//!
//! The engine never touches a port, a register or a file descriptor: hardware is reached
//! through the traits in [`nic`], implemented by the `kernel` and `host` crates.
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(any(test, feature = "alloc"))]
extern crate alloc;

#[cfg(any(test, feature = "alloc"))]
pub mod bond;
#[cfg(test)]
mod capture_tests;
#[cfg(any(test, feature = "alloc"))]
pub mod client;
#[cfg(any(test, feature = "alloc"))]
pub mod cores;
pub mod dhcp;
#[cfg(any(test, feature = "std"))]
pub mod fake;
pub mod http;
#[cfg(any(test, feature = "alloc"))]
pub mod iface;
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
