//! Choosing the send NIC (the paper's send-id), one chooser per server: a connection gets
//! its NIC when its SYN opens a TCB and keeps it until it ends or its NIC's link goes
//! down. The chooser knows only counts: connections and response bytes per NIC, and which
//! NICs send now; the server keeps the send-id in each TCB and each client's NIC in its
//! per-address table.
//!
//! - [`Policy::PerClient`] (the paper's §4.1 and Linux's `balance-tlb`, which hashes each
//!   destination to one slave): a client with open connections keeps its NIC for new
//!   ones; a new client gets the NIC with the fewest connections, so n clients share the
//!   NICs n/2 each. A client that has closed everything may get another NIC next time
//!   (the paper's third client, served half by each NIC).
//! - [`Policy::Size`] (the paper's §3.2 alternative): frames without payload (SYN-ACK,
//!   ACKs, FIN, RST) leave on the *control* NIC (the receive NIC when it sends, else the
//!   first sender); connections' data on the other senders, fewest connections first.
//! - [`Policy::LeastQueued`]: the NIC whose connections have the fewest response bytes
//!   not yet acknowledged (a response counts whole until its last byte is acknowledged),
//!   then the fewest connections.
//!
//! Ties go round the set, so two equal NICs alternate. Nothing here allocates.

use super::{Policy, MAX_NICS};

/// A server's send-NIC bookkeeping.
#[derive(Debug, Clone)]
pub struct Chooser {
    policy: Policy,
    n: u8,
    /// NICs that send now.
    senders: u8,
    /// The control NIC of [`Policy::Size`].
    control: u8,
    /// Open connections per NIC.
    conns: [u32; MAX_NICS],
    /// Response bytes queued and not yet wholly acknowledged, per NIC.
    waiting: [u64; MAX_NICS],
    /// Where the next round of ties starts.
    next: u8,
}

impl Chooser {
    /// A chooser for `n` NICs (at most [`MAX_NICS`]) under `policy`; `senders` and
    /// `receive` as in [`Chooser::set_senders`].
    pub fn new(policy: Policy, n: usize, senders: u8, receive: u8) -> Chooser {
        let mut c = Chooser {
            policy,
            n: n.clamp(1, MAX_NICS) as u8,
            senders: 1,
            control: 0,
            conns: [0; MAX_NICS],
            waiting: [0; MAX_NICS],
            next: 0,
        };
        c.set_senders(senders, receive);
        c
    }

    /// The NICs that send now (never empty: [`super::senders`] keeps one).
    pub fn set_senders(&mut self, senders: u8, receive: u8) {
        let set = senders & super::all(usize::from(self.n));
        self.senders = if set == 0 { 1 } else { set };
        let rx = 1u8 << (receive & 7);
        self.control = if self.senders & rx != 0 {
            receive
        } else {
            self.senders.trailing_zeros() as u8
        };
    }

    /// The NICs that send now.
    pub fn senders(&self) -> u8 {
        self.senders
    }

    /// Whether NIC `k` sends now.
    pub fn sends(&self, k: u8) -> bool {
        k < 8 && self.senders & (1 << k) != 0
    }

    /// The NICs a connection's data may be given to: for [`Policy::Size`] every sender but
    /// the control NIC (unless it is the only one), for the others every sender.
    fn data_senders(&self) -> u8 {
        match self.policy {
            Policy::Size => {
                let rest = self.senders & !(1 << self.control);
                if rest == 0 {
                    self.senders
                } else {
                    rest
                }
            }
            _ => self.senders,
        }
    }

    /// The send NIC for a new connection. `client` is the NIC the connection's client is
    /// on already (its other connections'), if any: [`Policy::PerClient`] keeps it.
    pub fn pick(&mut self, client: Option<u8>) -> u8 {
        let set = self.data_senders();
        if self.policy == Policy::PerClient {
            if let Some(k) = client.filter(|&k| k < 8 && set & (1 << k) != 0) {
                return k;
            }
        }
        let key = |k: usize| match self.policy {
            Policy::LeastQueued => (self.waiting[k], self.conns[k]),
            _ => (u64::from(self.conns[k]), 0),
        };
        let n = usize::from(self.n);
        let mut best: Option<(usize, (u64, u32))> = None;
        for i in 0..n {
            let k = (usize::from(self.next) + i) % n;
            if set & (1 << k) == 0 {
                continue;
            }
            let v = key(k);
            if best.is_none_or(|(_, b)| v < b) {
                best = Some((k, v));
            }
        }
        let k = best.map_or(0, |(k, _)| k);
        self.next = ((k + 1) % n) as u8;
        k as u8
    }

    /// The NIC a frame of a connection with send-id `send` leaves from: `send`, except
    /// under [`Policy::Size`] for a frame without payload (the control NIC).
    pub fn frame_nic(&self, send: u8, has_payload: bool) -> u8 {
        if self.policy == Policy::Size && !has_payload {
            self.control
        } else {
            send
        }
    }

    /// The NIC for a frame that belongs to no connection (a RST for no connection, a SYN
    /// cookie's SYN-ACK, an echo reply): the control NIC, which sends now.
    pub fn stateless(&self) -> u8 {
        self.control
    }

    /// The NIC for one datagram of a protocol without connections (the UDP protocol), to a
    /// client whose address hashes to `client_hash`, carrying `len` payload bytes: by
    /// client ([`Policy::PerClient`]: one client's datagrams on one NIC, so they are not
    /// reordered), by size (small ones on the control NIC), or the NIC with the fewest
    /// bytes waiting.
    pub fn datagram(&self, client_hash: u32, len: usize) -> u8 {
        let set = self.data_senders();
        match self.policy {
            Policy::Size if len < SMALL_DATAGRAM => self.control,
            Policy::LeastQueued => (0..usize::from(self.n))
                .filter(|&k| set & (1 << k) != 0)
                .min_by_key(|&k| (self.waiting[k], self.conns[k]))
                .map_or(self.control, |k| k as u8),
            _ => nth_bit(set, client_hash as usize % set.count_ones().max(1) as usize),
        }
    }

    /// A connection was given NIC `k`.
    pub fn opened(&mut self, k: u8) {
        if let Some(c) = self.conns.get_mut(usize::from(k)) {
            *c += 1;
        }
    }

    /// A connection on NIC `k` ended (or moved off it).
    pub fn closed(&mut self, k: u8) {
        if let Some(c) = self.conns.get_mut(usize::from(k)) {
            *c = c.saturating_sub(1);
        }
    }

    /// A response of `bytes` was queued on a connection on NIC `k`.
    pub fn queued(&mut self, k: u8, bytes: u32) {
        if let Some(w) = self.waiting.get_mut(usize::from(k)) {
            *w += u64::from(bytes);
        }
    }

    /// A response of `bytes` on NIC `k` is acknowledged whole (or its connection ended).
    pub fn acked(&mut self, k: u8, bytes: u32) {
        if let Some(w) = self.waiting.get_mut(usize::from(k)) {
            *w = w.saturating_sub(u64::from(bytes));
        }
    }

    /// Open connections on NIC `k`.
    pub fn conns(&self, k: usize) -> u32 {
        self.conns.get(k).copied().unwrap_or(0)
    }

    /// Response bytes waiting on NIC `k`.
    pub fn waiting(&self, k: usize) -> u64 {
        self.waiting.get(k).copied().unwrap_or(0)
    }
}

/// Below this many payload bytes a datagram counts as small for [`Policy::Size`] (a
/// request or an acknowledgment, not data).
pub const SMALL_DATAGRAM: usize = 128;

/// The index of the `i`-th set bit of `set` (the lowest if out of range).
fn nth_bit(set: u8, i: usize) -> u8 {
    (0..8u8)
        .filter(|k| set & (1 << k) != 0)
        .nth(i)
        .unwrap_or(set.trailing_zeros().min(7) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_client_gives_each_new_client_the_emptier_nic_and_keeps_it() {
        let mut c = Chooser::new(Policy::PerClient, 2, 0b11, 0);
        // The paper's Fig. 7: client 1 on one NIC, client 2 on the other.
        let a = c.pick(None);
        c.opened(a);
        let b = c.pick(None);
        c.opened(b);
        assert_ne!(a, b);
        // More connections of client 1 stay on its NIC, however unbalanced.
        for _ in 0..5 {
            assert_eq!(c.pick(Some(a)), a);
            c.opened(a);
        }
        // A third client goes where there are fewer connections.
        assert_eq!(c.pick(None), b);
        // A client whose NIC no longer sends gets another.
        c.set_senders(1 << b, 0);
        assert_eq!(c.pick(Some(a)), b);
    }

    #[test]
    fn n_connections_share_the_nics_n_over_2() {
        let mut c = Chooser::new(Policy::PerClient, 2, 0b11, 0);
        for _ in 0..10 {
            let k = c.pick(None);
            c.opened(k);
        }
        assert_eq!((c.conns(0), c.conns(1)), (5, 5));
        // Three NICs, three at a time: one each.
        let mut c = Chooser::new(Policy::PerClient, 3, 0b111, 0);
        let picks: Vec<u8> = (0..3)
            .map(|_| {
                let k = c.pick(None);
                c.opened(k);
                k
            })
            .collect();
        assert_eq!(picks, [0, 1, 2]);
    }

    #[test]
    fn size_sends_control_frames_on_one_nic_and_data_on_the_others() {
        let mut c = Chooser::new(Policy::Size, 2, 0b11, 0);
        for _ in 0..4 {
            let k = c.pick(None);
            assert_eq!(k, 1, "data never on the control NIC while another sends");
            c.opened(k);
            assert_eq!(c.frame_nic(k, false), 0);
            assert_eq!(c.frame_nic(k, true), 1);
        }
        assert_eq!(c.stateless(), 0);
        // Split: the receive NIC does not send; the control NIC is the first sender.
        let mut c = Chooser::new(Policy::Size, 3, 0b110, 0);
        assert_eq!(c.stateless(), 1);
        assert_eq!(c.pick(None), 2);
        // One sender left: everything on it.
        c.set_senders(0b001, 0);
        assert_eq!((c.pick(None), c.frame_nic(0, false)), (0, 0));
    }

    #[test]
    fn least_queued_follows_the_bytes_waiting() {
        let mut c = Chooser::new(Policy::LeastQueued, 2, 0b11, 0);
        let a = c.pick(None);
        c.opened(a);
        c.queued(a, 1 << 20);
        let b = c.pick(None);
        assert_ne!(a, b);
        c.opened(b);
        c.queued(b, 4096);
        // b has fewer bytes waiting although it has as many connections.
        assert_eq!(c.pick(None), b);
        c.acked(a, 1 << 20);
        assert_eq!(c.pick(None), a);
        assert_eq!(c.waiting(usize::from(a)), 0);
        // Never below zero.
        c.acked(a, 10);
        c.closed(a);
        c.closed(a);
        assert_eq!((c.waiting(usize::from(a)), c.conns(usize::from(a))), (0, 0));
    }

    #[test]
    fn ties_alternate_and_only_senders_are_picked() {
        let mut c = Chooser::new(Policy::LeastQueued, 3, 0b101, 0);
        let picks: Vec<u8> = (0..4).map(|_| c.pick(None)).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
        assert!(!c.sends(1));
    }

    #[test]
    fn datagrams_are_spread_by_client_size_or_queue() {
        let c = Chooser::new(Policy::PerClient, 2, 0b11, 0);
        assert_eq!(
            c.datagram(7, 1000),
            c.datagram(7, 10),
            "one client, one NIC"
        );
        assert_ne!(c.datagram(0, 1000), c.datagram(1, 1000));
        let c = Chooser::new(Policy::Size, 2, 0b11, 0);
        assert_eq!(c.datagram(3, 40), 0);
        assert_eq!(c.datagram(3, 1400), 1);
        let mut c = Chooser::new(Policy::LeastQueued, 2, 0b11, 0);
        c.queued(0, 5000);
        assert_eq!(c.datagram(0, 1400), 1);
    }
}
