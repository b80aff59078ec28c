//! bareweb's engine: everything protocol- and scheduling-related, with no operating system.
//!
//! Layers, bottom up:
//! - [`wire`]: zero-copy views over Ethernet, ARP, IPv4, ICMP, TCP and UDP frames, and the
//!   Internet checksum. After `new_checked` succeeds no accessor panics.
//!
//! The engine never touches a port, a register or a file descriptor: hardware is reached
//! through the traits in `nic` (added with the TCP layer), implemented by the `kernel` and
//! `host` crates.
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(any(test, feature = "alloc"))]
extern crate alloc;

#[cfg(test)]
mod capture_tests;
#[cfg(any(test, feature = "alloc"))]
pub mod cores;
#[cfg(any(test, feature = "std"))]
pub mod fake;
pub mod http;
#[cfg(any(test, feature = "alloc"))]
pub mod iface;
pub mod nic;
pub mod resource;
#[cfg(any(test, feature = "alloc"))]
pub mod ring;
#[cfg(any(test, feature = "alloc"))]
pub mod server;
pub mod site;
pub mod stats;
pub mod tcp;
pub mod wire;
