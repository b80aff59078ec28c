//! When the server next needs the clock: the earliest moment a timer scan would find
//! something to do, for a platform that sleeps while nothing arrives (the bare-machine
//! kernel halts its core and arms a timer for it).
//!
//! Conservative by construction: every deadline the scan in `timers.rs` can act on is a
//! candidate (a TCP timer, the request and keep-alive timeouts, the stall abort), whether
//! or not it applies to the connection's state, so a core may wake early (it polls and
//! sleeps again) but never late. The scan runs at its 10 ms ticks (sooner for a loss
//! probe, `Server::next_timer_ns`), so nothing is due before the next one.

use super::Server;
use crate::resource::Lookup;

impl<L: Lookup<'static>> Server<L> {
    /// The monotonic time (ns, the clock given to `poll`) at or after which the next
    /// `poll` may have timer work, or `u64::MAX` if no connection has any deadline; 0 when
    /// work already waits on the run list (a timer queued a connection: the idle close's
    /// FIN goes out at the next poll). Reads every TCB: call it when about to sleep, not
    /// per poll.
    pub fn next_deadline_ns(&self) -> u64 {
        self.own_deadline_ns().min(self.drain_deadline())
    }

    /// [`Server::next_deadline_ns`] without the drain's.
    fn own_deadline_ns(&self) -> u64 {
        if self.conns.run_len() != 0 {
            return 0;
        }
        let link = self.dhcp_deadline().min(self.ipv6_deadline());
        if self.active() == 0 {
            return link;
        }
        let to = self.cfg.timeouts;
        let ms = |x: u64| x.saturating_mul(1_000_000);
        let mut first = u64::MAX;
        for t in self.conns.tcbs().iter().filter(|t| t.in_use()) {
            let heard = t.tcp.last_heard_ns();
            let mut at = heard.saturating_add(ms(to.stall_ms));
            if let Some(d) = t.tcp.timer().deadline() {
                at = at.min(d);
            }
            if t.app.request_start_ns != 0 {
                at = at.min(t.app.request_start_ns.saturating_add(ms(to.request_ms)));
            }
            if t.app.rx_len == 0 {
                at = at.min(heard.saturating_add(ms(to.idle_ms)));
            }
            first = first.min(at);
        }
        if first == u64::MAX || link < first {
            // The DHCP client's or the IPv6 link's deadline (`u64::MAX` without them).
            link
        } else {
            // Nothing fires before the next scan (the 10 ms tick, or sooner for a loss
            // probe: `next_timer_ns`).
            first.max(self.next_timer_ns())
        }
    }
}
