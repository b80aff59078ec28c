//! The few Linux calls the load generator's loop needs, wrapped so the rest of the crate
//! has no `unsafe`: non-blocking TCP sockets, epoll, a nanosecond timer, per-thread CPU
//! time. Every wrapper
//! returns `io::Result` (errno) and never panics.

use std::io;
use std::net::SocketAddrV4;
use std::os::fd::RawFd;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// An epoll instance; closed on drop.
pub struct Epoll {
    fd: RawFd,
}

pub const IN: u32 = libc::EPOLLIN as u32;
pub const OUT: u32 = libc::EPOLLOUT as u32;
pub const ERR: u32 = libc::EPOLLERR as u32;
pub const HUP: u32 = libc::EPOLLHUP as u32;
pub const RDHUP: u32 = libc::EPOLLRDHUP as u32;
const ET: u32 = libc::EPOLLET as u32;

pub type Event = libc::epoll_event;

pub fn empty_event() -> Event {
    libc::epoll_event { events: 0, u64: 0 }
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall with a flag argument; the returned fd is owned here.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll { fd })
    }

    /// Registers `fd` edge-triggered for input, output and peer close, tagged `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: IN | OUT | RDHUP | ET,
            u64: token,
        };
        // SAFETY: `ev` is a valid epoll_event that outlives the call; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Registers `fd` level-triggered for input only, tagged `token` (UDP sockets, timers).
    pub fn add_in(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: IN,
            u64: token,
        };
        // SAFETY: `ev` is a valid epoll_event that outlives the call; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Waits up to `timeout_ms` (-1: forever) and fills `events`; returns how many.
    pub fn wait(&self, events: &mut [Event], timeout_ms: i32) -> io::Result<usize> {
        let max = events.len().min(i32::MAX as usize) as libc::c_int;
        // SAFETY: `events` is a valid, writable buffer of `max` epoll_event entries.
        let r = unsafe { libc::epoll_wait(self.fd, events.as_mut_ptr(), max, timeout_ms) };
        match cvt(r) {
            Ok(n) => Ok(n as usize),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by this value and closed exactly once.
        unsafe { libc::close(self.fd) };
    }
}

/// Outcome of starting a non-blocking connect.
pub enum Connect {
    /// Connected at once (possible on loopback).
    Done(RawFd),
    /// In progress: wait for writability, then check [`so_error`].
    Pending(RawFd),
}

/// Opens a non-blocking TCP socket with TCP_NODELAY and starts connecting to `addr`.
pub fn connect(addr: SocketAddrV4) -> io::Result<Connect> {
    // SAFETY: plain syscall; the returned fd is owned by the caller.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    let one: libc::c_int = 1;
    // SAFETY: `one` is a c_int living across the call; its size is passed.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(addr.ip().octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `sa` is a valid sockaddr_in and its exact size is passed.
    let r = unsafe {
        libc::connect(
            fd,
            &sa as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r == 0 {
        return Ok(Connect::Done(fd));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok(Connect::Pending(fd))
    } else {
        close(fd, false);
        Err(e)
    }
}

/// The pending error of a socket (0 when a connect succeeded).
pub fn so_error(fd: RawFd) -> i32 {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are valid for writes and `len` holds err's size.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut err as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        err
    }
}

pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    cvt_size(unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) })
}

pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes. MSG_NOSIGNAL: a closed peer
    // gives EPIPE, not SIGPIPE.
    cvt_size(unsafe {
        libc::send(
            fd,
            buf.as_ptr() as *const libc::c_void,
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    })
}

/// Closes `fd`; with `abort` the connection is reset (SO_LINGER 0) instead of closed
/// gracefully, so a timed-out or broken connection leaves no state behind.
pub fn close(fd: RawFd, abort: bool) {
    if abort {
        let lg = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: `lg` is a valid linger struct living across the call; its size is passed.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &lg as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
    }
    // SAFETY: the caller owns `fd` and never uses it after this call.
    unsafe { libc::close(fd) };
}

/// CPU time (user + system) used by the calling thread so far, in seconds.
pub fn thread_cpu_secs() -> f64 {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid for writes.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Raises this process's open-file limit to its hard limit (a run may hold thousands
/// of sockets); returns the soft limit in force afterwards.
pub fn raise_nofile() -> u64 {
    // SAFETY: rlimit is plain old data.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `rl` is valid for writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 1024;
    }
    if rl.rlim_cur < rl.rlim_max {
        rl.rlim_cur = rl.rlim_max;
        // SAFETY: `rl` is a valid rlimit read above.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) };
    }
    rl.rlim_cur
}

/// Clock ticks per second of /proc's CPU times.
pub fn clk_tck() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU time (user + system) of the children this process has waited for, in seconds.
pub fn children_cpu_secs() -> f64 {
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid for writes.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Moves the calling thread into the network namespace at `path` (e.g.
/// /run/netns/NAME). Only this thread changes namespace.
pub fn enter_netns(path: &std::path::Path) -> io::Result<()> {
    let f = std::fs::File::open(path)?;
    use std::os::fd::AsRawFd;
    // SAFETY: `f` is an open namespace file for the duration of the call.
    cvt(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) })?;
    Ok(())
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: i32) -> bool {
    // SAFETY: plain syscall; the caller names a process it started.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Effective user id is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// From now on SIGINT, SIGTERM and SIGHUP only set a flag ([`stop_requested`]), so a long
/// run can stop between steps and clean up (namespaces, servers) instead of dying.
pub fn catch_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: on_stop only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(
                sig,
                on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
}

pub fn stop_requested() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}

/// A monotonic timer (timerfd) that an epoll loop can wait on with nanosecond precision
/// (epoll_wait's own timeout has whole milliseconds); closed on drop.
pub struct Timer {
    fd: RawFd,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        // SAFETY: plain syscall with flag arguments; the returned fd is owned here.
        let fd = cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        Ok(Timer { fd })
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Fires once, `ns` nanoseconds from now (at least 1).
    pub fn arm_in(&self, ns: u64) -> io::Result<()> {
        let ns = ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for (null).
        cvt(unsafe { libc::timerfd_settime(self.fd, 0, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }

    /// Clears an expiry (the fd is readable until then).
    pub fn clear(&self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid 8-byte buffer from our own fd.
        unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: the fd is owned by this value and closed exactly once.
        unsafe { libc::close(self.fd) };
    }
}
