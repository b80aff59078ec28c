//! The UDP paper's request ids in network-core mode: the network core pops an id from its stack
//! when a UDP request arrives, tags the frame with it on the HTTP core's CLIST, and pushes
//! it back once it has sent the answer's last packet to the NIC (§5: "When a packet
//! arrives in the BSP, a request id is popped from the stack. When a request is complete,
//! the request id is pushed back"). The ids out at once are the paper's max parallel
//! (Fig. 10), and the time an id is out is the server's processing time (§6.4).
//!
//! ```text
//!  core 0 Dispatch: pop id ──► CLIST slot (frame, tag) ──► HTTP core's Server answers,
//!                                                          DLIST frames, then
//!  core 0 Drain: DLIST frames to the NIC ◄── done ring (tag, frames pushed before it)
//!     once the DLIST was drained up to there: (tag, now) ──► Dispatch pushes the id back
//! ```
//!
//! Every ring here has room for every id, so nothing can be lost: an id is in exactly one
//! of the stack, a CLIST slot, an HTTP core's hands, a done ring, the released ring.

use alloc::vec;
use alloc::vec::Vec;

use crate::ring::{Consumer, Producer};
use crate::udp::ids::IdStack;

/// An HTTP core finished the request tagged `tag`, after `pos` frames on its DLIST.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Done {
    /// The request id.
    pub tag: u16,
    /// Frames the HTTP core had pushed on its DLIST when it finished (its answer's last).
    pub pos: u64,
}

/// Core 0's stack and what it measured.
pub struct CoreIds {
    stack: IdStack,
    arrived: Vec<u64>,
    released: Consumer<(u16, u64)>,
    /// Ids not to be had (a request dropped).
    pub no_id: u64,
    /// Requests completed (ids given back).
    pub completed: u64,
    /// Sum of the time ids were out.
    pub time_sum_ns: u64,
    /// Longest time an id was out.
    pub time_max_ns: u64,
}

impl CoreIds {
    /// A stack of `ids`; `released` brings ids back from the drain.
    pub fn new(ids: u16, released: Consumer<(u16, u64)>) -> CoreIds {
        CoreIds {
            stack: IdStack::new(ids),
            arrived: vec![0; usize::from(ids) + 1],
            released,
            no_id: 0,
            completed: 0,
            time_sum_ns: 0,
            time_max_ns: 0,
        }
    }

    /// An id for a request arriving at `now`, if one is free.
    pub fn take(&mut self, now: u64) -> Option<u16> {
        match self.stack.pop() {
            Some(id) => {
                self.arrived[usize::from(id)] = now;
                Some(id)
            }
            None => {
                self.no_id += 1;
                None
            }
        }
    }

    /// Gives back an id whose request never left core 0 (its CLIST was full).
    pub fn untake(&mut self, id: u16) {
        self.stack.push(id);
    }

    /// Takes back the ids the drain released.
    pub fn apply_released(&mut self) {
        while let Some((id, at)) = self.released.take() {
            if let Some(t0) = self.arrived.get(usize::from(id)).copied() {
                let t = at.saturating_sub(t0);
                self.time_sum_ns = self.time_sum_ns.saturating_add(t);
                self.time_max_ns = self.time_max_ns.max(t);
                self.completed += 1;
            }
            self.stack.push(id);
        }
    }

    /// Most ids out at once.
    pub fn high(&self) -> u64 {
        self.stack.high as u64
    }

    /// Ids out now.
    pub fn out(&self) -> u64 {
        self.stack.out() as u64
    }
}

/// The drain's side: per HTTP core, its done ring and the frames drained from its DLIST.
pub struct DrainIds {
    pub(super) done: Vec<(Consumer<Done>, u64)>,
    pub(super) released: Producer<(u16, u64)>,
    /// Releases that found the released ring full (cannot happen: it has room for all).
    pub lost: u64,
}

impl DrainIds {
    /// `k`'s DLIST had `n` more frames drained.
    pub fn drained(&mut self, k: usize, n: u64) {
        if let Some(d) = self.done.get_mut(k) {
            d.1 += n;
        }
    }

    /// Releases every finished request whose frames have all been drained, stamped with
    /// `now()` (read once, only when there is one).
    pub fn release(&mut self, now: impl Fn() -> u64) {
        let mut t = None;
        for (ring, popped) in &mut self.done {
            while let Some(d) = ring.with_front(|d| *d) {
                if d.pos > *popped {
                    break;
                }
                ring.pop();
                let at = *t.get_or_insert_with(&now);
                if self.released.push((d.tag, at)).is_err() {
                    self.lost += 1;
                }
            }
        }
    }
}
