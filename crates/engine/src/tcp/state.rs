//! The connection states of RFC 9293 §3.3.2, as the server (passive open) and the engine's
//! client (active open, `super::active`) go through them.
//!
//! ```text
//!   SYN in LISTEN (the server's)           connect (the client's): SYN out
//!             │ SYN-ACK out                              ▼
//!             ▼                SYN in, SYN-ACK out
//!       SYN-RECEIVED ◄───────(simultaneous open)───── SYN-SENT
//!             │ ACK of our SYN                           │ SYN-ACK in, ACK out
//!             ▼                                          ▼
//!       ESTABLISHED ◄────────────────────────────────────┘
//!             │ (the FINs: below)
//!
//!       ESTABLISHED ──FIN in──► CLOSE-WAIT
//!             │ FIN out              │ FIN out
//!             ▼                      ▼
//!  FIN-WAIT-2 ◄──ACK of FIN── FIN-WAIT-1 ──FIN in──► CLOSING  LAST-ACK
//!       │ FIN in                                      │ ACK    │ ACK of FIN
//!       ▼                                             ▼        ▼
//!   TIME-WAIT ◄─────────────────────────────────── TIME-WAIT  CLOSED
//! ```
//!
//! LISTEN belongs to the server (one per port), not to a TCB. TIME-WAIT is entered and left
//! at once: the TCB is freed when both FINs are acknowledged (docs/design/tcp.md says why; for the
//! client's side, `super::active` says how its ports are reused).

/// Connection states (RFC 9293 §3.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum State {
    /// No connection: the slot is unused.
    #[default]
    Closed,
    /// Our SYN sent (active open), waiting for the peer's SYN-ACK.
    SynSent,
    /// SYN received, SYN-ACK sent, waiting for the ACK of our SYN.
    SynReceived,
    /// Both directions open.
    Established,
    /// Our FIN is sent, not yet acknowledged; the peer's has not come.
    FinWait1,
    /// Our FIN is acknowledged; waiting for the peer's.
    FinWait2,
    /// The peer's FIN has come; ours is not sent yet.
    CloseWait,
    /// Both FINs sent, ours (sent first) not yet acknowledged.
    Closing,
    /// The peer's FIN came first; ours is sent and not yet acknowledged.
    LastAck,
    /// Both FINs sent and acknowledged after our active close. Not held: the owner frees
    /// the TCB at once.
    TimeWait,
}

impl State {
    /// Whether the handshake has completed (RFC 9293's synchronized states).
    pub fn is_synchronized(self) -> bool {
        !matches!(self, State::Closed | State::SynSent | State::SynReceived)
    }

    /// Whether the peer's FIN has been received.
    pub fn peer_closed(self) -> bool {
        matches!(
            self,
            State::CloseWait | State::Closing | State::LastAck | State::TimeWait
        )
    }

    /// Whether our FIN has been sent at least once (it may be due again after a timeout).
    pub fn fin_sent(self) -> bool {
        matches!(
            self,
            State::FinWait1 | State::FinWait2 | State::Closing | State::LastAck | State::TimeWait
        )
    }

    /// Whether the connection is over in both directions: the TCB is to be freed.
    pub fn is_done(self) -> bool {
        matches!(self, State::Closed | State::TimeWait)
    }

    /// The state after our FIN goes out for the first time.
    pub(crate) fn after_fin_sent(self) -> State {
        match self {
            State::Established => State::FinWait1,
            State::CloseWait => State::LastAck,
            s => s,
        }
    }

    /// The state after the peer's FIN is received.
    pub(crate) fn after_fin_received(self) -> State {
        match self {
            State::Established => State::CloseWait,
            State::FinWait1 => State::Closing,
            State::FinWait2 => State::TimeWait,
            s => s,
        }
    }

    /// The state after our FIN is acknowledged.
    pub(crate) fn after_fin_acked(self) -> State {
        match self {
            State::FinWait1 => State::FinWait2,
            State::Closing => State::TimeWait,
            State::LastAck => State::Closed,
            s => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_orders_reach_the_end() {
        // Active close: FIN out, ACK of it, FIN in.
        let s = State::Established.after_fin_sent();
        assert_eq!(s, State::FinWait1);
        let s = s.after_fin_acked();
        assert_eq!(s, State::FinWait2);
        assert_eq!(s.after_fin_received(), State::TimeWait);
        // Passive close: FIN in, FIN out, ACK of it.
        let s = State::Established.after_fin_received();
        assert_eq!(s, State::CloseWait);
        let s = s.after_fin_sent();
        assert_eq!(s, State::LastAck);
        assert_eq!(s.after_fin_acked(), State::Closed);
        // Simultaneous close.
        let s = State::FinWait1.after_fin_received();
        assert_eq!(s, State::Closing);
        assert!(s.after_fin_acked().is_done());
    }

    #[test]
    fn predicates() {
        assert!(!State::SynReceived.is_synchronized());
        assert!(!State::SynSent.is_synchronized() && !State::SynSent.is_done());
        assert!(State::CloseWait.peer_closed() && !State::CloseWait.fin_sent());
        assert!(State::FinWait2.fin_sent() && !State::FinWait2.peer_closed());
        assert!(State::TimeWait.is_done() && !State::LastAck.is_done());
    }
}
