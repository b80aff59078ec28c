//! The ACME client inside the server (feature `acme`): the order machine of
//! `bareweb-acme` driven over the engine's own stack, on the core that runs it (core 0),
//! on both platforms. The [`Agent`] owns:
//!
//! - a [`Fetcher`] of one slot whose byte stream carries one TLS connection per request
//!   (`Connection: close`), from a reserved range of local ports the server hands over
//!   ([`Divert`]), with our own address and MAC (it follows DHCP's);
//! - the DNS [`Resolver`] for the CA's name, its datagrams sent by the fetcher to the DNS
//!   server and handed over by the server like the segments;
//! - the TLS client ([`TlsClient`]: the roots given, WebPKI verification) and the answer's
//!   reader ([`exchange`]);
//! - what the order's events change: the HTTP-01 table every core serves from
//!   ([`Http01`]), the TLS configuration new handshakes take ([`ServerSlot`]: a
//!   TLS-ALPN-01 challenge, then the certificate, with running connections finishing on
//!   the one they began with), and the platform's [`Keeper`] (the state saved, the
//!   console told).
//!
//! One request is in flight at a time, each bounded by [`REQUEST_TIMEOUT_NS`]; the order
//! machine bounds the rest (attempts an hour, backoff, the attempt's deadline). Nothing
//! here is on the request path: it runs in the core's tick, between rounds of its server.

pub mod exchange;

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use bareweb_acme::chain;
use bareweb_acme::jose::Key;
use bareweb_acme::order::{self, Client, Entropy, Event, Request, Response, Status};
use bareweb_acme::store::{Kept, State};
use bareweb_tls::{ServerSlot, TlsClient};

use crate::cores::challenge::{Http01, Issuance};
use crate::dns::{self, Lookup, Name, Resolver, Ticket, Type};
use crate::fetch::{self, End, Fetcher, Handler};
use crate::mailbox::MAIL_MAX;
use crate::nic::TxRing;
use crate::server::divert::Divert;
use crate::wire::ipv6::{mapped, v4_of};
use crate::wire::{
    EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Address, Ipv4Packet, Ipv6Address,
    UdpPacket,
};
use exchange::{Exchange, Moved, Target};

const SEC: u64 = 1_000_000_000;
/// The longest one request may take, from its DNS lookup to its answer's last byte.
pub const REQUEST_TIMEOUT_NS: u64 = 30 * SEC;
/// The local TCP ports of the client's connections, whose segments the server hands over
/// (`server::divert`): a thousand ports, away from any a site is served on.
pub const TCP_PORTS: (u16, u16) = (61_000, 61_999);
/// The local UDP ports of the resolver's queries.
pub const UDP_PORTS: (u16, u16) = (dns::PORT_BASE, u16::MAX);
/// Everything one connection sends (ClientHello, Finished and the request): the
/// fetcher's request buffer.
const STREAM_MAX: usize = 32 * 1024;

/// What the platform does for the agent.
pub trait Keeper: Send {
    /// Random bytes (keys, nonces of the TLS client, DNS ports and IDs).
    fn fill(&mut self, buf: &mut [u8]);
    /// Keeps `state` (the account key, the certificate and its key) so that it outlives
    /// a restart; the error is said on the console.
    fn save(&mut self, state: &State) -> Result<(), String>;
    /// A line for the console.
    fn say(&mut self, line: &str);
}

/// How the agent is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The order: directory, names, contacts, challenge.
    pub order: order::Config,
    /// DNS servers (IPv4 address and port).
    pub dns: Vec<(Ipv4Address, u16)>,
    /// Our MAC.
    pub mac: EthernetAddress,
    /// The User-Agent sent.
    pub user_agent: String,
}

/// The keeper as the order machine's randomness.
struct Rng<'a>(&'a mut dyn Keeper);

impl Entropy for Rng<'_> {
    fn fill(&mut self, buf: &mut [u8]) {
        self.0.fill(buf)
    }
}

/// What the fetcher told of the stream during a call.
#[derive(Default)]
struct Inbox {
    connected: bool,
    data: Vec<u8>,
    end: Option<End>,
}

impl Handler for Inbox {
    fn body(&mut self, _: u32, _: u64, data: &[u8]) {
        self.data.extend_from_slice(data);
    }
    fn connected(&mut self, _: u32, _: u64) {
        self.connected = true;
    }
    fn end(&mut self, _: u32, end: End, _: u64) {
        self.end = Some(end);
    }
}

/// Where the request in flight is.
enum Step {
    /// The CA's name is being looked up.
    Resolving(Ticket),
    /// The address is known: waiting for the next hop's MAC, then the connection.
    Connecting(Ipv4Address),
    /// The stream is open (or opening): TLS and HTTP.
    Open,
}

struct InFlight {
    req: Request,
    target: Target,
    started: u64,
    step: Step,
    exchange: Option<Exchange>,
}

/// The client, its connection and what it changes.
pub struct Agent {
    settings: Settings,
    client: Client,
    resolver: Resolver,
    fetcher: Fetcher,
    tls: TlsClient,
    slot: &'static ServerSlot,
    http01: &'static Http01,
    issuance: &'static Issuance,
    /// When the pages' view ([`Issuance`]) is next brought up to date (monotonic ns).
    next_publish: u64,
    divert: &'static Divert,
    keeper: Box<dyn Keeper>,
    account: Vec<u8>,
    kept: Option<Kept>,
    flight: Option<InFlight>,
    inbox: Inbox,
    events: Vec<Event>,
    dns_buf: Vec<u8>,
    /// The server's address now (ours, prefix, router): the fetcher follows it before
    /// each connection or query.
    addr: (Ipv4Address, u8, Option<Ipv4Address>),
    /// The resolver's datagram waiting for the next hop towards its server (ARP), and
    /// since when (monotonic ns).
    dns_pending: Option<(dns::Transmit, Vec<u8>, u64)>,
    /// The certificate in service (for the order machine when a new one cannot be put in
    /// service).
    held: Option<chain::Issued>,
    /// A state the keeper could not save: tried again every [`SAVE_RETRY_NS`], so that a
    /// restart does not order again.
    unsaved: Option<State>,
    next_save: u64,
}

/// How often a state that could not be saved is tried again.
const SAVE_RETRY_NS: u64 = 10 * SEC;

/// The order's answer, read from an exchange.
fn response(a: &exchange::Answer, unix: u64) -> (u16, Option<String>, Option<String>, Option<u64>) {
    let field = |n: &str| {
        a.reader
            .header(n)
            .and_then(|v| core::str::from_utf8(v).ok())
            .map(|v| v.trim().to_string())
    };
    let retry = field("retry-after").and_then(|v| order::retry_after(&v, unix));
    (
        a.reader.status,
        field("location"),
        field("replay-nonce"),
        retry,
    )
}

impl Agent {
    /// An agent for `settings`, resuming `kept` (the state saved before: the account key,
    /// and the certificate, put in `slot` at once when it is still good for the names)
    /// or starting afresh (a new account key, saved before the first order). `now`: Unix
    /// seconds.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        settings: Settings,
        kept: Option<State>,
        tls: TlsClient,
        slot: &'static ServerSlot,
        (http01, issuance): (&'static Http01, &'static Issuance),
        divert: &'static Divert,
        mut keeper: Box<dyn Keeper>,
        now: u64,
    ) -> Result<Agent, String> {
        let (account, account_der, kept_cert) = match kept {
            Some(s) => {
                let key = Key::from_pkcs8(&s.account)
                    .map_err(|e| format!("the kept account key is unusable: {e:?}"))?;
                (key, s.account, s.certificate)
            }
            None => {
                let key = order::fresh_key(&mut Rng(keeper.as_mut()))
                    .ok_or("no random bytes for the account key")?;
                let der = key.to_pkcs8();
                keeper.save(&State {
                    account: der.clone(),
                    certificate: None,
                })?;
                (key, der, None)
            }
        };
        let mut client = Client::new(settings.order.clone(), account, now);
        let (mut kept, mut held) = (None, None);
        if let Some(k) = kept_cert {
            let names: Vec<&str> = settings.order.names.iter().map(String::as_str).collect();
            let checked = Key::from_pkcs8(&k.key)
                .map_err(|_| "its key is unusable".to_string())
                .and_then(|key| {
                    chain::check(k.chain_pem.as_bytes(), &key, &names, now)
                        .map_err(|e| e.reason().to_string())
                });
            let checked =
                checked.and_then(|issued| install(slot, &issued.pem, &k.key).map(|()| issued));
            match checked {
                Ok(issued) => {
                    keeper.say(&format!(
                        "acme: the kept certificate for {} is served (valid until {})",
                        names.join(", "),
                        bareweb_acme::document::format_time(issued.not_after)
                    ));
                    client.resume(issued.clone());
                    issuance.installed();
                    held = Some(issued);
                    kept = Some(k);
                }
                Err(why) => keeper.say(&format!(
                    "acme: the kept certificate is not used ({why}): a new one is ordered"
                )),
            }
        }
        let mut seed = [0u8; 34];
        keeper.fill(&mut seed);
        let word = |i: usize| u64::from_le_bytes(seed[i..i + 8].try_into().unwrap_or([0; 8]));
        let mut resolver = Resolver::new([word(0), word(8)], dns::Timing::default());
        let servers: Vec<dns::Server> = settings
            .dns
            .iter()
            .map(|&(ip, port)| dns::Server {
                addr: Ipv6Address(mapped(ip.0)),
                port,
            })
            .collect();
        resolver.set_servers(&servers);
        let mut cfg = fetch::Config::new(
            settings.mac,
            Ipv4Address::UNSPECIFIED,
            0,
            Ipv4Address::UNSPECIFIED,
            443,
            1,
        );
        cfg.ports = TCP_PORTS;
        cfg.port_start = u16::from_le_bytes([seed[32], seed[33]]);
        cfg.isn_key.copy_from_slice(&seed[16..32]);
        cfg.request_max = STREAM_MAX;
        cfg.rx_window = 32 * 1024;
        cfg.tcbs = 2;
        Ok(Agent {
            client,
            resolver,
            fetcher: Fetcher::new(cfg),
            tls,
            slot,
            http01,
            issuance,
            next_publish: 0,
            divert,
            keeper,
            account: account_der,
            kept,
            flight: None,
            inbox: Inbox::default(),
            events: Vec::new(),
            dns_buf: alloc::vec![0; 512],
            addr: (Ipv4Address::UNSPECIFIED, 0, None),
            dns_pending: None,
            held,
            unsaved: None,
            next_save: 0,
            settings,
        })
    }

    /// Where issuance stands.
    pub fn status(&self) -> Status {
        self.client.status()
    }

    /// Whether a request is in flight.
    pub fn busy(&self) -> bool {
        self.flight.is_some()
    }

    /// One round: the frames handed over, the request in flight, the next one. `addr`:
    /// the server's address now (ours, prefix, router; 0.0.0.0 while DHCP holds none);
    /// `now`: monotonic ns; `unix`: wall-clock seconds.
    pub fn run<T: TxRing>(
        &mut self,
        addr: (Ipv4Address, u8, Option<Ipv4Address>),
        now: u64,
        unix: u64,
        tx: &mut T,
    ) {
        self.addr = addr;
        let received = self.take_frames(now, tx);
        self.fetcher.tick(received, now, tx, &mut self.inbox);
        self.stream(now, unix, tx);
        self.advance(now, unix, tx);
        if self.flight.is_none() && !addr.0.is_unspecified() {
            let mut rng = Rng(self.keeper.as_mut());
            if let Some(req) = self.client.poll(unix, &mut self.events, &mut rng) {
                self.begin(req, now, unix, tx);
            }
        }
        let changed = !self.events.is_empty();
        // Twice: a certificate that cannot be put in service adds its failure.
        self.apply_events(unix);
        self.apply_events(unix);
        if let Some(state) = self.unsaved.as_ref().filter(|_| now >= self.next_save) {
            self.next_save = now.saturating_add(SAVE_RETRY_NS);
            if self.keeper.save(state).is_ok() {
                self.unsaved = None;
                self.keeper.say("acme: the state is kept now");
            }
        }
        if changed || now >= self.next_publish {
            self.next_publish = now.saturating_add(SEC);
            let st = self.client.status();
            self.issuance.publish(
                st.phase,
                st.certificate_until.unwrap_or(0),
                st.next.unwrap_or(0),
                u64::from(st.failures),
            );
        }
        tx.flush();
    }

    /// Hands the frames posted for us to the fetcher (ARP, TCP) and the resolver (UDP).
    fn take_frames<T: TxRing>(&mut self, now: u64, tx: &mut T) -> bool {
        let mut buf = [0u8; MAIL_MAX];
        let mut any = false;
        let (fetcher, resolver, inbox) = (&mut self.fetcher, &mut self.resolver, &mut self.inbox);
        self.divert.take(&mut buf, |f| {
            any = true;
            match udp_of(f) {
                Some((from, sport, dport, payload)) => {
                    let server = dns::Server {
                        addr: Ipv6Address(mapped(from.0)),
                        port: sport,
                    };
                    resolver.on_datagram(server, dport, payload, now);
                }
                None => fetcher.receive(f, now, tx, inbox),
            }
        });
        any
    }

    /// Moves the stream's bytes through TLS and the answer's reader.
    fn stream<T: TxRing>(&mut self, now: u64, unix: u64, tx: &mut T) {
        let connected = core::mem::take(&mut self.inbox.connected);
        let data = core::mem::take(&mut self.inbox.data);
        let end = self.inbox.end.take();
        let Some(f) = self.flight.as_mut() else {
            return;
        };
        let Some(ex) = f.exchange.as_mut() else {
            self.inbox.data = data;
            return;
        };
        let mut moved = Moved::default();
        let mut result = Ok(());
        if connected {
            result = ex.receive(&[], &mut moved);
        }
        if result.is_ok() && !data.is_empty() {
            result = ex.receive(&data, &mut moved);
        }
        self.inbox.data = data;
        self.inbox.data.clear();
        if let Err(e) = result {
            return self.transport_error(&e, unix, tx);
        }
        // Complete by its length, its last chunk, or a close_notify: a bare FIN (which
        // anyone on the path can forge) never completes an answer.
        if moved.done {
            return self.answered(now, unix, tx);
        }
        match end {
            Some(End::Failed(why)) => {
                let e = format!("{} {}", f.target.authority, failure(why));
                return self.transport_error(&e, unix, tx);
            }
            Some(End::Done { .. }) => {
                let e = format!(
                    "{} closed before its answer was complete",
                    f.target.authority
                );
                return self.transport_error(&e, unix, tx);
            }
            None => {}
        }
        if !moved.out.is_empty() && !self.fetcher.stream_send(0, &moved.out, now, tx) {
            let e = "the request does not fit the connection's buffer";
            self.transport_error(e, unix, tx);
        }
    }

    /// The request in flight: its lookup, the next hop, the connection, its time bound.
    fn advance<T: TxRing>(&mut self, now: u64, unix: u64, tx: &mut T) {
        let Some(f) = self.flight.as_mut() else {
            return;
        };
        if now > f.started + REQUEST_TIMEOUT_NS {
            let e = format!("no answer from {} in 30 s", f.target.authority);
            return self.transport_error(&e, unix, tx);
        }
        if let Step::Resolving(t) = f.step {
            self.query(now, tx);
            let Some(f) = self.flight.as_mut() else {
                return;
            };
            match self.resolver.take(t).map(|r| address(&f.target.host, r)) {
                None => return,
                Some(Ok(ip)) => f.step = Step::Connecting(ip),
                Some(Err(e)) => return self.transport_error(&e, unix, tx),
            }
        }
        let Some(f) = self.flight.as_mut() else {
            return;
        };
        if let Step::Connecting(ip) = f.step {
            let port = f.target.port;
            if self.aim_at((ip, port), tx) && self.fetcher.ready() && self.fetcher.can_start(0) {
                let Some(f) = self.flight.as_mut() else {
                    return;
                };
                let head = f.req.method == order::Method::Head;
                let request = exchange::request_bytes(&f.req, &f.target, &self.settings.user_agent);
                match Exchange::new(&self.tls, &f.target, request, head) {
                    Ok(ex) => {
                        f.exchange = Some(ex);
                        f.step = Step::Open;
                        self.fetcher.open_stream(0, now, tx, &mut self.inbox);
                    }
                    Err(e) => self.transport_error(&e, unix, tx),
                }
            }
        }
    }

    /// Points the fetcher at `server` from the server's address now (resetting what a
    /// finished exchange left closing); false while a stream runs.
    fn aim_at<T: TxRing>(&mut self, server: (Ipv4Address, u16), tx: &mut T) -> bool {
        self.fetcher.aim() == (self.addr, server) || self.fetcher.retarget(self.addr, server, tx)
    }

    /// Sends the resolver's next query, once the fetcher points at its server and knows
    /// the next hop there. A query whose next hop does not answer ARP within a second is
    /// dropped, as a lost datagram would be: the resolver's retry, or its next server,
    /// takes over.
    fn query<T: TxRing>(&mut self, now: u64, tx: &mut T) {
        for _ in 0..dns::QUERIES {
            if self.dns_pending.is_none() {
                let Some(t) = self.resolver.poll_transmit(now, &mut self.dns_buf) else {
                    return;
                };
                let bytes = self.dns_buf[..t.len].to_vec();
                self.dns_pending = Some((t, bytes, now));
            }
            let Some((t, _, since)) = self.dns_pending.as_ref() else {
                return;
            };
            let (t, since) = (*t, *since);
            let Some(v4) = v4_of(&t.to.addr.0) else {
                self.dns_pending = None;
                continue;
            };
            if !self.aim_at((Ipv4Address(v4), t.to.port), tx) || !self.fetcher.ready() {
                if now > since + SEC {
                    self.dns_pending = None;
                }
                return;
            }
            if let Some((t, bytes, _)) = self.dns_pending.take() {
                self.fetcher
                    .send_datagram(t.from_port, t.to.port, &bytes, tx);
            }
        }
    }

    /// Starts `req`.
    fn begin<T: TxRing>(&mut self, req: Request, now: u64, unix: u64, tx: &mut T) {
        match first_step(&mut self.resolver, &req.url, now) {
            Ok((target, step)) => {
                self.flight = Some(InFlight {
                    req,
                    target,
                    started: now,
                    step,
                    exchange: None,
                });
                self.advance(now, unix, tx);
            }
            Err(e) => {
                let mut rng = Rng(self.keeper.as_mut());
                self.client
                    .on_transport_error(&e, unix, &mut self.events, &mut rng);
            }
        }
    }

    /// The answer is complete: to the order machine; the connection closed.
    fn answered<T: TxRing>(&mut self, now: u64, unix: u64, tx: &mut T) {
        let Some(f) = self.flight.as_ref() else {
            return;
        };
        if f.exchange.is_none() {
            return self.transport_error("internal: an answer without its exchange", unix, tx);
        }
        let Some(f) = self.flight.take() else {
            return;
        };
        self.fetcher.finish_stream(0, now, tx);
        let Some(ex) = f.exchange else {
            return;
        };
        let (status, location, nonce, retry_after) = response(&ex.answer, unix);
        let r = Response {
            status,
            location: location.as_deref(),
            replay_nonce: nonce.as_deref(),
            retry_after,
            body: &ex.answer.body,
        };
        let mut rng = Rng(self.keeper.as_mut());
        self.client
            .on_response(&r, unix, &mut self.events, &mut rng);
    }

    /// The request in flight failed before its answer.
    fn transport_error<T: TxRing>(&mut self, why: &str, unix: u64, tx: &mut T) {
        if let Some(f) = self.flight.take() {
            if let Step::Resolving(t) = f.step {
                self.resolver.cancel(t);
                self.dns_pending = None;
            }
            self.fetcher.abort(0, tx);
            let mut rng = Rng(self.keeper.as_mut());
            self.client
                .on_transport_error(why, unix, &mut self.events, &mut rng);
        }
    }

    /// What the order machine asked: answers published or withdrawn, the certificate put
    /// in service and kept, failures said.
    fn apply_events(&mut self, unix: u64) {
        for e in core::mem::take(&mut self.events) {
            match e {
                Event::Publish(order::Answer::Http01 {
                    token,
                    key_authorization,
                }) => {
                    if let Err(e) = self.http01.publish(&token, &key_authorization) {
                        self.keeper.say(&format!(
                            "acme: the HTTP-01 answer was not published: {e:?}"
                        ));
                    }
                }
                Event::Publish(order::Answer::TlsAlpn01 { name, cert, key }) => {
                    match self.slot.current().with_acme_challenge(&name, &cert, &key) {
                        Ok(s) => self.slot.replace(s),
                        Err(e) => self.keeper.say(&format!(
                            "acme: the TLS-ALPN-01 answer was not published: {e}"
                        )),
                    }
                }
                Event::Withdraw => {
                    self.http01.withdraw_all();
                    self.slot
                        .replace(self.slot.current().without_acme_challenges());
                }
                Event::Install { issued, key } => {
                    if let Err(e) = install(self.slot, &issued.pem, &key) {
                        // The order machine counts it as a failure, with its backoff.
                        let mut rng = Rng(self.keeper.as_mut());
                        let previous = self.held.clone();
                        let mut more = Vec::new();
                        self.client
                            .install_failed(&e, previous, unix, &mut more, &mut rng);
                        self.events.extend(more);
                        continue;
                    }
                    let kept = Kept {
                        chain_pem: issued.pem.clone(),
                        key,
                    };
                    let state = State {
                        account: self.account.clone(),
                        certificate: Some(kept.clone()),
                    };
                    let saved = self.keeper.save(&state);
                    self.kept = Some(kept);
                    self.held = Some(issued.clone());
                    self.issuance.installed();
                    self.keeper.say(&format!(
                        "acme: certificate for {} installed (valid until {}, renewal from {})",
                        self.settings.order.names.join(", "),
                        bareweb_acme::document::format_time(issued.not_after),
                        bareweb_acme::document::format_time(issued.renew_at()),
                    ));
                    if let Err(e) = saved {
                        self.keeper.say(&format!(
                            "acme: the certificate could not be kept ({e}): trying again every \
                             {} s",
                            SAVE_RETRY_NS / SEC
                        ));
                        self.unsaved = Some(state);
                    } else {
                        self.unsaved = None;
                    }
                }
                Event::Failed { reason, next } => {
                    self.keeper.say(&format!(
                        "acme: {reason}; next try in {} s",
                        next.saturating_sub(unix)
                    ));
                }
            }
        }
    }
}

/// Where a request to `url` begins: at the address it names, or with a lookup of its
/// name (at once, when the resolver's cache holds it).
fn first_step(resolver: &mut Resolver, url: &str, now: u64) -> Result<(Target, Step), String> {
    let target = exchange::target(url)?;
    let step = match target.addr {
        Some(ip) => Step::Connecting(ip),
        None => {
            let name = Name::new(&target.host)
                .map_err(|_| format!("{} is not a host name", target.host))?;
            match resolver.resolve(&name, Type::A, now) {
                Ok(Lookup::Pending(t)) => Step::Resolving(t),
                Ok(Lookup::Ready(r)) => Step::Connecting(address(&target.host, r)?),
                Err(_) => return Err("the resolver is busy".into()),
            }
        }
    };
    Ok((target, step))
}

/// The first IPv4 address of a lookup of `host`, or why there is none.
fn address(host: &str, r: Result<dns::Answer, dns::Failure>) -> Result<Ipv4Address, String> {
    match r {
        Ok(a) => a
            .addresses()
            .iter()
            .find_map(|a| v4_of(&a.0))
            .map(Ipv4Address)
            .ok_or_else(|| format!("{host} has no IPv4 address")),
        Err(e) => Err(format!("{host}: {}", e.reason())),
    }
}

/// What a failed connection did, for the console.
fn failure(why: fetch::Failure) -> &'static str {
    use fetch::Failure as F;
    match why {
        F::Refused => "refused the connection",
        F::NoAnswer => "did not answer the connection",
        F::Reset => "reset the connection",
        F::Closed => "closed the connection before its answer",
        F::BadResponse => "sent what is not TLS",
        F::Stalled => "stopped answering (10 s without progress)",
        F::NoResources => "could not be reached: no local port free",
    }
}

/// Puts the certificate `pem` with its key (PKCS #8 DER) in `slot` for new handshakes.
fn install(slot: &ServerSlot, pem: &str, key: &[u8]) -> Result<(), String> {
    let key_pem = Key::from_pkcs8(key)
        .map_err(|_| "the certificate was not installed: its key is unusable".to_string())?
        .to_pkcs8_pem();
    let s = slot
        .current()
        .with_certificate(pem.as_bytes(), key_pem.as_bytes())
        .map_err(|e| format!("the certificate was not installed: {e}"))?;
    slot.replace(s);
    Ok(())
}

/// An IPv4 UDP datagram's source, ports and payload, its checksums verified; `None` for
/// anything else (ARP, TCP) or a datagram that does not check.
fn udp_of(f: &[u8]) -> Option<(Ipv4Address, u16, u16, &[u8])> {
    let eth = EthernetFrame::new_checked(f).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IpProtocol::Udp || !ip.verify_checksum() || ip.is_fragment() {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    if !udp.verify_checksum(src, dst) {
        return None;
    }
    let (sport, dport, len) = (udp.src_port(), udp.dst_port(), usize::from(udp.len()));
    // Offsets into `f` itself: the views borrow locals.
    let ip_start = crate::wire::ethernet::HEADER_LEN + usize::from(ip.header_len());
    let (at, end) = (ip_start + crate::wire::udp::HEADER_LEN, ip_start + len);
    Some((src, sport, dport, f.get(at..end)?))
}
