//! Configuring the host side of the TAP: bring it up and give it an IPv4 address, with
//! the same ioctls `ip link set up` and `ip addr add` use.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use bareweb_engine::wire::Ipv4Address;

#[repr(C)]
struct IfReqAddr {
    name: [u8; libc::IFNAMSIZ],
    addr: libc::sockaddr_in,
    _pad: [u8; 8],
}

#[repr(C)]
struct IfReqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn name_bytes(name: &str) -> io::Result<[u8; libc::IFNAMSIZ]> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    let mut b = [0u8; libc::IFNAMSIZ];
    b[..name.len()].copy_from_slice(name.as_bytes());
    Ok(b)
}

fn sockaddr(ip: Ipv4Address) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip.0),
        },
        sin_zero: [0; 8],
    }
}

fn set_addr(sock: &OwnedFd, name: &str, req: libc::c_ulong, ip: Ipv4Address) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut r = IfReqAddr {
        name: name_bytes(name)?,
        addr: sockaddr(ip),
        _pad: [0; 8],
    };
    // SAFETY: the request reads an ifreq whose union starts with a sockaddr, as laid out.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), req, &mut r as *mut IfReqAddr) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Gives interface `name` the address `ip/prefix_len` and brings it up.
pub fn configure(name: &str, ip: Ipv4Address, prefix_len: u8) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = control_socket()?;
    set_addr(&sock, name, libc::SIOCSIFADDR, ip)?;
    let mask = if prefix_len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix_len.min(32)))
    };
    set_addr(
        &sock,
        name,
        libc::SIOCSIFNETMASK,
        Ipv4Address(mask.to_be_bytes()),
    )?;
    let mut f = IfReqFlags {
        name: name_bytes(name)?,
        flags: 0,
        _pad: [0; 22],
    };
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the flags member of the ifreq.
    let rc = unsafe {
        libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCGIFFLAGS,
            &mut f as *mut IfReqFlags,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    f.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: as above.
    let rc = unsafe {
        libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCSIFFLAGS,
            &mut f as *mut IfReqFlags,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The first host address of `ip/prefix_len` that is not `ip` (the host side's default).
pub fn first_free(ip: Ipv4Address, prefix_len: u8) -> Option<Ipv4Address> {
    if prefix_len >= 31 {
        return None;
    }
    let mask = u32::MAX << (32 - u32::from(prefix_len));
    let net = u32::from_be_bytes(ip.0) & mask;
    let broadcast = net | !mask;
    (net + 1..broadcast)
        .map(|a| Ipv4Address(a.to_be_bytes()))
        .find(|a| *a != ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_free_skips_our_address() {
        assert_eq!(
            first_free(Ipv4Address([10, 0, 0, 2]), 24),
            Some(Ipv4Address([10, 0, 0, 1]))
        );
        assert_eq!(
            first_free(Ipv4Address([10, 0, 0, 1]), 24),
            Some(Ipv4Address([10, 0, 0, 2]))
        );
        assert_eq!(
            first_free(Ipv4Address([192, 168, 7, 9]), 30),
            Some(Ipv4Address([192, 168, 7, 10]))
        );
        assert_eq!(first_free(Ipv4Address([10, 0, 0, 1]), 31), None);
    }
}
