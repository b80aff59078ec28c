//! One connection's life in a load run: the slot table entry ([`Slot`]) and the run's
//! shared state ([`Ctx`]), and the steps a slot goes through: open, connect, (over HTTPS)
//! the TLS handshake, send (pipelined), read and check responses, keep idle or close,
//! think between a session's bursts; timeouts by deadline scan.
//!
//! Over HTTPS a slot holds a `rustls::ClientConnection` (its buffered API), made when the
//! connect starts and dropped when the connection closes. Bytes read from the socket go
//! into it (`read_tls`, `process_new_packets`) and its plaintext into the same response
//! parser as over HTTP; requests go into its writer and its records to the socket
//! (`write_tls`) until all are out or the socket would block, the rest on the next
//! EPOLLOUT edge (every socket is registered for it). The handshake runs between connect
//! and the first request, which is timed from when it is handed to TLS.

use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

use bareweb_tls::rustls::pki_types::ServerName;
use bareweb_tls::rustls::{ClientConfig, ClientConnection};
use sha2::{Digest, Sha256};

use super::config::{LoadConfig, Mode};
use super::tls::FdIo;
use crate::http::{RespError, ResponseParser, Step};
use crate::report::ErrorKind;
use crate::rng::{Rng, Zipf};
use crate::surge::{SurgeParams, MAX_BURST};
use crate::sys;
use crate::tally::{verdict, Tally, TlsTally};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    Free,
    Connecting,
    /// HTTPS: connected, the TLS handshake under way (requests queued, not yet sent).
    Handshaking,
    Sending,
    Receiving,
    /// Keep-alive connection with nothing in flight.
    Idle,
    /// Session between bursts; the connection may have been closed by the server.
    Thinking,
}

#[derive(Clone, Copy, Default)]
struct Pending {
    url: u32,
    sent_at: u64,
}

pub(super) struct Slot {
    gen: u32,
    fd: Option<OwnedFd>,
    phase: Phase,
    conn_start: u64,
    wbuf: Vec<u8>,
    woff: usize,
    pending: [Pending; MAX_BURST],
    p_head: usize,
    p_len: usize,
    parser: ResponseParser,
    status: u16,
    close_after: bool,
    first_at: u64,
    hasher: Sha256,
    deadline: u64,
    in_session: bool,
    /// A response of this session failed its checks (the session then counts as failed).
    session_bad: bool,
    bursts_left: u32,
    session_start: u64,
    /// HTTPS: the connection's TLS (from connect to close).
    tls: Option<ClientConnection>,
    /// HTTPS: when the TCP connection was established (the handshake's start).
    hs_start: u64,
}

impl Slot {
    fn new(wcap: usize) -> Slot {
        Slot {
            gen: 0,
            fd: None,
            phase: Phase::Free,
            conn_start: 0,
            wbuf: Vec::with_capacity(wcap),
            woff: 0,
            pending: [Pending::default(); MAX_BURST],
            p_head: 0,
            p_len: 0,
            parser: ResponseParser::new(),
            status: 0,
            close_after: false,
            first_at: 0,
            hasher: Sha256::new(),
            deadline: u64::MAX,
            in_session: false,
            session_bad: false,
            bursts_left: 0,
            session_start: 0,
            tls: None,
            hs_start: 0,
        }
    }

    /// Closes the socket (gracefully: after TLS's close_notify, best effort; `abort`: a
    /// reset) and drops the TLS state; whether there was a socket.
    fn close_fd(&mut self, abort: bool) -> bool {
        let tls = self.tls.take();
        let Some(fd) = self.fd.take() else {
            return false;
        };
        if let Some(mut tls) = tls.filter(|t| !abort && !t.is_handshaking()) {
            tls.send_close_notify();
            let _ = tls.write_tls(&mut FdIo(fd.as_fd()));
        }
        sys::close(fd, abort);
        true
    }
}

/// Counters and histograms of a run (everything but the slots).
pub(super) struct Ctx<'a> {
    cfg: &'a LoadConfig,
    /// Per URL: the request with keep-alive and with `Connection: close`.
    req_keep: Vec<Vec<u8>>,
    req_close: Vec<Vec<u8>>,
    pub(super) epoll: sys::Epoll,
    rng: Rng,
    zipf: Option<Zipf>,
    timeout_ns: u64,
    free: Vec<u32>,
    idle: Vec<(u32, u32)>,
    pub(super) open: u64,
    pub(super) in_flight: u64,
    pub(super) sessions_active: u64,
    /// HTTPS: the client configuration and the name every connection asks for.
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// The run's start: times are nanoseconds since.
    pub(super) start: Instant,
    /// What the report is made of.
    pub(super) t: Tally,
}

impl<'a> Ctx<'a> {
    /// The state of a run of `cfg` with `max_conns` slots, and the slots: each request
    /// built once per URL, every slot's write buffer sized for a burst of the longest.
    pub(super) fn new(cfg: &'a LoadConfig, max_conns: usize) -> Result<(Self, Vec<Slot>), String> {
        let build = |path: &str, close: bool| {
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: bareweb-load\r\n{}\r\n",
                cfg.target.host,
                if close { "Connection: close\r\n" } else { "" }
            )
            .into_bytes()
        };
        let req_keep: Vec<Vec<u8>> = cfg.urls.iter().map(|u| build(&u.path, false)).collect();
        let req_close: Vec<Vec<u8>> = cfg.urls.iter().map(|u| build(&u.path, true)).collect();
        let longest = req_close.iter().map(Vec::len).max().unwrap_or(0);
        let wcap = longest * MAX_BURST;
        let zipf = match &cfg.mode {
            Mode::Sessions { params, .. } => Some(Zipf::new(cfg.urls.len(), params.zipf_alpha)),
            _ => None,
        };
        let tls = match &cfg.target.tls_name {
            Some(name) => {
                let config = match &cfg.tls {
                    Some(c) => c.clone(),
                    None => super::tls::client_config(None)?,
                };
                Some((config, name.clone()))
            }
            None => None,
        };
        let mut t = Tally::new();
        if tls.is_some() {
            t.tls = Some(TlsTally::new());
        }
        let ctx = Ctx {
            cfg,
            req_keep,
            req_close,
            epoll: sys::Epoll::new().map_err(|e| format!("epoll: {e}"))?,
            rng: Rng::new(cfg.seed),
            zipf,
            timeout_ns: (cfg.timeout * 1e9) as u64,
            free: (0..max_conns as u32).rev().collect(),
            idle: Vec::with_capacity(max_conns),
            open: 0,
            in_flight: 0,
            sessions_active: 0,
            tls,
            start: Instant::now(),
            t,
        };
        let slots = (0..max_conns).map(|_| Slot::new(wcap)).collect();
        Ok((ctx, slots))
    }
}

impl Ctx<'_> {
    /// Nanoseconds since the run's start (the monotonic clock, vDSO).
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// The epoll token of slot `i` in generation `gen`.
fn token(i: usize, gen: u32) -> u64 {
    (gen as u64) << 32 | i as u64
}

/// The slot an event's token names, if its connection is still the one the token was
/// made for.
pub(super) fn current(slots: &mut [Slot], tok: u64) -> Option<(usize, &mut Slot)> {
    let (i, gen) = ((tok & 0xffff_ffff) as usize, (tok >> 32) as u32);
    let slot = slots.get_mut(i)?;
    (slot.gen == gen && slot.fd.is_some()).then_some((i, slot))
}

/// Closes every connection at the end of a run; returns the fetches still in flight
/// (unfinished).
pub(super) fn close_all(slots: &mut [Slot]) -> u64 {
    let mut unfinished = 0;
    for slot in slots.iter_mut() {
        if matches!(
            slot.phase,
            Phase::Connecting | Phase::Handshaking | Phase::Sending | Phase::Receiving
        ) {
            unfinished += slot.p_len as u64;
        }
        slot.close_fd(true);
    }
    unfinished
}

fn queue(ctx: &Ctx, slot: &mut Slot, url: u32) {
    let close = !ctx.cfg.keepalive && !slot.in_session;
    let req = if close {
        &ctx.req_close[url as usize]
    } else {
        &ctx.req_keep[url as usize]
    };
    slot.wbuf.extend_from_slice(req);
    let at = (slot.p_head + slot.p_len) % MAX_BURST;
    slot.pending[at] = Pending { url, sent_at: 0 };
    slot.p_len += 1;
}

/// Takes a free slot and starts connecting it; `None` when every slot is busy.
fn open_slot(ctx: &mut Ctx, slots: &mut [Slot]) -> Option<usize> {
    let i = ctx.free.pop()? as usize;
    let slot = &mut slots[i];
    slot.gen = slot.gen.wrapping_add(1);
    slot.wbuf.clear();
    slot.woff = 0;
    slot.p_head = 0;
    slot.p_len = 0;
    slot.in_session = false;
    slot.phase = Phase::Connecting;
    Some(i)
}

/// Connects `slot` (which has requests queued); on failure counts errors and frees it.
fn connect(ctx: &mut Ctx, slots: &mut [Slot], i: usize, now: u64) {
    let slot = &mut slots[i];
    slot.conn_start = now;
    slot.phase = Phase::Connecting;
    slot.deadline = now + ctx.timeout_ns;
    match sys::connect(ctx.cfg.target.addr) {
        Ok(c) => {
            let fd = match c {
                sys::Connect::Done(fd) | sys::Connect::Pending(fd) => fd,
            };
            let added = ctx.epoll.add(&fd, token(i, slot.gen));
            slot.fd = Some(fd);
            ctx.t.connections += 1;
            ctx.open += 1;
            ctx.t.max_parallel = ctx.t.max_parallel.max(ctx.open);
            if let Err(e) = added {
                eprintln!("bareweb load: epoll_ctl: {e}");
                fail(ctx, slot, i, ErrorKind::ConnectFailed, now);
                return;
            }
            // HTTPS: the ClientHello is made now, sent once connected.
            if let Some((config, name)) = &ctx.tls {
                match ClientConnection::new(config.clone(), name.clone()) {
                    Ok(c) => slot.tls = Some(c),
                    Err(e) => tls_fail(ctx, slot, i, &e, now),
                }
            }
            // Writability (or an error) is reported by epoll even if already connected.
        }
        Err(e) => {
            let kind = if e.raw_os_error() == Some(sys::Errno::CONNREFUSED.raw_os_error()) {
                ErrorKind::Refused
            } else {
                ErrorKind::ConnectFailed
            };
            fail(ctx, slot, i, kind, now);
        }
    }
}

pub(super) fn launch_fetch(ctx: &mut Ctx, slots: &mut [Slot], now: u64) {
    let url = if ctx.cfg.urls.len() == 1 {
        0
    } else {
        ctx.rng.below(ctx.cfg.urls.len() as u64) as u32
    };
    ctx.t.fetches_started += 1;
    ctx.in_flight += 1;
    // Reuse an idle keep-alive connection when there is one.
    while let Some((i, gen)) = ctx.idle.pop() {
        let slot = &mut slots[i as usize];
        if slot.gen == gen && slot.phase == Phase::Idle && slot.fd.is_some() {
            slot.wbuf.clear();
            slot.woff = 0;
            queue(ctx, slot, url);
            start_send(ctx, slot, i as usize, now);
            return;
        }
    }
    let Some(i) = open_slot(ctx, slots) else {
        ctx.t.errors[ErrorKind::NoSlot as usize] += 1;
        ctx.in_flight -= 1;
        return;
    };
    queue(ctx, &mut slots[i], url);
    connect(ctx, slots, i, now);
}

fn plan_burst(ctx: &mut Ctx, slot: &mut Slot, params: &SurgeParams) {
    slot.wbuf.clear();
    slot.woff = 0;
    slot.p_head = 0;
    slot.p_len = 0;
    let k = params.draw_burst(&mut ctx.rng);
    for _ in 0..k {
        let url = match &ctx.zipf {
            Some(z) => z.sample(&mut ctx.rng) as u32,
            None => 0,
        };
        queue(ctx, slot, url);
        ctx.t.fetches_started += 1;
        ctx.in_flight += 1;
    }
}

pub(super) fn launch_session(ctx: &mut Ctx, slots: &mut [Slot], params: &SurgeParams, now: u64) {
    ctx.t.sessions_started += 1;
    let Some(i) = open_slot(ctx, slots) else {
        ctx.t.errors[ErrorKind::NoSlot as usize] += 1;
        ctx.t.sessions_failed += 1;
        return;
    };
    ctx.sessions_active += 1;
    let slot = &mut slots[i];
    slot.in_session = true;
    slot.session_bad = false;
    slot.session_start = now;
    slot.bursts_left = params.draw_bursts(&mut ctx.rng);
    plan_burst(ctx, slot, params);
    connect(ctx, slots, i, now);
}

fn start_send(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) {
    slot.phase = Phase::Sending;
    for k in 0..slot.p_len {
        slot.pending[(slot.p_head + k) % MAX_BURST].sent_at = now;
    }
    begin_response(ctx, slot);
    slot.deadline = now + ctx.timeout_ns;
    flush(ctx, slot, i, now);
}

fn begin_response(ctx: &Ctx, slot: &mut Slot) {
    slot.parser.reset();
    slot.status = 0;
    slot.first_at = 0;
    if !ctx.cfg.urls[slot.pending[slot.p_head].url as usize]
        .expect
        .is_empty()
    {
        slot.hasher = Sha256::new();
    }
}

/// Writes what is left of the write buffer (over HTTPS, through TLS).
fn flush(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) {
    if slot.tls.is_some() {
        flush_tls(ctx, slot, i, now);
        return;
    }
    while slot.woff < slot.wbuf.len() {
        let Some(fd) = &slot.fd else { return };
        match sys::write(fd, &slot.wbuf[slot.woff..]) {
            Ok(n) => slot.woff += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                fail(ctx, slot, i, ErrorKind::Reset, now);
                return;
            }
        }
    }
    slot.phase = Phase::Receiving;
}

/// HTTPS: hands what is left of the write buffer to TLS (while sending), and writes
/// TLS's records to the socket until none is left or it would block (the rest on the
/// next EPOLLOUT). Once the requests are all out, the slot is receiving.
fn flush_tls(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) {
    loop {
        let (Some(fd), Some(tls)) = (&slot.fd, &mut slot.tls) else {
            return;
        };
        if slot.phase == Phase::Sending && slot.woff < slot.wbuf.len() {
            // Takes what fits TLS's buffer (all of it, but for a huge burst).
            if let Ok(n) = tls.writer().write(&slot.wbuf[slot.woff..]) {
                slot.woff += n;
            }
        }
        if !tls.wants_write() {
            if slot.phase == Phase::Sending && slot.woff == slot.wbuf.len() {
                slot.phase = Phase::Receiving;
            }
            return;
        }
        match tls.write_tls(&mut FdIo(fd.as_fd())) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                fail(ctx, slot, i, ErrorKind::Reset, now);
                return;
            }
        }
    }
}

/// HTTPS: a TLS failure (`why` kept if it is the run's first), counted as kind `tls` for
/// every fetch in flight on the connection, which is closed after the alert rustls has
/// queued (best effort; not reset, so that the server reads why). On an idle connection
/// nothing is counted.
fn tls_fail(ctx: &mut Ctx, slot: &mut Slot, i: usize, why: &dyn std::fmt::Display, _now: u64) {
    let fetches = in_flight(slot.phase);
    if fetches {
        if let Some(t) = ctx.t.tls.as_mut() {
            t.failed(why);
        }
    }
    if let (Some(fd), Some(mut tls)) = (&slot.fd, slot.tls.take()) {
        let _ = tls.write_tls(&mut FdIo(fd.as_fd()));
    }
    if fetches {
        fail_closing(ctx, slot, i, ErrorKind::Tls, false);
    } else {
        // An idle keep-alive connection (or a session's between bursts): no fetch failed;
        // it is closed as the plain path closes one the server ends.
        close_conn(ctx, slot, i, false);
    }
}

/// The TCP connection is established: over HTTP the requests go out; over HTTPS the
/// ClientHello does, and the requests once the handshake is done.
fn established(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) {
    ctx.t.connect.record(now - slot.conn_start);
    if slot.tls.is_none() {
        start_send(ctx, slot, i, now);
        return;
    }
    // The event batch's time may be behind by the handshakes processed before this one.
    let now = ctx.now();
    slot.phase = Phase::Handshaking;
    slot.hs_start = now;
    slot.deadline = now + ctx.timeout_ns;
    flush_tls(ctx, slot, i, now);
}

/// HTTPS: the handshake completed: counted (the clock read now: the client's own work on
/// the server's last flight is the handshake's), and the queued requests go out.
fn handshake_done(ctx: &mut Ctx, slot: &mut Slot, i: usize) {
    let now = ctx.now();
    if let (Some(t), Some(tls)) = (ctx.t.tls.as_mut(), &slot.tls) {
        if let (Some(v), Some(s)) = (tls.protocol_version(), tls.negotiated_cipher_suite()) {
            t.handshake(v, s.suite(), now.saturating_sub(slot.hs_start));
        }
    }
    start_send(ctx, slot, i, now);
}

pub(super) fn on_event(
    ctx: &mut Ctx,
    slot: &mut Slot,
    i: usize,
    flags: u32,
    rbuf: &mut [u8],
    pbuf: &mut [u8],
    now: u64,
) {
    if slot.phase == Phase::Connecting {
        if flags & (sys::OUT | sys::ERR | sys::HUP) == 0 {
            return;
        }
        let err = slot.fd.as_ref().map_or(0, sys::so_error);
        if err != 0 {
            let kind = if err == sys::Errno::CONNREFUSED.raw_os_error() {
                ErrorKind::Refused
            } else {
                ErrorKind::ConnectFailed
            };
            fail(ctx, slot, i, kind, now);
            return;
        }
        established(ctx, slot, i, now);
        if slot.fd.is_none() {
            return;
        }
    } else if flags & sys::OUT != 0 && (slot.phase == Phase::Sending || slot.tls.is_some()) {
        flush(ctx, slot, i, now);
        if slot.fd.is_none() {
            return;
        }
    }
    if flags & (sys::IN | sys::RDHUP | sys::HUP | sys::ERR) != 0 {
        if slot.tls.is_some() {
            read_all_tls(ctx, slot, i, rbuf, pbuf, now);
        } else {
            read_all(ctx, slot, i, rbuf, now);
        }
    }
}

/// Reads the socket into `rbuf`: the bytes read (0 at the end of the stream), or `None`
/// when it would block or failed (the slot then failed or closed).
fn read_some(ctx: &mut Ctx, slot: &mut Slot, i: usize, rbuf: &mut [u8], now: u64) -> Option<usize> {
    loop {
        let fd = slot.fd.as_ref()?;
        match sys::read(fd, rbuf) {
            Ok(n) => return Some(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                if slot.p_len > 0 && in_flight(slot.phase) {
                    fail(ctx, slot, i, ErrorKind::Reset, now);
                } else {
                    close_conn(ctx, slot, i, true);
                }
                return None;
            }
        }
    }
}

/// Whether a slot in `phase` has fetches on the way (connected, not yet answered).
fn in_flight(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Handshaking | Phase::Sending | Phase::Receiving
    )
}

/// Reads until the socket would block, feeding the parser (one clock reading for the
/// event: the plain path reads the clock once per event).
fn read_all(ctx: &mut Ctx, slot: &mut Slot, i: usize, rbuf: &mut [u8], now: u64) {
    loop {
        let Some(n) = read_some(ctx, slot, i, rbuf, now) else {
            return;
        };
        if n == 0 {
            on_eof(ctx, slot, i, now);
            return;
        }
        slot.deadline = now + ctx.timeout_ns;
        if !feed(ctx, slot, i, &rbuf[..n], now) {
            return;
        }
    }
}

/// HTTPS: reads until the socket would block; the bytes go through TLS (the handshake,
/// then records), the plaintext (copied to `pbuf`) to the parser, and what TLS has to
/// send back (its handshake flights, alerts) goes out.
fn read_all_tls(
    ctx: &mut Ctx,
    slot: &mut Slot,
    i: usize,
    rbuf: &mut [u8],
    pbuf: &mut [u8],
    mut now: u64,
) {
    let mut again = false;
    loop {
        if again {
            now = ctx.now();
        }
        again = true;
        let Some(n) = read_some(ctx, slot, i, rbuf, now) else {
            return;
        };
        if n == 0 {
            // Without close_notify: the response's framing says if it was whole.
            on_eof(ctx, slot, i, now);
            return;
        }
        if in_flight(slot.phase) {
            slot.deadline = now + ctx.timeout_ns;
        }
        let mut data = &rbuf[..n];
        while !data.is_empty() {
            let Some(tls) = slot.tls.as_mut() else { return };
            match tls.read_tls(&mut data) {
                Ok(0) => {
                    // Nothing more is read after close_notify.
                    on_eof(ctx, slot, i, now);
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    tls_fail(ctx, slot, i, &e, now);
                    return;
                }
            }
            let peer_closed = match tls.process_new_packets() {
                Ok(state) => state.peer_has_closed(),
                Err(e) => {
                    tls_fail(ctx, slot, i, &e, now);
                    return;
                }
            };
            if slot.phase == Phase::Handshaking && !tls.is_handshaking() {
                handshake_done(ctx, slot, i);
                now = ctx.now();
                if slot.fd.is_none() {
                    return;
                }
            }
            loop {
                let Some(tls) = slot.tls.as_mut() else { return };
                let k = match tls.reader().read(pbuf) {
                    Ok(k) if k > 0 => k,
                    _ => break, // none now (WouldBlock), or the end (close_notify)
                };
                if !feed(ctx, slot, i, &pbuf[..k], now) {
                    return;
                }
            }
            if peer_closed {
                on_eof(ctx, slot, i, now);
                return;
            }
        }
        if slot.tls.as_ref().is_some_and(|t| t.wants_write()) {
            flush_tls(ctx, slot, i, now);
        }
    }
}

/// Feeds response bytes to the parser, completing responses as they end; false when the
/// connection was closed on the way (failed, or done with).
fn feed(ctx: &mut Ctx, slot: &mut Slot, i: usize, mut data: &[u8], now: u64) -> bool {
    while !data.is_empty() {
        if slot.p_len == 0 || !matches!(slot.phase, Phase::Sending | Phase::Receiving) {
            fail(ctx, slot, i, ErrorKind::ExtraBytes, now);
            return false;
        }
        if slot.first_at == 0 {
            slot.first_at = now.max(1);
        }
        match slot.parser.feed(data) {
            Err(e) => {
                fail(ctx, slot, i, resp_error_kind(e), now);
                return false;
            }
            Ok(Step::NeedMore) => data = &[],
            Ok(Step::Interim { consumed }) => data = &data[consumed..],
            Ok(Step::Head { consumed, head }) => {
                slot.status = head.status;
                slot.close_after = head.close;
                data = &data[consumed..];
            }
            Ok(Step::Body {
                consumed,
                data: body,
            }) => {
                if !ctx.cfg.urls[slot.pending[slot.p_head].url as usize]
                    .expect
                    .is_empty()
                {
                    slot.hasher.update(body);
                }
                data = &data[consumed..];
            }
            Ok(Step::Done { consumed }) => data = &data[consumed..],
        }
        if slot.parser.is_done() {
            complete(ctx, slot, i, now);
            if slot.fd.is_none() {
                return false;
            }
        }
    }
    true
}

fn on_eof(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) {
    if slot.phase == Phase::Handshaking {
        let why = "the server closed the connection during the TLS handshake";
        tls_fail(ctx, slot, i, &why, now);
        return;
    }
    if slot.p_len == 0 || !matches!(slot.phase, Phase::Sending | Phase::Receiving) {
        // The server closed an idle connection: fine.
        close_conn(ctx, slot, i, false);
        return;
    }
    match slot.parser.eof() {
        Ok(()) => {
            // A close-delimited body ended; `complete` closes our side and fails any
            // request still pipelined behind it.
            slot.close_after = true;
            complete(ctx, slot, i, now);
        }
        Err(e) => fail(ctx, slot, i, resp_error_kind(e), now),
    }
}

fn resp_error_kind(e: RespError) -> ErrorKind {
    match e {
        RespError::BadHead | RespError::HeadTooLong => ErrorKind::BadHead,
        RespError::BadLength | RespError::BadChunk => ErrorKind::BadFraming,
        RespError::Truncated => ErrorKind::Truncated,
        RespError::NoResponse => ErrorKind::NoResponse,
    }
}

/// One response arrived in full: account for it and decide what the connection does next.
fn complete(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) {
    let p = slot.pending[slot.p_head];
    slot.p_head = (slot.p_head + 1) % MAX_BURST;
    slot.p_len -= 1;
    ctx.in_flight -= 1;
    let body = slot.parser.body_bytes;
    let v = verdict(
        ctx.cfg.expect_status,
        &ctx.cfg.urls[p.url as usize].expect,
        slot.status,
        body,
        || slot.hasher.finalize_reset().into(),
    );
    let first = slot.first_at.saturating_sub(p.sent_at);
    if !ctx
        .t
        .response(slot.status, body, first, now.saturating_sub(p.sent_at), v)
    {
        slot.session_bad |= slot.in_session;
    }
    if slot.p_len > 0 {
        if slot.close_after {
            fail(ctx, slot, i, ErrorKind::NoResponse, now);
            return;
        }
        begin_response(ctx, slot);
        return;
    }
    // Nothing more in flight on this connection.
    let keep = !slot.close_after && (ctx.cfg.keepalive || slot.in_session);
    if slot.in_session {
        slot.bursts_left = slot.bursts_left.saturating_sub(1);
        if slot.bursts_left == 0 || slot.session_bad {
            if slot.session_bad {
                ctx.t.sessions_failed += 1;
            } else {
                ctx.t.sessions_completed += 1;
                ctx.t.session.record(now - slot.session_start);
            }
            ctx.sessions_active -= 1;
            slot.in_session = false;
            close_conn(ctx, slot, i, false);
            return;
        }
        let Mode::Sessions { params, .. } = &ctx.cfg.mode else {
            return;
        };
        let think = params.draw_think(&mut ctx.rng);
        if !keep {
            release_fd(ctx, slot);
        }
        slot.phase = Phase::Thinking;
        slot.deadline = now + (think * 1e9) as u64;
        return;
    }
    if keep {
        slot.phase = Phase::Idle;
        slot.deadline = u64::MAX;
        ctx.idle.push((i as u32, slot.gen));
    } else {
        close_conn(ctx, slot, i, false);
    }
}

/// A session wakes from thinking: the next burst, on the same connection if it is open.
fn wake(ctx: &mut Ctx, slot: &mut Slot, i: usize, now: u64) -> bool {
    let Mode::Sessions { params, .. } = &ctx.cfg.mode else {
        return false;
    };
    plan_burst(ctx, slot, params);
    if slot.fd.is_some() {
        start_send(ctx, slot, i, now);
        false
    } else {
        true // needs a new connection
    }
}

/// Fails every fetch in flight on `slot` with `kind` and closes the connection.
fn fail(ctx: &mut Ctx, slot: &mut Slot, i: usize, kind: ErrorKind, _now: u64) {
    fail_closing(ctx, slot, i, kind, true);
}

/// [`fail`], the connection reset (`abort`) or closed gracefully.
fn fail_closing(ctx: &mut Ctx, slot: &mut Slot, i: usize, kind: ErrorKind, abort: bool) {
    let n = slot.p_len.max(1) as u64;
    ctx.t.errors[kind as usize] += n;
    ctx.in_flight -= slot.p_len as u64;
    slot.p_len = 0;
    if slot.in_session {
        slot.in_session = false;
        ctx.sessions_active -= 1;
        ctx.t.sessions_failed += 1;
    }
    close_conn(ctx, slot, i, abort);
}

fn release_fd(ctx: &mut Ctx, slot: &mut Slot) {
    if slot.close_fd(false) {
        ctx.open -= 1;
    }
}

/// Closes the connection and frees the slot (unless a session still owns it).
fn close_conn(ctx: &mut Ctx, slot: &mut Slot, i: usize, abort: bool) {
    if slot.close_fd(abort) {
        ctx.open -= 1;
    }
    if slot.in_session {
        // The server closed a session's idle connection: reconnect at the next burst.
        slot.phase = Phase::Thinking;
        return;
    }
    slot.phase = Phase::Free;
    slot.p_len = 0;
    slot.deadline = u64::MAX;
    slot.gen = slot.gen.wrapping_add(1);
    ctx.free.push(i as u32);
}

/// Timeouts and session wake-ups.
pub(super) fn scan(ctx: &mut Ctx, slots: &mut [Slot], now: u64) {
    for i in 0..slots.len() {
        if slots[i].deadline > now {
            continue;
        }
        match slots[i].phase {
            // Over HTTPS the TLS handshake is part of connecting.
            Phase::Connecting | Phase::Handshaking => {
                fail(ctx, &mut slots[i], i, ErrorKind::ConnectTimeout, now)
            }
            Phase::Sending | Phase::Receiving => {
                fail(ctx, &mut slots[i], i, ErrorKind::ResponseTimeout, now)
            }
            Phase::Thinking => {
                if wake(ctx, &mut slots[i], i, now) {
                    slots[i].gen = slots[i].gen.wrapping_add(1);
                    connect(ctx, slots, i, now);
                }
            }
            Phase::Free | Phase::Idle => slots[i].deadline = u64::MAX,
        }
    }
}
