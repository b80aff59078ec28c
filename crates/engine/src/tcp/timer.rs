//! The one timer of a connection (RFC 6298 retransmission, RFC 8985 §7 tail loss probe,
//! RFC 9293 §3.8.6.1 persist):
//! which is armed, and until when. Armed and read only through these methods, so the
//! deadline arithmetic is written once.

/// What a connection's timer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timer {
    /// Not armed.
    #[default]
    Idle,
    /// Retransmission timeout (of the SYN-ACK or of data) at this time.
    Retransmit {
        /// Monotonic deadline, ns.
        at: u64,
    },
    /// Zero-window probe due at this time.
    Persist {
        /// Monotonic deadline, ns.
        at: u64,
    },
    /// Tail loss probe due at this time (before the retransmission timeout would be).
    LossProbe {
        /// Monotonic deadline, ns.
        at: u64,
    },
}

impl Timer {
    /// Armed for a retransmission at `now_ns + rto_ns`.
    pub fn retransmit(now_ns: u64, rto_ns: u64) -> Timer {
        Timer::Retransmit {
            at: now_ns.saturating_add(rto_ns),
        }
    }

    /// Armed for a window probe at `now_ns + rto_ns`.
    pub fn persist(now_ns: u64, rto_ns: u64) -> Timer {
        Timer::Persist {
            at: now_ns.saturating_add(rto_ns),
        }
    }

    /// Armed for a tail loss probe at `now_ns + pto_ns`.
    pub fn loss_probe(now_ns: u64, pto_ns: u64) -> Timer {
        Timer::LossProbe {
            at: now_ns.saturating_add(pto_ns),
        }
    }

    /// Whether any deadline is set.
    pub fn is_armed(self) -> bool {
        self != Timer::Idle
    }

    /// The deadline, if armed.
    pub fn deadline(self) -> Option<u64> {
        match self {
            Timer::Idle => None,
            Timer::Retransmit { at } | Timer::Persist { at } | Timer::LossProbe { at } => Some(at),
        }
    }

    /// The deadline if it needs better than the server's 10 ms tick: a loss probe's
    /// (milliseconds out, and the point is to be on time). A retransmission timeout is
    /// 200 ms or more and a persist probe as long: a tick late is within their slack, and
    /// scanning the TCB array for each of hundreds of half-open connections' SYN-ACK
    /// deadlines would cost a server under a SYN flood more than it saves.
    pub fn precise_deadline(self) -> Option<u64> {
        match self {
            Timer::LossProbe { at } => Some(at),
            _ => None,
        }
    }

    /// Whether the deadline has passed at `now_ns`.
    pub fn expired(self, now_ns: u64) -> bool {
        self.deadline().is_some_and(|at| now_ns >= at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines() {
        assert!(!Timer::Idle.is_armed() && !Timer::Idle.expired(u64::MAX));
        let t = Timer::retransmit(10, 5);
        assert_eq!(t.deadline(), Some(15));
        assert!(!t.expired(14) && t.expired(15));
        assert_eq!(Timer::persist(u64::MAX, 5).deadline(), Some(u64::MAX));
    }
}
