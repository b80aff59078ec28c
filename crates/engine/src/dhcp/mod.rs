//! The DHCP client (RFC 2131): how the kernel gets its address on a LAN or a cloud VM
//! (`ip=dhcp`).
//!
//! - [`wire`]: the messages: a checked parser of servers' replies, a builder of the
//!   client's DISCOVER and REQUEST (pure, fuzzed);
//! - [`client`]: the client as a state machine (INIT, SELECTING, REQUESTING, BOUND,
//!   RENEWING, REBINDING): a reply or the time in, what to send and the address acquired,
//!   renewed or lost out; every refused reply counted by reason;
//! - [`frame`]: those messages in Ethernet/IPv4/UDP frames, and the reply in a frame;
//! - [`shared`]: what the cores share: the address published by the owning core, the
//!   state and counters for the pages, a mailbox for replies other cores' queues got.
//!
//! It owns no NIC and no clock: the platform feeds it frames for UDP port 68 and the time,
//! sends what it is told, and applies the address to its servers (see
//! docs/design/dhcp.md). Nothing here allocates or panics on what a server sends.

#[cfg(test)]
mod capture_tests;
pub mod client;
pub mod frame;
pub mod shared;
#[cfg(test)]
pub(crate) mod testing;
pub mod wire;

pub use client::{Actions, Change, Client, Counts, Dest, Lease, Loss, State, Timing, Transmit};
