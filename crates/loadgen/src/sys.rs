//! The Linux calls the load generator's loop needs — non-blocking TCP sockets, epoll, a
//! nanosecond timer, per-thread CPU time, namespaces, signals — on `rustix` (typed
//! system calls, owned descriptors) and `signal-hook` (signal flags): no `unsafe` here or
//! anywhere in the crate. Every call returns `io::Result` and never panics; descriptors
//! are [`OwnedFd`]s, closed when dropped.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustix::event::epoll;
use rustix::net::{self, sockopt, AddressFamily, SendFlags, SocketFlags, SocketType};
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};

pub use rustix::io::Errno;
pub use rustix::process::Signal;

/// An epoll instance; closed on drop.
pub struct Epoll {
    fd: OwnedFd,
}

pub const IN: u32 = epoll::EventFlags::IN.bits();
pub const OUT: u32 = epoll::EventFlags::OUT.bits();
pub const ERR: u32 = epoll::EventFlags::ERR.bits();
pub const HUP: u32 = epoll::EventFlags::HUP.bits();
pub const RDHUP: u32 = epoll::EventFlags::RDHUP.bits();

pub type Event = epoll::Event;

pub fn empty_event() -> Event {
    epoll::Event {
        flags: epoll::EventFlags::empty(),
        data: epoll::EventData::new_u64(0),
    }
}

/// An event's token and flags (`IN`, `OUT`...).
pub fn event_parts(ev: &Event) -> (u64, u32) {
    let (data, flags) = (ev.data, ev.flags);
    (data.u64(), flags.bits())
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        let fd = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        Ok(Epoll { fd })
    }

    /// Registers `fd` edge-triggered for input, output and peer close, tagged `token`.
    pub fn add(&self, fd: impl AsFd, token: u64) -> io::Result<()> {
        use epoll::EventFlags as F;
        epoll::add(
            &self.fd,
            fd,
            epoll::EventData::new_u64(token),
            F::IN | F::OUT | F::RDHUP | F::ET,
        )?;
        Ok(())
    }

    /// Registers `fd` level-triggered for input only, tagged `token` (UDP sockets, timers).
    pub fn add_in(&self, fd: impl AsFd, token: u64) -> io::Result<()> {
        epoll::add(
            &self.fd,
            fd,
            epoll::EventData::new_u64(token),
            epoll::EventFlags::IN,
        )?;
        Ok(())
    }

    /// Waits up to `timeout_ms` (-1: forever) and fills `events`; returns how many.
    pub fn wait(&self, events: &mut [Event], timeout_ms: i32) -> io::Result<usize> {
        let t = (timeout_ms >= 0).then(|| Timespec {
            tv_sec: i64::from(timeout_ms / 1000),
            tv_nsec: i64::from(timeout_ms % 1000) * 1_000_000,
        });
        match epoll::wait(&self.fd, events, t.as_ref()) {
            Ok(n) => Ok(n),
            Err(Errno::INTR) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }
}

/// Outcome of starting a non-blocking connect.
pub enum Connect {
    /// Connected at once (possible on loopback).
    Done(OwnedFd),
    /// In progress: wait for writability, then check [`so_error`].
    Pending(OwnedFd),
}

/// Opens a non-blocking TCP socket with TCP_NODELAY and starts connecting to `addr`.
pub fn connect(addr: SocketAddr) -> io::Result<Connect> {
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    // Best effort, as before: a socket without it still works.
    let _ = sockopt::set_tcp_nodelay(&fd, true);
    match net::connect(&fd, &addr) {
        Ok(()) => Ok(Connect::Done(fd)),
        Err(Errno::INPROGRESS) => Ok(Connect::Pending(fd)),
        Err(e) => Err(e.into()), // `fd` is closed on the way out
    }
}

/// The pending error of a socket (0 when a connect succeeded), as an errno.
pub fn so_error(fd: impl AsFd) -> i32 {
    match sockopt::socket_error(fd) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) | Err(e) => e.raw_os_error(),
    }
}

pub fn read(fd: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::io::read(fd, buf)?)
}

/// Sends `buf`. MSG_NOSIGNAL: a closed peer gives EPIPE, not SIGPIPE.
pub fn write(fd: impl AsFd, buf: &[u8]) -> io::Result<usize> {
    Ok(net::send(fd, buf, SendFlags::NOSIGNAL)?)
}

/// Sends `bufs` in one call (`sendmsg`), MSG_NOSIGNAL as [`write()`].
pub fn write_vectored(fd: impl AsFd, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
    Ok(net::sendmsg(
        fd,
        bufs,
        &mut net::SendAncillaryBuffer::default(),
        SendFlags::NOSIGNAL,
    )?)
}

/// Closes `fd`; with `abort` the connection is reset (SO_LINGER 0) instead of closed
/// gracefully, so a timed-out or broken connection leaves no state behind.
pub fn close(fd: OwnedFd, abort: bool) {
    if abort {
        let _ = sockopt::set_socket_linger(&fd, Some(Duration::ZERO));
    }
    drop(fd);
}

fn secs(t: Timespec) -> f64 {
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// CPU time (user + system) used by the calling thread so far, in seconds.
pub fn thread_cpu_secs() -> f64 {
    secs(rustix::time::clock_gettime(
        rustix::time::ClockId::ThreadCPUTime,
    ))
}

/// Raises this process's open-file limit to its hard limit (a run may hold thousands
/// of sockets); returns the soft limit in force afterwards.
pub fn raise_nofile() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut rl = getrlimit(Resource::Nofile);
    if rl.current < rl.maximum || (rl.current.is_some() && rl.maximum.is_none()) {
        rl.current = rl.maximum;
        let _ = setrlimit(Resource::Nofile, rl);
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Clock ticks per second of /proc's CPU times.
pub fn clk_tck() -> f64 {
    match rustix::param::clock_ticks_per_second() {
        0 => 100.0,
        t => t as f64,
    }
}

/// CPU time (user + system) of the children this process has waited for, in seconds:
/// /proc/self/stat's cutime and cstime (rustix has no getrusage; clock-tick resolution).
pub fn children_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name in parentheses: state is field 3, cutime 16, cstime 17.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (tick(16 - 3) + tick(17 - 3)) as f64 / clk_tck()
}

/// Moves the calling thread into the network namespace at `path` (e.g.
/// /run/netns/NAME). Only this thread changes namespace.
pub fn enter_netns(path: &std::path::Path) -> io::Result<()> {
    let f = std::fs::File::open(path)?;
    rustix::thread::move_into_link_name_space(
        f.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )?;
    Ok(())
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: Signal) -> bool {
    rustix::process::Pid::from_raw(pid)
        .is_some_and(|p| rustix::process::kill_process(p, sig).is_ok())
}

/// Effective user id is root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn stop_flag() -> &'static Arc<AtomicBool> {
    static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// From now on SIGINT, SIGTERM and SIGHUP only set a flag ([`stop_requested`]), so a long
/// run can stop between steps and clean up (namespaces, servers) instead of dying.
pub fn catch_stop_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(stop_flag())) {
            eprintln!("bareweb: cannot catch signal {sig}: {e}");
        }
    }
}

pub fn stop_requested() -> bool {
    stop_flag().load(Ordering::Relaxed)
}

/// A monotonic timer (timerfd) that an epoll loop can wait on with nanosecond precision
/// (epoll_wait's own timeout has whole milliseconds); closed on drop.
pub struct Timer {
    fd: OwnedFd,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        let fd = rustix::time::timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        Ok(Timer { fd })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Fires once, `ns` nanoseconds from now (at least 1).
    pub fn arm_in(&self, ns: u64) -> io::Result<()> {
        let ns = ns.max(1);
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: (ns / 1_000_000_000) as i64,
                tv_nsec: (ns % 1_000_000_000) as i64,
            },
        };
        rustix::time::timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec)?;
        Ok(())
    }

    /// Clears an expiry (the fd is readable until then).
    pub fn clear(&self) {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_fires_through_epoll_and_a_refused_connect_is_said() {
        let ep = Epoll::new().unwrap();
        let t = Timer::new().unwrap();
        ep.add_in(t.fd(), 7).unwrap();
        t.arm_in(1_000_000).unwrap();
        let mut evs = [empty_event(); 4];
        let n = ep.wait(&mut evs, 1000).unwrap();
        assert_eq!(n, 1);
        assert_eq!(event_parts(&evs[0]), (7, IN));
        t.clear();
        assert_eq!(ep.wait(&mut evs, 0).unwrap(), 0, "cleared");
        // A port nobody listens on: refused, at once or through SO_ERROR.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let refused = Errno::CONNREFUSED.raw_os_error();
        match connect(addr) {
            Ok(Connect::Pending(fd)) => {
                ep.add(&fd, 9).unwrap();
                let n = ep.wait(&mut evs, 1000).unwrap();
                assert!(n == 1 && event_parts(&evs[0]).1 & ERR != 0);
                assert_eq!(so_error(&fd), refused);
                close(fd, true);
            }
            Ok(Connect::Done(_)) => panic!("connected to a closed port"),
            Err(e) => assert_eq!(e.raw_os_error(), Some(refused)),
        }
        assert!(thread_cpu_secs() > 0.0 && clk_tck() >= 1.0);
        assert!(raise_nofile() >= 1024);
    }
}
