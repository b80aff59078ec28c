//! The DNS stub resolver (RFC 1035 §7; RFC 5452's defences): a host name to its
//! addresses, asked of the configured servers (`--dns`, DHCP's option 6, DHCPv6 or a
//! router's RDNSS), as a state machine with no socket, clock or allocation. The owner
//! calls [`Resolver::resolve`], sends what [`Resolver::poll_transmit`] writes as a UDP
//! datagram, hands back every datagram for a port [`Resolver::owns_port`] names
//! ([`Resolver::on_datagram`]), polls again at [`Resolver::deadline`], and collects the
//! result with [`Resolver::take`].
//!
//! - **No recursion of its own**: every query asks for recursion (RD) from the server.
//! - **Answers are checked** by source (a server this query was sent to, from that
//!   server's port), destination port, transaction ID and question ([`wire`]); a
//!   response failing any check is counted and dropped, and the query goes on waiting,
//!   so a forger must guess both a random 16-bit ID and a random port out of 16,384
//!   (RFC 5452 §9.2). IDs and ports come from SipHash over a counter, keyed by the
//!   platform's random seed.
//! - **Retries**: the first try waits one second, each further try twice as long (at most
//!   four), across the servers in turn from the one that answered last; a server that
//!   fails (SERVFAIL, REFUSED, a truncated or malformed answer to our question) passes
//!   the query to the next at once. After four tries the query fails with
//!   [`Failure::Timeout`] or the last server's failure.
//! - **TTLs honoured**: answers are cached for their TTL (at most a day); negative answers
//!   (RFC 2308) for the SOA's TTL, at most five minutes. A TTL of 0 is used once and not
//!   kept; an answer from the cache carries the TTL left. The cache holds [`CACHE`]
//!   entries; the one that expires first makes room.

pub mod wire;

use core::hash::Hasher;

use siphasher::sip::SipHasher13;

use crate::wire::Ipv6Address;
pub use wire::{Answer, Name, NameError, Type};

const SEC: u64 = 1_000_000_000;

/// Servers asked in turn.
pub const MAX_SERVERS: usize = 3;
/// Queries in flight at once.
pub const QUERIES: usize = 4;
/// Answers kept.
pub const CACHE: usize = 8;
/// Longest an answer is kept, in seconds, whatever its TTL.
pub const MAX_TTL: u32 = 86_400;
/// Longest a negative answer is kept, in seconds.
pub const MAX_NEGATIVE_TTL: u32 = 300;
/// The first local port of the range queries are sent from (RFC 6056's dynamic range).
pub const PORT_BASE: u16 = 49_152;
/// The servers a query remembers having asked (more than [`MAX_SERVERS`]: the list may
/// change while it waits).
const ASKED: usize = 2 * MAX_SERVERS;

/// A DNS server: its address (an IPv4 one IPv4-mapped) and port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    /// Its address.
    pub addr: Ipv6Address,
    /// Its port (53 unless configured).
    pub port: u16,
}

/// Retry timing (the defaults above).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The first try's wait.
    pub first_ns: u64,
    /// The longest wait (each try doubles the last).
    pub max_ns: u64,
    /// Tries in all, across the servers.
    pub tries: u32,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            first_ns: SEC,
            max_ns: 4 * SEC,
            tries: 4,
        }
    }
}

/// Why a name gave no address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No server is configured.
    NoServer,
    /// No server answered within the tries.
    Timeout,
    /// The name does not exist or has no address of the type asked for.
    NoAddress,
    /// The last server asked failed with this RCODE.
    Server(u8),
    /// The last server's answer did not fit in 512 octets.
    Truncated,
    /// The last server's answer was malformed.
    Malformed,
    /// The ticket was already taken or cancelled.
    Forgotten,
    /// The owner's buffer could not hold the query ([`wire::MAX_MESSAGE`] always can).
    Buffer,
}

impl Failure {
    /// A short reason, for the console.
    pub fn reason(self) -> &'static str {
        match self {
            Failure::NoServer => "no DNS server configured",
            Failure::Timeout => "no DNS server answered",
            Failure::NoAddress => "the name has no address",
            Failure::Server(2) => "the DNS server failed (SERVFAIL)",
            Failure::Server(5) => "the DNS server refused (REFUSED)",
            Failure::Server(_) => "the DNS server answered with an error",
            Failure::Truncated => "the DNS answer was truncated",
            Failure::Malformed => "the DNS answer was malformed",
            Failure::Forgotten => "the lookup was forgotten",
            Failure::Buffer => "the buffer for the DNS query was too short",
        }
    }
}

/// What [`Resolver::resolve`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Known now (from the cache, or no server to ask).
    Ready(Result<Answer, Failure>),
    /// Asked: collect it with [`Resolver::take`].
    Pending(Ticket),
}

/// A query in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    slot: usize,
    generation: u32,
}

/// All queries' slots are taken: try again after one is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// A datagram to send: the query is at the front of the buffer given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// The server.
    pub to: Server,
    /// The local port to send from.
    pub from_port: u16,
    /// The datagram's length.
    pub len: usize,
}

/// What the resolver did, for stats.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Queries sent, retries included.
    pub sent: u64,
    /// Lookups answered from the cache.
    pub cached: u64,
    /// Answers with addresses.
    pub answered: u64,
    /// Negative answers (no such name, no such address).
    pub negative: u64,
    /// Responses dropped: another source, ID or question (RFC 5452).
    pub not_ours: u64,
    /// Responses from the server that were malformed, truncated or a server failure.
    pub failed: u64,
    /// Queries that ran out of tries.
    pub timeouts: u64,
}

#[derive(Clone, Copy)]
enum State {
    Free,
    Waiting,
    Done(Result<Answer, Failure>),
}

#[derive(Clone, Copy)]
struct Slot {
    state: State,
    generation: u32,
    name: Name,
    qtype: Type,
    id: u16,
    port: u16,
    /// Tries sent so far.
    sent: u32,
    /// The server (by index) its first try went to.
    start: usize,
    /// The servers this query has been sent to (the latest [`ASKED`]).
    asked: [Option<Server>; ASKED],
    /// When to send the next try (or give up).
    deadline: u64,
    /// The last failure a server gave, reported if the tries run out.
    last: Failure,
}

#[derive(Clone, Copy)]
struct Entry {
    name: Name,
    qtype: Type,
    result: Result<Answer, Failure>,
    expires: u64,
}

/// The resolver.
pub struct Resolver {
    servers: [Option<Server>; MAX_SERVERS],
    /// The server the next query starts with (the one that answered last).
    first: usize,
    hasher_keys: (u64, u64),
    counter: u64,
    timing: Timing,
    slots: [Slot; QUERIES],
    cache: [Option<Entry>; CACHE],
    counts: Counts,
}

impl Resolver {
    /// A resolver with no server yet. `seed`: random bits from the platform (IDs, ports).
    pub fn new(seed: [u64; 2], timing: Timing) -> Resolver {
        let blank = Slot {
            state: State::Free,
            generation: 0,
            name: Name::EMPTY,
            qtype: Type::A,
            id: 0,
            port: 0,
            sent: 0,
            start: 0,
            asked: [None; ASKED],
            deadline: 0,
            last: Failure::Timeout,
        };
        Resolver {
            servers: [None; MAX_SERVERS],
            first: 0,
            hasher_keys: (seed[0], seed[1]),
            counter: 0,
            timing,
            slots: [blank; QUERIES],
            cache: [None; CACHE],
            counts: Counts::default(),
        }
    }

    /// The servers to ask, in order (the first [`MAX_SERVERS`] kept). Queries in flight
    /// go on with the new list; answers from a server no longer listed still count if the
    /// query was sent to it.
    pub fn set_servers(&mut self, servers: &[Server]) {
        self.servers = [None; MAX_SERVERS];
        for (d, s) in self.servers.iter_mut().zip(servers) {
            *d = Some(*s);
        }
        self.first = 0;
    }

    /// The servers configured.
    pub fn servers(&self) -> impl Iterator<Item = Server> + '_ {
        self.servers.iter().flatten().copied()
    }

    /// What the resolver did.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    fn random(&mut self) -> u64 {
        let mut h = SipHasher13::new_with_keys(self.hasher_keys.0, self.hasher_keys.1);
        h.write_u64(self.counter);
        self.counter += 1;
        h.finish()
    }

    /// `name`'s addresses of type `qtype`: from the cache, or asked of the servers.
    pub fn resolve(&mut self, name: &Name, qtype: Type, now: u64) -> Result<Lookup, Busy> {
        if let Some(e) = self
            .cache
            .iter()
            .flatten()
            .find(|e| e.name == *name && e.qtype == qtype && e.expires > now)
        {
            self.counts.cached += 1;
            // The TTL left, not the one first given.
            let left = ((e.expires - now) / SEC).min(u32::MAX as u64) as u32;
            return Ok(Lookup::Ready(e.result.map(|a| Answer { ttl: left, ..a })));
        }
        if self.servers[0].is_none() {
            return Ok(Lookup::Ready(Err(Failure::NoServer)));
        }
        let slot = self
            .slots
            .iter()
            .position(|s| matches!(s.state, State::Free))
            .ok_or(Busy)?;
        let r = self.random();
        // One port per query, unlike any other query's in flight.
        let mut port = PORT_BASE + (r as u16 & 0x3FFF);
        while self.owns_port(port) {
            port = PORT_BASE + (port.wrapping_add(1) & 0x3FFF);
        }
        let s = &mut self.slots[slot];
        s.state = State::Waiting;
        s.generation = s.generation.wrapping_add(1);
        s.name = *name;
        s.qtype = qtype;
        s.id = (r >> 16) as u16;
        s.port = port;
        s.sent = 0;
        s.start = self.first;
        s.asked = [None; ASKED];
        s.deadline = now;
        s.last = Failure::Timeout;
        Ok(Lookup::Pending(Ticket {
            slot,
            generation: s.generation,
        }))
    }

    /// Whether a query waits for datagrams on local port `port`.
    pub fn owns_port(&self, port: u16) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s.state, State::Waiting) && s.port == port)
    }

    /// When [`Resolver::poll_transmit`] next has something to do.
    pub fn deadline(&self) -> Option<u64> {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, State::Waiting))
            .map(|s| s.deadline)
            .min()
    }

    fn server_count(&self) -> usize {
        self.servers.iter().flatten().count()
    }

    /// The next query (or retry) due at `now`, written to `buf`; queries out of tries end
    /// here. Call until it gives `None`.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<Transmit> {
        let servers = self.server_count();
        for i in 0..QUERIES {
            let s = self.slots[i];
            if !matches!(s.state, State::Waiting) || s.deadline > now {
                continue;
            }
            if s.sent >= self.timing.tries || servers == 0 {
                let failure = if servers == 0 {
                    Failure::NoServer
                } else {
                    s.last
                };
                if failure == Failure::Timeout {
                    self.counts.timeouts += 1;
                }
                self.slots[i].state = State::Done(Err(failure));
                continue;
            }
            let index = (s.start + s.sent as usize) % servers;
            let Some(to) = self.servers[index] else {
                continue;
            };
            let Some(len) = wire::write_query(s.id, &s.name, s.qtype, buf) else {
                self.slots[i].state = State::Done(Err(Failure::Buffer));
                continue;
            };
            // first << sent, without wrapping.
            let first = self.timing.first_ns;
            let wait = if s.sent < first.leading_zeros() {
                first << s.sent
            } else {
                u64::MAX
            }
            .min(self.timing.max_ns);
            let slot = &mut self.slots[i];
            slot.sent += 1;
            if !slot.asked.contains(&Some(to)) {
                slot.asked.rotate_right(1);
                slot.asked[0] = Some(to);
            }
            slot.deadline = now.saturating_add(wait);
            self.counts.sent += 1;
            return Some(Transmit {
                to,
                from_port: s.port,
                len,
            });
        }
        None
    }

    /// A UDP datagram from `from` to local port `port`. Returns whether a query waited on
    /// that port (the datagram is then the resolver's, used or dropped).
    pub fn on_datagram(&mut self, from: Server, port: u16, payload: &[u8], now: u64) -> bool {
        let Some(i) = self
            .slots
            .iter()
            .position(|s| matches!(s.state, State::Waiting) && s.port == port)
        else {
            return false;
        };
        let s = self.slots[i];
        if !s.asked.contains(&Some(from)) {
            self.counts.not_ours += 1;
            return true;
        }
        let result = match wire::read_response(payload, s.id, &s.name, s.qtype) {
            Err(wire::Error::NotOurs) => {
                self.counts.not_ours += 1;
                return true;
            }
            Ok(answer) => {
                self.counts.answered += 1;
                self.remember(&s, Ok(answer), answer.ttl.min(MAX_TTL), now);
                Ok(answer)
            }
            Err(wire::Error::NoAddress { ttl }) => {
                self.counts.negative += 1;
                let r = Err(Failure::NoAddress);
                self.remember(&s, r, ttl.min(MAX_NEGATIVE_TTL), now);
                r
            }
            Err(e) => {
                self.counts.failed += 1;
                let f = match e {
                    wire::Error::Truncated => Failure::Truncated,
                    wire::Error::Server(rcode) => Failure::Server(rcode),
                    _ => Failure::Malformed,
                };
                // The next server is asked at once.
                let slot = &mut self.slots[i];
                slot.last = f;
                slot.deadline = now;
                return true;
            }
        };
        // The server that answered starts the next query.
        if let Some(k) = self.servers.iter().position(|v| *v == Some(from)) {
            self.first = k;
        }
        self.slots[i].state = State::Done(result);
        true
    }

    fn remember(&mut self, s: &Slot, result: Result<Answer, Failure>, ttl: u32, now: u64) {
        if ttl == 0 {
            return;
        }
        let entry = Entry {
            name: s.name,
            qtype: s.qtype,
            result,
            expires: now.saturating_add(ttl as u64 * SEC),
        };
        // The same question's entry, else the one that expires first (a free slot counts as
        // expired at 0, an expired entry before any live one).
        let same = |e: &Option<Entry>| e.is_some_and(|e| e.name == s.name && e.qtype == s.qtype);
        let at = self.cache.iter().position(same).unwrap_or_else(|| {
            let expires = |k: &usize| self.cache[*k].map_or(0, |e| e.expires);
            (0..CACHE).min_by_key(expires).unwrap_or(0)
        });
        self.cache[at] = Some(entry);
    }

    /// The result of a query, once known (`None` while it waits); the ticket is spent.
    pub fn take(&mut self, t: Ticket) -> Option<Result<Answer, Failure>> {
        let s = self.slots.get_mut(t.slot)?;
        if s.generation != t.generation {
            return Some(Err(Failure::Forgotten));
        }
        match s.state {
            State::Waiting => None,
            State::Free => Some(Err(Failure::Forgotten)),
            State::Done(r) => {
                s.state = State::Free;
                Some(r)
            }
        }
    }

    /// Gives up a query: its slot is free and answers to it are dropped.
    pub fn cancel(&mut self, t: Ticket) {
        if let Some(s) = self.slots.get_mut(t.slot) {
            if s.generation == t.generation {
                s.state = State::Free;
            }
        }
    }
}

#[cfg(test)]
mod tests;
