//! bareweb on Linux: the engine's [`Nic`](bareweb_engine::nic::Nic) over a TAP device,
//! a [`Clock`](bareweb_engine::nic::Clock) from the OS, the threads that drive one
//! engine instance per core ([`cores`]), and the alternative runners of the OpenMP paper that
//! share one engine instance between threads ([`runners`]), and the AF_XDP platform
//! ([`xdp`]): the engine on an interface's own queues, past the kernel's stack; the access
//! log's per-core buffers and its file ([`accesslog`]); the ACME client's state file
//! ([`acme_state`]).
//!
//! This crate owns every system call the host platform makes; the engine makes none.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod accesslog;
pub mod acme_state;
pub mod clock;
pub mod cores;
pub mod netif;
pub mod reload;
pub mod runners;
pub mod tap;
pub mod wake;
pub mod xdp;

pub use clock::SystemClock;
pub use tap::{RxOffloadCounts, Tap};
