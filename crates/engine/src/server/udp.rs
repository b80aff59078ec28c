//! The stateless UDP protocol's glue (the UDP paper, `crate::udp`): a request datagram in,
//! its answer's frames out, nothing kept. The order of checks is the spec's
//! (docs/udp-protocol.md §6): the per-source rate limit, then the request, then a request
//! id from the stack, then the answer under the amplification bound; every refusal is
//! counted.
//!
//! Every frame of an answer leaves through [`Server::udp_send`], the one place a UDP
//! frame is posted: on a NIC set (bonding) it asks `Server::via_datagram` for the send
//! NIC of each packet by the set's policy, as TCP does per connection.

use alloc::vec;
use alloc::vec::Vec;

use super::{AccessLog, AccessRecord, Server};
use crate::http;
use crate::iface::Sent;
use crate::nic::TxRing;
use crate::resource::Lookup;
use crate::udp::answer::{self, Answer, Packet, Params, Payload};
use crate::udp::ids::IdStack;
use crate::udp::limit::RateLimit;
use crate::udp::token::Tokens;
use crate::udp::wire::{self, ErrorCode, Header, State, TokenField, HEADER_LEN, UNIT, VERSION};
use crate::udp::{Config, AMPLIFICATION};
use crate::wire::ipv6::v4_of;
use crate::wire::EthernetAddress;

/// The UDP protocol's part of a server: all of it allocated at start.
pub(super) struct UdpServer {
    cfg: Config,
    ids: IdStack,
    limit: RateLimit,
    tokens: Tokens,
    /// Where the HTTP head of the answer being sent is written.
    head: Vec<u8>,
}

impl UdpServer {
    pub(super) fn new(cfg: Config, key: [u8; 16]) -> UdpServer {
        UdpServer {
            ids: IdStack::new(cfg.ids),
            limit: RateLimit::new(cfg.rate, key),
            tokens: Tokens::new(key),
            head: vec![0; http::HEAD_MAX],
            cfg,
        }
    }
}

/// Where an answer goes, and from which of our addresses.
#[derive(Clone, Copy)]
struct To {
    mac: EthernetAddress,
    /// The client: IPv4 as an IPv4-mapped address.
    ip: [u8; 16],
    port: u16,
    /// Our address it came to (`Interface::local`: 0 our IPv4 one, `LOCAL_V6 | slot` an
    /// IPv6 one).
    local: u8,
}

impl<L: Lookup<'static>> Server<L> {
    /// A datagram for the protocol's port from `(mac, address, port)` (IPv4 mapped) to our
    /// address `local`.
    pub(super) fn udp_datagram<T: TxRing, A: AccessLog>(
        &mut self,
        to: (EthernetAddress, [u8; 16], u16),
        local: u8,
        payload: &[u8],
        tx: &mut T,
        log: &mut A,
    ) {
        let to = To {
            mac: to.0,
            ip: to.1,
            port: to.2,
            local,
        };
        // The token binds the client's own address (4 octets of IPv4, or all 16); the
        // rate limit counts an IPv6 client by its /64 off the link, as TCP's per-address
        // limit does (one host owns all of it).
        let v4 = v4_of(&to.ip);
        let limit6 = crate::tcp::per_ip::limit_key(&to.ip);
        let (token_key, limit_key): (&[u8], &[u8]) = match &v4 {
            Some(a) => (a, a),
            None => (&to.ip, &limit6),
        };
        let Some(u) = self.udp.as_mut() else {
            self.stats.drop_not_for_us += 1;
            return;
        };
        self.stats.udp_datagrams += 1;
        let now = self.now_ns;
        let paper = u.cfg.paper_mode;
        let req = wire::parse_request(payload);
        let proven = match req.as_ref().map(|r| r.token) {
            Ok(TokenField::Token(t)) if !paper => {
                let ok = u.tokens.check(token_key, &t, now);
                self.stats.udp_token_bad += u64::from(!ok);
                ok
            }
            Ok(TokenField::Bad) if !paper => {
                self.stats.udp_token_bad += 1;
                false
            }
            _ => false,
        };
        if !paper && !u.limit.allow(limit_key, proven, now) {
            self.stats.udp_rate_limited += 1;
            return;
        }
        let budget = (!paper && !proven).then(|| AMPLIFICATION * payload.len());
        let req = match req {
            Ok(r) => r,
            Err(_) => {
                self.stats.udp_malformed += 1;
                return self.udp_refuse(to, ErrorCode::Malformed, 0, 0, budget, tx);
            }
        };
        // In network-core mode core 0 gave the request its id (and frees it once the
        // answer is sent); otherwise it comes from this server's stack.
        let tagged = self.rx_tag;
        let id = match tagged {
            Some(t) => t,
            None => match u.ids.pop() {
                Some(id) => id,
                None => {
                    self.stats.udp_no_id += 1;
                    return;
                }
            },
        };
        self.stats.udp_ids_max = self.stats.udp_ids_max.max(u.ids.high as u64);
        let params = Params {
            burst: u.cfg.burst,
            budget,
            token: (!paper).then(|| u.tokens.make(token_key, now)),
            request_id: id,
            core: u.cfg.core,
        };
        let ans = answer::answer(
            &req,
            &self.site,
            self.unix_secs,
            self.cfg.server_name,
            &mut u.head,
            params,
        );
        match ans {
            Answer::Refuse(code, b) => {
                match code {
                    ErrorCode::BadStart => self.stats.udp_bad_start += 1,
                    _ => self.stats.udp_malformed += 1,
                }
                self.udp_refuse(to, code, id, b, budget, tx);
            }
            Answer::Nothing => self.stats.udp_bounded_silent += 1,
            Answer::Send(mut burst) => {
                if req.start == wire::Start::Initial {
                    self.stats.udp_initial += 1;
                    let line = req.head.split(|&c| c == b'\n').next().unwrap_or(&[]);
                    log.record(&AccessRecord {
                        peer: match v4 {
                            Some(a) => a.into(),
                            None => to.ip.into(),
                        },
                        request_line: line.strip_suffix(b"\r").unwrap_or(line),
                        head: req.head,
                        status: burst.status,
                        bytes: burst.total as usize,
                        unix_secs: self.unix_secs,
                        duration_us: 0,
                    });
                } else {
                    self.stats.udp_subsequent += 1;
                }
                self.stats.udp_bounded += u64::from(burst.bounded);
                while let Some(p) = burst.next() {
                    if !self.udp_send(to, &p, tx) {
                        break; // the ring is full: the client asks again
                    }
                }
            }
        }
        if let (Some(u), None) = (self.udp.as_mut(), tagged) {
            u.ids.push(id);
        }
    }

    /// An Error packet, if it fits the bound (16 octets).
    fn udp_refuse<T: TxRing>(
        &mut self,
        to: To,
        code: ErrorCode,
        request_id: u16,
        b: u32,
        budget: Option<usize>,
        tx: &mut T,
    ) {
        if budget.is_some_and(|b| b < HEADER_LEN) {
            return;
        }
        let core = self.udp.as_ref().map_or(0, |u| u.cfg.core);
        let header = Header {
            state: State::Error,
            version: VERSION,
            request_id,
            core,
            flags: 0,
            unit: UNIT as u16,
            a: code.code(),
            b,
        };
        self.udp_send(
            to,
            &Packet {
                header,
                payload: Payload::None,
            },
            tx,
        );
    }

    /// Posts one packet of an answer; false when the transmit ring had no slot.
    fn udp_send<T: TxRing>(&mut self, to: To, p: &Packet<'static>, tx: &mut T) -> bool {
        let len = HEADER_LEN + p.payload.len();
        self.via_datagram(to.ip, len, tx);
        self.sync_egress(to.local);
        let Some(u) = self.udp.as_ref() else {
            return false;
        };
        let mut hdr = [0u8; HEADER_LEN];
        p.header.emit(&mut hdr);
        let ports = (u.cfg.port, to.port);
        let token;
        let (copied, body, sum): (&[u8], &'static [u8], u16) = match p.payload {
            Payload::None => (&[], &[], 0),
            Payload::Token(t) => {
                token = t;
                (&token[..], &[], 0)
            }
            Payload::Head(n) => (u.head.get(..n).unwrap_or(&[]), &[], 0),
            Payload::Body { data, sum } => (&[], data, sum),
        };
        let eg = Self::egress_of(&self.egress, &self.vip_egress, &self.egress6, to.local);
        let sent = eg.udp(tx, to.mac, &to.ip, ports, &[&hdr, copied], body, sum);
        self.count_sent(sent);
        if matches!(sent, Sent::Frame) {
            self.stats.udp_packets += 1;
        }
        sent != Sent::NoSlot
    }
}
