//! TCP, integrated with HTTP the way the scheduling paper describes, as a state machine of its own.
//!
//! - [`active`]: the active open (the engine's fetcher): SYN-SENT, the SYN and its
//!   retransmission, the SYN-ACK's options, simultaneous open;
//! - [`conn`]: one connection ([`Connection`]): RFC 9293's states, the sequence variables
//!   and the input function (a segment in, an [`Outcome`] out), whose ACK step (the
//!   handshake's completion, RTT samples, SACK, loss detection, the window update) is in
//!   [`ack`];
//! - [`output`]: what the connection sends next ([`Segment`]s within the windows, the FIN,
//!   retransmissions) and what its timer asks ([`TimerAction`]); [`emit`]: the send loop
//!   every owner of a table runs (next segment, post it, mark it sent), with the owner's
//!   frame building behind [`emit::Sender`];
//! - [`state`], [`timer`], [`rtt`] (RFC 6298), [`sack`] (the scoreboard), [`congestion`]
//!   (the loss-recovery state, CUBIC and PRR) and [`bbr`] (BBR v1), fed by [`rate`]
//!   (delivery-rate samples); `pacing.rs`: the pacing clock and the per-ACK model update;
//! - [`tcb`]: the TCB (connection + application part + table links), `table`: the
//!   connection table every user of TCP keeps its TCBs in (free list, port table, run
//!   list; the application's state a type parameter), [`port_table`] (port → TCB),
//!   [`per_ip`] (connections per client address), [`seq`] (sequence
//!   arithmetic), [`isn`] (RFC 6528), [`syncookie`] (RFC 4987).
//!
//! Nothing here builds a frame, owns a buffer or knows HTTP: `iface` parses and builds
//! frames, `server` and `fetch` apply outcomes, `http::conn` owns the request and the
//! response.
//! Correct per RFC 9293, with RFC 6298 retransmission timing, RFC 5681/6582 NewReno,
//! RFC 5961 challenge ACKs and RFC 6528 initial sequence numbers.
//!
//! Heads up! Read RFC 9293 §3.10 before changing `conn.rs`.

pub mod ack;
pub mod active;
pub mod bbr;
pub mod congestion;
pub mod conn;
pub mod emit;
pub mod isn;
pub mod output;
mod pacing;
#[cfg(any(test, feature = "alloc"))]
pub mod per_ip;
pub mod port_table;
pub mod rate;
pub mod rtt;
pub mod sack;
pub mod seq;
pub mod state;
pub mod syncookie;
#[cfg(any(test, feature = "alloc"))]
pub mod table;
pub mod tcb;
pub mod timer;

#[cfg(test)]
mod tests;

pub use congestion::Algorithm;
pub use conn::{Connection, Outcome, Reply};
pub use output::{Segment, TimerAction};
pub use pacing::PACING_SLACK_NS;
pub use state::State;
pub use timer::Timer;
