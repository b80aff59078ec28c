//! `ip=dhcp`: the kernel's address from a DHCP server, with the engine's client
//! (`bareweb_engine::dhcp`).
//!
//! Before serving, [`acquire`] runs the client on core 0 over every queue pair of the
//! first NIC (a reply may come in on any of them) until a lease is bound, saying on the
//! console what it does; the servers then start on that address. While serving, core 0's
//! server owns the client (renewing at T1, rebinding at T2, discovering again when the
//! lease is lost); the other cores' servers follow the address it publishes and hand it
//! the replies their queues receive (docs/architecture.md, "DHCP"). [`Watch`] prints each
//! change on the console from core 0's loop.

use bareweb_engine::dhcp::shared::{Event, Shared};
use bareweb_engine::dhcp::wire::MessageType;
use bareweb_engine::dhcp::{Actions, Change, Client, Lease, Transmit};
use bareweb_engine::nic::{Clock, Nic, RxFrame, RxRing, TxRing};
use bareweb_engine::wire::EthernetAddress;

use crate::arch::clock::TscClock;
use crate::kprintln;

/// Random bits for the client (transaction ids, jitter).
pub fn seed() -> u64 {
    crate::arch::cpu::rdrand().unwrap_or_else(crate::arch::cpu::rdtsc)
}

/// Sends `t` (the client's last message) on `tx`.
fn send(tx: &mut impl TxRing, client: &Client, t: &Transmit) {
    if let Some(slot) = tx.slot() {
        let n = client.frame(t, slot);
        let _ = tx.post(n, &[]);
    }
    tx.flush();
}

/// Applies `a` (sending on `tx`); a lease acquired is published and returned.
fn act(tx: &mut impl TxRing, client: &Client, a: Actions, shared: &Shared) -> Option<Lease> {
    if let Some(t) = a.send {
        send(tx, client, &t);
    }
    shared.record(client.state(), &client.counts);
    match a.change {
        Some(Change::Acquired(l)) => {
            shared.publish(Some(&l), client.lease_end_ns(), Event::Acquired);
            Some(l)
        }
        _ => None,
    }
}

/// Runs `client` over `queues` (a reply is answered on the queue it came in on) until it
/// holds a lease; publishes it in `shared` and returns it. Waits as long as it takes: a
/// server with no address serves no one.
pub fn acquire<N: Nic>(
    queues: &mut [N],
    mac: EthernetAddress,
    clock: &TscClock,
    client: &mut Client,
    shared: &Shared,
) -> Lease {
    kprintln!("dhcp: discovering (ip=dhcp) as {mac}");
    let t0 = clock.now_ns();
    let mut frames = [RxFrame { buf: 0, len: 0 }; 16];
    let mut sent = 0u32;
    loop {
        let now = clock.now_ns();
        let mut bound = None;
        for q in queues.iter_mut() {
            let (rx, tx) = q.split();
            let n = rx.burst(&mut frames);
            for f in &frames[..n] {
                if let Some(a) = client.on_frame(rx.bytes(f), now) {
                    bound = bound.or(act(tx, client, a, shared));
                }
                rx.recycle(*f);
            }
        }
        if let Some(l) = bound {
            kprintln!(
                "dhcp: {} (after {} ms)",
                Bound(&l),
                (clock.now_ns() - t0) / 1_000_000
            );
            return l;
        }
        if now >= client.deadline() {
            let a = client.on_timeout(now);
            if let Some(t) = &a.send {
                sent += 1;
                if sent > 1 {
                    kprintln!(
                        "dhcp: no lease yet ({} answers refused): {} again",
                        client.counts.refused(),
                        if t.kind == MessageType::Discover {
                            "DISCOVER"
                        } else {
                            "REQUEST"
                        }
                    );
                }
            }
            if let Some(q) = queues.first_mut() {
                let _ = act(q.split().1, client, a, shared);
            }
        }
        core::hint::spin_loop();
    }
}

/// A lease as the console says it.
struct Bound<'a>(&'a Lease);

impl core::fmt::Display for Bound<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let l = self.0;
        write!(f, "{}/{} router ", l.address, l.prefix_len)?;
        match l.router {
            Some(r) => write!(f, "{r}")?,
            None => f.write_str("none")?,
        }
        if l.lease_s == u32::MAX {
            write!(f, " lease infinite from {}", l.server)
        } else {
            write!(
                f,
                " lease {} s from {} (renew at {} s)",
                l.lease_s, l.server, l.t1_s
            )
        }
    }
}

/// Core 0's watch on the published address: a console line for each change.
pub struct Watch {
    shared: &'static Shared,
    seen: u32,
}

impl Watch {
    /// Watching `shared` from its current state on.
    pub fn new(shared: &'static Shared) -> Watch {
        Watch {
            shared,
            seen: shared.generation(),
        }
    }

    /// Says what changed since the last call, if anything.
    pub fn check(&mut self) {
        let g = self.shared.generation();
        if g == self.seen {
            return;
        }
        self.seen = g;
        let s = self.shared;
        match (s.last_event(), s.lease()) {
            (Event::Acquired, Some(l)) => kprintln!("dhcp: {}", Bound(&l)),
            (Event::Renewed, Some(l)) => kprintln!("dhcp: renewed {}", Bound(&l)),
            (Event::Expired | Event::Nak, _) => kprintln!(
                "dhcp: lost {} ({}): not answering on it; discovering",
                s.lost_address(),
                if s.last_event() == Event::Nak {
                    "NAK"
                } else {
                    "lease expired"
                }
            ),
            _ => {}
        }
    }
}
