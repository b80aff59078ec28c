//! The transmission control block: everything one connection owns, in a fixed array slot:
//! the TCP state machine ([`Connection`]), the application's part ([`HttpConn`]: the
//! request being received, the response being sent), the peer's addresses and the
//! port-table link. Its size is checked at compile time, because the server allocates
//! `--tcbs` of them at start.
//!
//! A TCB never points at memory outside the site image and its own slabs: the request bytes
//! live in the connection's receive slab, the response head in its head slab, and the body
//! is a slice of the site image. Because a response is immutable, any sequence range of it
//! can be regenerated for retransmission; there is no retransmission queue.

use super::conn::Connection;
use super::port_table::{Peer, NONE};
use crate::http::conn::HttpConn;
use crate::wire::EthernetAddress;

/// One connection.
#[derive(Debug, Clone)]
pub struct Tcb {
    /// The TCP state machine.
    pub tcp: Connection,
    /// The HTTP connection on top of it.
    pub http: HttpConn,
    /// Client address and port (the port-table key).
    pub peer: Peer,
    /// MAC to send to (the sender of the last acceptable segment: the client, or the
    /// gateway).
    pub peer_mac: EthernetAddress,
    /// Port-table overflow chain link.
    pub chain: u32,
    /// On the run list.
    pub queued: bool,
    /// On the server's list of connections that pacing holds back.
    pub paced: bool,
    /// The paper's send-id (issue 14): the NIC of a bonded server's set this connection's
    /// frames leave from, chosen at its SYN (0 without bonding).
    pub send: u8,
    /// The per-address table's home slot of `peer.ip` ([`Place::home`]), for removing
    /// the connection's count without hashing the address again.
    ///
    /// [`Place::home`]: super::per_ip::Place::home
    pub per_ip_home: u32,
}

/// The most bytes a TCB may take: the server allocates one per `--tcbs` at start (plus its
/// receive and head slabs); growing it is a memory decision, made here on purpose.
pub const TCB_SIZE_MAX: usize = 448;
const _: () = assert!(core::mem::size_of::<Tcb>() <= TCB_SIZE_MAX);

impl Tcb {
    /// An unused slot.
    pub const fn free() -> Tcb {
        Tcb {
            tcp: Connection::closed(),
            http: HttpConn::new(),
            peer: Peer {
                ip: [0; 4],
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

    /// Whether the slot holds a connection.
    pub fn in_use(&self) -> bool {
        self.tcp.state() != super::State::Closed
    }
}
