//! The transmission control block: everything one connection owns, in a fixed array slot
//! of a [`Table`](super::table::Table): the TCP state machine ([`Connection`]), the
//! application's part (`A`: for the server the request being received and the response
//! being sent, for the client the fetch running on it), the peer's addresses and the
//! links into the owner's tables. The server checks its TCB's size at compile time, because it allocates
//! `--tcbs` of them at start ([`TCB_SIZE_MAX`]).
//!
//! A TCB never points at memory outside the site image and its owner's slabs: the server's
//! request bytes live in the connection's receive slab, the response head in its head
//! slab, and the body is a slice of the site image. Because a response is immutable, any
//! sequence range of it can be regenerated for retransmission; there is no retransmission
//! queue.

use super::conn::Connection;
use super::port_table::{Peer, NONE};
use crate::wire::EthernetAddress;

/// What a connection table needs from the application state it keeps in each TCB.
pub trait App {
    /// The state of an unused TCB (and of a new connection before the application has
    /// seen it).
    const IDLE: Self;
}

/// One connection, with application state `A`.
#[derive(Debug, Clone)]
pub struct Tcb<A> {
    /// The TCP state machine.
    pub tcp: Connection,
    /// The application on top of it.
    pub app: A,
    /// The connection's key in the port table: the peer's address and the port that tells
    /// this table's connections apart (the peer's for a server, our own for a client).
    pub peer: Peer,
    /// MAC to send to (the sender of the last acceptable segment: the peer, or the
    /// gateway).
    pub peer_mac: EthernetAddress,
    /// Port-table overflow chain link.
    pub chain: u32,
    /// On the run list.
    pub queued: bool,
    /// On the owner's list of connections that pacing holds back.
    pub paced: bool,
    /// The NIC of the owner's set this connection's frames leave from (the bonding
    /// paper's send-id, chosen at its SYN; 0 on one NIC).
    pub send: u8,
    /// The home slot of the peer's address in the owner's per-address count
    /// ([`Place::home`]), for removing the connection's count without hashing the address
    /// again (0 for an owner that keeps none).
    ///
    /// [`Place::home`]: super::per_ip::Place::home
    pub per_ip_home: u32,
}

/// The most bytes a server's TCB may take: the server allocates one per `--tcbs` at start
/// (plus its receive and head slabs); growing it is a memory decision, made here on
/// purpose.
pub const TCB_SIZE_MAX: usize = 464;

impl<A: App> Tcb<A> {
    /// An unused slot.
    pub const fn free() -> Tcb<A> {
        Tcb {
            tcp: Connection::closed(),
            app: A::IDLE,
            peer: Peer {
                ip: [0; 16],
                port: 0,
            },
            peer_mac: EthernetAddress([0; 6]),
            chain: NONE,
            queued: false,
            paced: false,
            send: 0,
            per_ip_home: 0,
        }
    }
}

impl<A> Tcb<A> {
    /// Whether the slot holds a connection.
    pub fn in_use(&self) -> bool {
        self.tcp.state() != super::State::Closed
    }
}
