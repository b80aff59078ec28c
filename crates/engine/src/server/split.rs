//! The server's round taken apart (the parallel runners of the OpenMP paper): the same
//! work [`Server::poll`] does, as separate public steps, so a platform can schedule them
//! itself — on one thread in Boa's ready/blocked loop, or on several threads sharing one
//! `Server` behind a lock.
//!
//! - [`Server::set_caps`] tells the server what the transmit rings can do (`poll` asks its
//!   device every round; the split API has no device to ask);
//! - [`Server::begin`] reads the clock for what follows (never backwards);
//! - [`Server::receive`] handles one received frame to completion (the papers' RCV task:
//!   Ethernet → ARP | IPv4 → ICMP | TCP input); a connection with something to do goes
//!   on the ready queue (the run list, Boa's *ready* queue; a connection waiting for its
//!   peer is on no list, Boa's *blocked* state);
//! - [`Server::take_ready`] takes the connection at the head of the ready queue;
//! - [`Server::step`] runs one HTTP step for it (Boa's `process_step`, one chunk: start
//!   the next response, send what the windows allow, acknowledge);
//! - [`Server::tick`] fires due timers (the connections freed since `begin` are in
//!   [`Server::closed`]).
//!
//! Nothing here changes `poll`, which keeps its own loop; both call the same private
//! functions. The split API measures no time (`Server::times` stays as `poll` left it):
//! a platform driving it knows its threads and measures them itself.
//!
//! # Contract of a [`Ready`] token
//!
//! A connection taken with `take_ready` stays marked as queued, so frames arriving for it
//! before its step do not queue it twice: the step will see what they brought. Every
//! token must therefore be given to `step`; a dropped token strands its connection until
//! its timers fire. A token whose connection was freed meanwhile (a RST) is harmless: its
//! step does nothing; if the TCB was reused by a new connection, the step does that
//! connection's pending work, which is what a step is for.

use super::{AccessLog, Server};
use crate::nic::{Clock, NicCaps, TxRing};
use crate::resource::Lookup;

/// A connection taken from the ready queue; give it to [`Server::step`].
#[must_use = "a taken connection must be stepped, or it is stranded until its timers fire"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready(u32);

impl Ready {
    /// The connection's TCB number (for logs and tests).
    pub fn id(self) -> u32 {
        self.0
    }
}

impl<L: Lookup<'static>> Server<L> {
    /// The capabilities of every ring later given to `receive`, `step` and `tick`: with
    /// `caps.tso_max` above 0 responses go out as offloaded frames through
    /// [`TxRing::post_tso`]. Default: none.
    pub fn set_caps(&mut self, caps: NicCaps) {
        self.tso_max = caps.tso_max.min(crate::iface::egress::TSO_LIMIT) as u32;
    }

    /// Reads `clock` for the calls that follow: the time stamped on received segments,
    /// responses and timers. Time never goes backwards here, even when threads that read
    /// their clocks in one order take the server in another.
    pub fn begin<C: Clock>(&mut self, clock: &C) {
        self.now_ns = self.now_ns.max(clock.now_ns());
        self.unix_secs = clock.unix_secs();
        self.closed.clear();
        self.drain_begin();
    }

    /// Handles one received frame to completion (replies such as ARP, ICMP, SYN-ACK, RST
    /// and ACKs are built on `tx`); a connection with work to do joins the ready queue. A
    /// UDP protocol request is answered here, whole (not access-logged on this path).
    pub fn receive<T: TxRing>(&mut self, frame: &[u8], tx: &mut T) {
        self.handle_frame(frame, tx, &mut super::NoLog);
    }

    /// Connections on the ready queue.
    pub fn ready_len(&self) -> usize {
        self.conns.run_len()
    }

    /// Takes the connection at the head of the ready queue.
    pub fn take_ready(&mut self) -> Option<Ready> {
        while let Some(id) = self.conns.pop_run() {
            // Only a queued TCB is on the list, except after a stale token's step (see the
            // module doc); such an entry is skipped.
            if self.conns.tcbs().get(id as usize).is_some_and(|t| t.queued) {
                return Some(Ready(id));
            }
        }
        None
    }

    /// One HTTP step for a taken connection: starts its next response if the last one is
    /// acknowledged, sends what the windows allow (frames built on `tx`), acknowledges.
    /// Returns whether the connection is back on the ready queue with more to do now (the
    /// ring lent no slot); otherwise it waits for its peer or is finished.
    pub fn step<T: TxRing, A: AccessLog>(&mut self, r: Ready, tx: &mut T, log: &mut A) -> bool {
        let idx = r.0 as usize;
        if !self.conns.tcbs().get(idx).is_some_and(|t| t.queued) {
            return false; // freed since it was taken
        }
        self.http_step(r.0, tx, log);
        log.flush();
        self.conns[idx].queued
    }

    /// Fires the timers if their 10 ms tick is due (RTO, persist, request and idle
    /// timeouts). Call it about as often as `poll` would run; it does not flush `tx`.
    /// The connections freed since `begin` are in [`Server::closed`].
    pub fn tick<T: TxRing, A: AccessLog>(&mut self, tx: &mut T, log: &mut A) {
        self.ipv6_round(tx);
        self.end_round(tx, log);
    }
}
