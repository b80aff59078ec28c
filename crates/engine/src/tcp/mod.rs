//! TCP, integrated with HTTP the way paper 004 describes: the receive path (the paper's RCV
//! task) runs TCP input for every frame to the end and puts connections with work on the
//! run list; the HTTP step (the paper's HTTP task) parses the request, picks the response
//! and sends it straight out of the site image. Correct per RFC 9293, with RFC 6298
//! retransmission timing, RFC 5681/6582 NewReno, RFC 5961 challenge ACKs and RFC 6528
//! initial sequence numbers.
//!
//! Heads up! Read RFC 9293 §3.10 before changing `server/mod.rs`.

pub mod isn;
pub mod port_table;
pub mod seq;
pub mod tcb;
