//! The XDP attachment of an interface as rtnetlink sees it: which program is attached in
//! which mode (`RTM_GETLINK`, `IFLA_XDP`), and attaching or removing one the old way
//! (`RTM_SETLINK` with `IFLA_XDP_FD`), for kernels without XDP links and for removing a
//! program an earlier run left behind.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const NETLINK_ROUTE: i32 = 0;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_SETLINK: u16 = 19;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLA_F_NESTED: u16 = 0x8000;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_PROG_ID: u16 = 4;

/// How a program is attached (`XDP_ATTACHED_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attached {
    /// In the driver (native XDP).
    Driver,
    /// On the generic (skb) path.
    Generic,
    /// Offloaded to the NIC, or several at once.
    Other,
}

/// The program attached to an interface now, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current {
    pub prog_id: u32,
    pub mode: Attached,
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A netlink message under construction: header, `ifinfomsg`, attributes.
struct Msg(Vec<u8>);

impl Msg {
    fn new(kind: u16, flags: u16, ifindex: u32) -> Msg {
        let mut b = vec![0u8; 32];
        b[4..6].copy_from_slice(&kind.to_ne_bytes());
        b[6..8].copy_from_slice(&(flags | NLM_F_REQUEST).to_ne_bytes());
        b[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence number
        b[16] = libc::AF_UNSPEC as u8;
        b[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
        Msg(b)
    }
    fn attr(&mut self, kind: u16, data: &[u8]) {
        let len = 4 + data.len();
        self.0.extend_from_slice(&(len as u16).to_ne_bytes());
        self.0.extend_from_slice(&kind.to_ne_bytes());
        self.0.extend_from_slice(data);
        self.0.resize(self.0.len().next_multiple_of(4), 0);
    }
    fn finish(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[0..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

fn send(sock: &OwnedFd, msg: &[u8]) -> io::Result<()> {
    // SAFETY: sends `msg.len()` bytes from a live buffer to the kernel (nl_pid 0).
    let r = unsafe {
        let mut addr: libc::sockaddr_nl = std::mem::zeroed();
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        libc::sendto(
            sock.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn recv(sock: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: receives into a live buffer of the given length.
    let r = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// Walks the attributes in `b`: (type without flags, payload).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, 0)?);
        let kind = u16_at(b, 2)? & !NLA_F_NESTED;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = &b[len.next_multiple_of(4).min(b.len())..];
        Some((kind, payload))
    })
}

/// The XDP program attached to interface `ifindex`, if any.
pub fn current(ifindex: u32) -> io::Result<Option<Current>> {
    let sock = socket()?;
    send(&sock, &Msg::new(RTM_GETLINK, 0, ifindex).finish())?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = recv(&sock, &mut buf)?;
    let msg = &buf[..n];
    let kind = u16_at(msg, 4).unwrap_or(0);
    if kind == NLMSG_ERROR {
        let code = u32_at(msg, 16).unwrap_or(0) as i32;
        return Err(io::Error::from_raw_os_error(-code));
    }
    if kind != RTM_NEWLINK {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "unexpected netlink answer",
        ));
    }
    let len = (u32_at(msg, 0).unwrap_or(0) as usize).min(msg.len());
    for (t, payload) in attrs(msg.get(32..len).unwrap_or(&[])) {
        if t != IFLA_XDP {
            continue;
        }
        let mut mode = 0u8;
        let mut id = 0u32;
        for (x, v) in attrs(payload) {
            match x {
                IFLA_XDP_ATTACHED => mode = v.first().copied().unwrap_or(0),
                IFLA_XDP_PROG_ID => id = u32_at(v, 0).unwrap_or(0),
                _ => {}
            }
        }
        return Ok(match mode {
            0 => None,
            1 => Some(Current {
                prog_id: id,
                mode: Attached::Driver,
            }),
            2 => Some(Current {
                prog_id: id,
                mode: Attached::Generic,
            }),
            _ => Some(Current {
                prog_id: id,
                mode: Attached::Other,
            }),
        });
    }
    Ok(None)
}

/// Attaches program `prog` (or, with `prog` -1, removes the one attached in mode `flags`).
pub fn set(ifindex: u32, prog: RawFd, flags: u32) -> io::Result<()> {
    let sock = socket()?;
    let mut xdp = Msg(Vec::new());
    xdp.attr(IFLA_XDP_FD, &prog.to_ne_bytes());
    xdp.attr(IFLA_XDP_FLAGS, &flags.to_ne_bytes());
    let mut m = Msg::new(RTM_SETLINK, NLM_F_ACK, ifindex);
    m.attr(IFLA_XDP | NLA_F_NESTED, &xdp.0);
    send(&sock, &m.finish())?;
    let mut buf = vec![0u8; 8192];
    let n = recv(&sock, &mut buf)?;
    if u16_at(&buf[..n], 4) == Some(NLMSG_ERROR) {
        let code = u32_at(&buf[..n], 16).unwrap_or(0) as i32;
        if code != 0 {
            return Err(io::Error::from_raw_os_error(-code));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_walked_and_bad_lengths_stop_the_walk() {
        let mut m = Msg(Vec::new());
        m.attr(IFLA_XDP_ATTACHED, &[1]);
        m.attr(IFLA_XDP_PROG_ID, &42u32.to_ne_bytes());
        let got: Vec<(u16, Vec<u8>)> = attrs(&m.0).map(|(t, v)| (t, v.to_vec())).collect();
        assert_eq!(
            got,
            vec![
                (IFLA_XDP_ATTACHED, vec![1]),
                (IFLA_XDP_PROG_ID, 42u32.to_ne_bytes().to_vec())
            ]
        );
        // A length past the end, or shorter than a header, ends the walk.
        assert_eq!(attrs(&[200, 0, 1, 0, 9]).count(), 0);
        assert_eq!(attrs(&[2, 0, 1, 0]).count(), 0);
    }

    #[test]
    fn loopback_has_no_xdp_program() {
        // Interface 1 is lo in every namespace.
        assert_eq!(current(1).unwrap(), None);
    }
}
