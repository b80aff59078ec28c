//! The host's bell for a sleeping core: an `eventfd(2)` the sleeper polls (with a
//! timeout) and a producer on another thread writes. Paired with the engine's
//! [`Doze`](bareweb_engine::ring::Doze), which decides when a write is needed, so a busy
//! core makes no system call for it.
//!
//! The eventfd through `rustix`; the wait is libc's `ppoll` on raw descriptors, because a
//! core's loop keeps its queues' descriptors in a list while the queues themselves move
//! into the core's thread (a borrowed-descriptor list would need those lifetimes tied).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use bareweb_engine::ring::{Bell, Doze};

/// An eventfd, shared between the sleeper and its bell.
#[derive(Clone)]
pub struct Wake {
    fd: Arc<OwnedFd>,
}

impl Wake {
    /// A new, unsignalled eventfd (non-blocking, close-on-exec).
    pub fn new() -> io::Result<Wake> {
        use rustix::event::{eventfd, EventfdFlags};
        let fd = eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC)?;
        Ok(Wake { fd: Arc::new(fd) })
    }

    /// A [`Doze`] whose bell signals this eventfd.
    pub fn doze(&self) -> Doze {
        let w = self.clone();
        let bell: Bell = Box::new(move || w.ring());
        Doze::new(bell)
    }

    /// Signals the eventfd (a sleeper polling it wakes).
    pub fn ring(&self) {
        // A full counter (EAGAIN) still leaves the fd readable, all a sleeper needs.
        let _ = rustix::io::write(&*self.fd, &1u64.to_ne_bytes());
    }

    /// The descriptor to poll.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Resets the counter after a wake-up (a no-op when it was not signalled).
    pub fn clear(&self) {
        let mut v = [0u8; 8];
        let _ = rustix::io::read(&*self.fd, &mut v);
    }

    /// Sleeps until the eventfd is signalled or `us` microseconds pass, then clears it.
    pub fn wait_us(&self, us: u64) {
        wait_fds_us(&[self.raw_fd()], us);
        self.clear();
    }
}

/// Waits until one of `fds` (the first four) is readable or `us` microseconds pass
/// (`ppoll`, so timer slack, not the millisecond timeout of `poll`, bounds the wait).
pub fn wait_fds_us(fds: &[RawFd], us: u64) {
    let mut p = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 8];
    let n = fds.len().min(p.len());
    for (slot, &fd) in p.iter_mut().zip(&fds[..n]) {
        slot.fd = fd;
    }
    let ts = libc::timespec {
        tv_sec: (us / 1_000_000) as libc::time_t,
        tv_nsec: ((us % 1_000_000) * 1000) as libc::c_long,
    };
    // SAFETY: `p` holds `n` valid pollfds and `ts` a valid timespec for the duration of
    // the call; a null sigmask leaves the mask unchanged.
    unsafe { libc::ppoll(p.as_mut_ptr(), n as libc::nfds_t, &ts, std::ptr::null()) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_nudged_sleeper_wakes_before_its_timeout() {
        let w = Wake::new().unwrap();
        let doze = w.doze();
        doze.announce();
        let producer = doze.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            assert!(producer.nudge());
        });
        let start = Instant::now();
        w.wait_us(5_000_000);
        doze.awake();
        let waited = start.elapsed();
        t.join().unwrap();
        assert!(waited < Duration::from_secs(2), "woke after {waited:?}");
        // Cleared: the next wait runs to its timeout.
        let start = Instant::now();
        w.wait_us(10_000);
        assert!(start.elapsed() >= Duration::from_millis(9));
    }
}
