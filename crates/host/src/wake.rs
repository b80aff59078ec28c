//! The host's bell for a sleeping core: an `eventfd(2)` the sleeper polls (with a
//! timeout) and a producer on another thread writes. Paired with the engine's
//! [`Doze`](bareweb_engine::ring::Doze), which decides when a write is needed, so a busy
//! core makes no system call for it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
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
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let raw = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor we just opened and own exclusively.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
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
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our descriptor. A full counter
        // (EAGAIN) still leaves the fd readable, which is all a sleeper needs.
        unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&one as *const u64).cast::<libc::c_void>(),
                8,
            )
        };
    }

    /// The descriptor to poll.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Resets the counter after a wake-up (a no-op when it was not signalled).
    pub fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a valid u64; the fd is non-blocking.
        unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&mut v as *mut u64).cast::<libc::c_void>(),
                8,
            )
        };
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
