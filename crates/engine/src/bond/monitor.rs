//! Link monitoring and failover as a state machine: link readings in, the new [`Links`]
//! word and what happened out. No clock, no device: the platform's core 0 reads every
//! NIC's link each `--bond-monitor-ms` (virtio-net's status field, e1000's STATUS.LU, the
//! TAP's carrier) and calls [`Monitor::observe`]; the cores act on the word it publishes.
//!
//! Rules (Linux's bonding driver in `balance-tlb` with `miimon`, where they differ said
//! below):
//!
//! - A link that goes down leaves the send set ([`super::senders`]); the servers move its
//!   connections to the others. One that comes back rejoins the send set: new connections
//!   go to it again (existing ones stay where they are, so they are not reordered twice).
//! - When the receive NIC's link goes down, the next NIC whose link is up (in index order
//!   after it) becomes the receive NIC. Linux swaps the two slaves' MACs so that peers
//!   need not learn anything; here the new receive NIC keeps its own MAC and the address
//!   is announced with it by gratuitous ARP ([`ANNOUNCES`] times, one per reading, as
//!   Linux's `num_grat_arp`), because a NIC's MAC cannot be changed on every device
//!   (virtio-net needs a control queue for it) and the issue asks for it this way.
//! - No fail-back: when the old receive NIC returns it only rejoins the send set; moving
//!   the receive role back would make every client relearn a MAC for nothing.
//! - With every link down nothing is elected (there is nothing to elect); the first link
//!   to return is elected if the receive NIC's is still down, or, if it is the receive
//!   NIC's own, the address is announced again (clients' neighbour entries may have
//!   failed meanwhile).
//! - An announcement waits while the receive NIC's link is down.
//! - No up/down delays (Linux's `updelay`/`downdelay`, 0 by default): a reading is acted on
//!   at once.

use super::{all, Links};

/// Gratuitous ARPs sent for each election (and at start), one per link reading.
pub const ANNOUNCES: u8 = 3;

/// What one reading changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// NICs whose link went down (bit k: NIC k).
    pub down: u8,
    /// NICs whose link came up.
    pub up: u8,
    /// A new receive NIC: (old, new).
    pub elected: Option<(u8, u8)>,
    /// A gratuitous ARP is asked for (the `announce` counter moved).
    pub announce: bool,
}

/// The failover state machine of one NIC set.
#[derive(Debug, Clone)]
pub struct Monitor {
    n: u8,
    links: Links,
    /// Gratuitous ARPs still to ask for.
    pending: u8,
}

impl Monitor {
    /// A set of `n` NICs, every link up, NIC 0 receiving; the first reading announces the
    /// address (the gratuitous ARP at start).
    pub fn new(n: usize) -> Monitor {
        Monitor {
            n: n.clamp(1, 8) as u8,
            links: Links::start(n.clamp(1, 8)),
            pending: ANNOUNCES,
        }
    }

    /// The state as of the last reading.
    pub fn links(&self) -> Links {
        self.links
    }

    /// One reading: bit k of `sensed` is NIC k's link (bits past the set are ignored).
    /// Returns what changed; the new state is [`Monitor::links`] (its `epoch` moves
    /// whenever anything in it does).
    pub fn observe(&mut self, sensed: u8) -> Report {
        let n = self.n;
        let sensed = sensed & all(usize::from(n));
        let was = self.links.up;
        let mut next = self.links;
        next.up = sensed;
        let mut r = Report {
            down: was & !sensed,
            up: sensed & !was,
            ..Report::default()
        };
        let rx = next.receive;
        let rx_bit = 1u8 << rx;
        if sensed & rx_bit == 0 {
            // The receive NIC is down: the next one up after it takes over, if any.
            if let Some(k) = (1..=n)
                .map(|i| (rx + i) % n)
                .find(|k| sensed & (1 << k) != 0)
            {
                next.receive = k;
                r.elected = Some((rx, k));
                self.pending = ANNOUNCES;
            }
        } else if r.up & rx_bit != 0 {
            // Back after every link was down (otherwise it would have been replaced).
            self.pending = ANNOUNCES;
        }
        if self.pending > 0 && next.up & (1 << next.receive) != 0 {
            self.pending -= 1;
            next.announce = next.announce.wrapping_add(1);
            r.announce = true;
        }
        if next != self.links {
            next.epoch = next.epoch.wrapping_add(1);
        }
        self.links = next;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bond::{senders, Mode};

    const BOTH: u8 = 0b11;

    /// Reads `sensed` and checks the report and the resulting receive NIC.
    #[track_caller]
    fn step(m: &mut Monitor, sensed: u8, want: Report, receive: u8) {
        let before = m.links();
        let r = m.observe(sensed);
        assert_eq!(r, want, "reading {sensed:#b} from {before:?}");
        assert_eq!(m.links().receive, receive);
        assert_eq!(m.links().up, sensed & 0b1111);
        let changed = m.links().epoch != before.epoch;
        assert_eq!(
            changed,
            r != Report::default(),
            "epoch moves on every change"
        );
    }

    fn announce() -> Report {
        Report {
            announce: true,
            ..Report::default()
        }
    }

    #[test]
    fn start_announces_three_times_then_quiet() {
        let mut m = Monitor::new(2);
        for _ in 0..ANNOUNCES {
            step(&mut m, BOTH, announce(), 0);
        }
        let quiet = m.links();
        step(&mut m, BOTH, Report::default(), 0);
        assert_eq!(m.links(), quiet, "nothing changes: the same word");
        assert_eq!(quiet.announce, ANNOUNCES);
    }

    fn settled(n: usize) -> Monitor {
        let mut m = Monitor::new(n);
        for _ in 0..ANNOUNCES {
            m.observe(all(n));
        }
        m
    }

    #[test]
    fn a_send_nic_down_leaves_the_send_set_and_rejoins() {
        let mut m = settled(2);
        step(
            &mut m,
            0b01,
            Report {
                down: 0b10,
                ..Report::default()
            },
            0,
        );
        assert_eq!(senders(Mode::Spread, 2, m.links()), 0b01);
        // Split with its only send NIC down: the receive NIC sends too.
        assert_eq!(senders(Mode::Split, 2, m.links()), 0b01);
        step(
            &mut m,
            BOTH,
            Report {
                up: 0b10,
                ..Report::default()
            },
            0,
        );
        assert_eq!(senders(Mode::Spread, 2, m.links()), BOTH);
        assert_eq!(senders(Mode::Split, 2, m.links()), 0b10);
    }

    #[test]
    fn the_receive_nic_down_elects_the_next_and_announces_it() {
        let mut m = settled(2);
        step(
            &mut m,
            0b10,
            Report {
                down: 0b01,
                elected: Some((0, 1)),
                announce: true,
                ..Report::default()
            },
            1,
        );
        step(&mut m, 0b10, announce(), 1);
        step(&mut m, 0b10, announce(), 1);
        step(&mut m, 0b10, Report::default(), 1);
        assert_eq!(
            senders(Mode::Split, 2, m.links()),
            0b10,
            "alone: it sends too"
        );
        // NIC 0 returns: no fail-back, it rejoins as a sender.
        step(
            &mut m,
            BOTH,
            Report {
                up: 0b01,
                ..Report::default()
            },
            1,
        );
        assert_eq!(senders(Mode::Split, 2, m.links()), 0b01);
        assert_eq!(senders(Mode::Spread, 2, m.links()), BOTH);
    }

    #[test]
    fn every_link_down_elects_nothing_then_the_first_back_takes_over() {
        let mut m = settled(3);
        step(
            &mut m,
            0,
            Report {
                down: 0b111,
                ..Report::default()
            },
            0,
        );
        assert_eq!(
            senders(Mode::Spread, 3, m.links()),
            0b001,
            "the receive NIC"
        );
        // NIC 2 comes back first: elected, announced.
        step(
            &mut m,
            0b100,
            Report {
                up: 0b100,
                elected: Some((0, 2)),
                announce: true,
                ..Report::default()
            },
            2,
        );
    }

    #[test]
    fn the_receive_nic_back_after_all_were_down_is_announced_again() {
        let mut m = settled(2);
        m.observe(0);
        step(
            &mut m,
            0b01,
            Report {
                up: 0b01,
                announce: true,
                ..Report::default()
            },
            0,
        );
    }

    #[test]
    fn elections_go_round_the_set() {
        let mut m = settled(3);
        assert_eq!(m.observe(0b110).elected, Some((0, 1)));
        assert_eq!(m.observe(0b101).elected, Some((1, 2)));
        assert_eq!(m.observe(0b011).elected, Some((2, 0)));
        assert_eq!(m.links().receive, 0);
    }

    #[test]
    fn announcements_wait_for_the_receive_link() {
        let mut m = Monitor::new(2);
        // At start the receive NIC's link is down and so is every other: nothing to do.
        step(
            &mut m,
            0,
            Report {
                down: BOTH,
                ..Report::default()
            },
            0,
        );
        assert_eq!(m.links().announce, 0);
        step(
            &mut m,
            0b01,
            Report {
                up: 0b01,
                announce: true,
                ..Report::default()
            },
            0,
        );
    }

    #[test]
    fn readings_past_the_set_are_ignored() {
        let mut m = settled(2);
        step(&mut m, 0b1111_0011, Report::default(), 0);
    }
}
