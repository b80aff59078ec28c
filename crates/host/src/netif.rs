//! Configuring the host side of the TAP: bring it up and give it an IPv4 address, with
//! the same ioctls `ip link set up` and `ip addr add` use; for a NIC set (issue 14), the
//! bridge the TAPs share (`brctl`'s ioctls) and each TAP's link, as the link monitor
//! reads it ([`TapLink`]: up and carrier, `SIOCGIFFLAGS`).

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

fn get_flags(sock: &OwnedFd, name: &str) -> io::Result<libc::c_short> {
    use std::os::fd::AsRawFd;
    let mut f = IfReqFlags {
        name: name_bytes(name)?,
        flags: 0,
        _pad: [0; 22],
    };
    // SAFETY: SIOCGIFFLAGS writes the flags member of the ifreq, laid out as IfReqFlags.
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
    Ok(f.flags)
}

/// Brings interface `name` up (`ip link set NAME up`).
pub fn set_up(name: &str) -> io::Result<()> {
    set_flag_up(name, true)
}

/// Brings interface `name` up or down.
fn set_flag_up(name: &str, up: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = control_socket()?;
    let flags = get_flags(&sock, name)?;
    let up_bit = libc::IFF_UP as libc::c_short;
    let mut f = IfReqFlags {
        name: name_bytes(name)?,
        flags: if up { flags | up_bit } else { flags & !up_bit },
        _pad: [0; 22],
    };
    // SAFETY: SIOCSIFFLAGS reads the flags member of the ifreq, laid out as IfReqFlags.
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

/// `SIOCBRADDBR`, `SIOCBRDELBR`, `SIOCBRADDIF` (linux/sockios.h): the bridge ioctls.
const SIOCBRADDBR: libc::c_ulong = 0x89a0;
const SIOCBRDELBR: libc::c_ulong = 0x89a1;
const SIOCBRADDIF: libc::c_ulong = 0x89a2;

#[repr(C)]
struct IfReqIndex {
    name: [u8; libc::IFNAMSIZ],
    index: libc::c_int,
    _pad: [u8; 20],
}

/// Creates bridge `name` if it does not exist; returns whether it was created.
pub fn bridge_create(name: &str) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let sock = control_socket()?;
    let b = name_bytes(name)?;
    // SAFETY: SIOCBRADDBR reads a NUL-terminated interface name (b is IFNAMSIZ bytes with
    // the name shorter than that, checked by name_bytes).
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCBRADDBR, b.as_ptr()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EEXIST) => Ok(false),
            _ => Err(e),
        };
    }
    Ok(true)
}

/// Deletes bridge `name` (it must be down: [`bridge_create`]'s undo).
pub fn bridge_delete(name: &str) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = control_socket()?;
    let b = name_bytes(name)?;
    // SAFETY: as bridge_create.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCBRDELBR, b.as_ptr()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Takes bridge `name` down and deletes it (its ports leave it).
pub fn bridge_remove(name: &str) -> io::Result<()> {
    set_flag_up(name, false)?;
    bridge_delete(name)
}

/// Puts interface `port` on bridge `bridge` (`ip link set PORT master BRIDGE`); an
/// interface already on it is left as it is.
pub fn bridge_add(bridge: &str, port: &str) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = control_socket()?;
    let cname = std::ffi::CString::new(port)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"))?;
    // SAFETY: if_nametoindex reads a NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    let mut r = IfReqIndex {
        name: name_bytes(bridge)?,
        index: index as libc::c_int,
        _pad: [0; 20],
    };
    // SAFETY: SIOCBRADDIF reads the ifreq's name and ifindex, laid out as IfReqIndex.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCBRADDIF, &mut r as *mut IfReqIndex) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        // EBUSY: the port is already on a bridge (this one, if serve ran before).
        return match e.raw_os_error() {
            Some(libc::EBUSY) => Ok(()),
            _ => Err(e),
        };
    }
    Ok(())
}

/// A TAP's link as the bond's link monitor reads it: up (`ip link set NAME up`) and
/// with carrier (`IFF_RUNNING`: a TAP has carrier while a process holds it open, unless
/// `ip link set NAME carrier off`). One `SIOCGIFFLAGS` per reading.
pub struct TapLink {
    sock: OwnedFd,
    name: String,
}

impl TapLink {
    /// The link of interface `name`.
    pub fn new(name: &str) -> io::Result<TapLink> {
        name_bytes(name)?;
        Ok(TapLink {
            sock: control_socket()?,
            name: name.to_string(),
        })
    }
}

impl bareweb_engine::nic::LinkSense for TapLink {
    fn link_up(&mut self) -> bool {
        // An interface that cannot be asked (deleted) is down.
        get_flags(&self.sock, &self.name).is_ok_and(|f| {
            let want = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            f & want == want
        })
    }
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

/// Every IPv4 address on an interface of this network namespace: (interface, address,
/// prefix length).
pub fn local_ipv4() -> Vec<(String, Ipv4Address, u8)> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_netmask.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: a non-null ifa_addr points to a sockaddr whose family says its type.
        if i32::from(unsafe { (*ifa.ifa_addr).sa_family }) != libc::AF_INET {
            continue;
        }
        // SAFETY: AF_INET: both are sockaddr_in.
        let (addr, mask) = unsafe {
            (
                (*(ifa.ifa_addr as *const libc::sockaddr_in))
                    .sin_addr
                    .s_addr,
                (*(ifa.ifa_netmask as *const libc::sockaddr_in))
                    .sin_addr
                    .s_addr,
            )
        };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        out.push((
            name,
            Ipv4Address(addr.to_ne_bytes()),
            u32::from_be(mask).count_ones() as u8,
        ));
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// An interface other than `tap` that already has an address in `ip/prefix_len`'s subnet:
/// a second server on the same subnet would take the same host address, and the routes
/// to the subnet would be ambiguous.
pub fn subnet_taken(ip: Ipv4Address, prefix_len: u8, tap: &str) -> Option<(String, Ipv4Address)> {
    if prefix_len == 0 {
        return None;
    }
    let mask = u32::MAX << (32 - u32::from(prefix_len.min(32)));
    let net = u32::from_be_bytes(ip.0) & mask;
    local_ipv4()
        .into_iter()
        .find(|(name, a, _)| name != tap && u32::from_be_bytes(a.0) & mask == net)
        .map(|(name, a, _)| (name, a))
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

    #[test]
    fn loopback_is_a_local_address_and_its_subnet_is_taken() {
        let all = local_ipv4();
        assert!(
            all.iter()
                .any(|(_, a, len)| *a == Ipv4Address([127, 0, 0, 1]) && *len == 8),
            "{all:?}"
        );
        let taken = subnet_taken(Ipv4Address([127, 9, 9, 9]), 8, "bw-none");
        assert_eq!(taken.map(|(_, a)| a), Some(Ipv4Address([127, 0, 0, 1])));
        assert_eq!(subnet_taken(Ipv4Address([127, 9, 9, 9]), 8, "lo"), None);
    }
}
