//! Many cores (issue 4): how engine instances on several cores share one machine without
//! locks. Platform-neutral and `no_std`: the kernel and the host run the same code, each
//! with its own way to start a thread of execution per core.
//!
//! - [`netcore`]: the papers' design. Core 0 alone touches the NIC; it answers ARP/ICMP,
//!   admits SYNs and picks the HTTP core round robin, and forwards every later frame of a
//!   connection to that core's receive ring (CLIST); HTTP cores put frames on their send
//!   ring (DLIST), which core 0 drains onto the NIC. An HTTP core runs the ordinary
//!   [`Server`](crate::server::Server) over a ring-backed `Nic`.
//! - Per-queue mode needs nothing here: every core runs a `Server` over its own NIC queue
//!   pair; the device's flow hash keeps a connection on one queue.
//! - [`board`]: live measurements published per core and read by whichever core serves
//!   `/.well-known/bareweb/stats`.
//! - [`plan`]: the mode, each core's role and server, and the network core's wiring,
//!   decided in one place for both platforms.
//! - [`run`]: the per-core loop (poll, measure, publish, idle) both platforms share.
//! - [`replay`]: sending a frame built away from the device (a DLIST slot, a runner's
//!   batch) on the device, without copying its body.

pub mod board;
// Under `cfg(loom)` (the ring's model test) the ring lends no references, only closures.
#[cfg(not(loom))]
pub mod netcore;
#[cfg(not(loom))]
pub mod plan;
pub mod replay;
pub mod run;
