//! Configuring the host side of the TAP: bring it up and give it an IPv4 address, with
//! the same ioctls `ip link set up` and `ip addr add` use; for a NIC set (bonding), the
//! bridge the TAPs share (`brctl`'s ioctls) and each TAP's link, as the link monitor
//! reads it ([`TapLink`]: up and carrier, `SIOCGIFFLAGS`).
//!
//! The socket, name-to-index lookup and errors are `rustix`'s; the interface ioctls go
//! through `rustix::ioctl` with the `struct ifreq` layouts here, and stay `unsafe` (an
//! ioctl's argument type is a promise rustix cannot check). The list of local addresses
//! ([`local_ipv4`]) is libc's `getifaddrs`: rustix has no such call, and the other ways
//! (netlink messages, SIOCGIFCONF) would be more hand-written code, not less.

use std::io;
use std::os::fd::OwnedFd;

use bareweb_engine::wire::Ipv4Address;
use rustix::io::Errno;
use rustix::ioctl::{ioctl, Opcode, Setter, Updater};
use rustix::net::{AddressFamily, SocketFlags, SocketType};

/// Interface names hold at most 15 bytes and a NUL.
const IFNAMSIZ: usize = 16;

/// The requests of linux/sockios.h used here.
const SIOCGIFFLAGS: Opcode = 0x8913;
const SIOCSIFFLAGS: Opcode = 0x8914;
const SIOCSIFADDR: Opcode = 0x8916;
const SIOCSIFNETMASK: Opcode = 0x891c;
const SIOCBRADDBR: Opcode = 0x89a0;
const SIOCBRDELBR: Opcode = 0x89a1;
const SIOCBRADDIF: Opcode = 0x89a2;

const IFF_UP: i16 = 0x1;
const IFF_RUNNING: i16 = 0x40;

/// `struct sockaddr_in`.
#[repr(C)]
struct SockaddrIn {
    family: u16,
    port: u16,
    addr: [u8; 4],
    zero: [u8; 8],
}

/// `struct ifreq` with its union as `ifr_addr` (a `sockaddr_in`): 40 bytes.
#[repr(C)]
struct IfReqAddr {
    name: [u8; IFNAMSIZ],
    addr: SockaddrIn,
    _pad: [u8; 8],
}

/// `struct ifreq` with its union as `ifr_flags`.
#[repr(C)]
struct IfReqFlags {
    name: [u8; IFNAMSIZ],
    flags: i16,
    _pad: [u8; 22],
}

/// `struct ifreq` with its union as `ifr_ifindex`.
#[repr(C)]
struct IfReqIndex {
    name: [u8; IFNAMSIZ],
    index: i32,
    _pad: [u8; 20],
}

fn control_socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

fn name_bytes(name: &str) -> io::Result<[u8; IFNAMSIZ]> {
    if name.is_empty() || name.len() >= IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    let mut b = [0u8; IFNAMSIZ];
    b[..name.len()].copy_from_slice(name.as_bytes());
    Ok(b)
}

fn set_addr<const REQ: Opcode>(sock: &OwnedFd, name: &str, ip: Ipv4Address) -> io::Result<()> {
    let r = IfReqAddr {
        name: name_bytes(name)?,
        addr: SockaddrIn {
            family: AddressFamily::INET.as_raw(),
            port: 0,
            addr: ip.0,
            zero: [0; 8],
        },
        _pad: [0; 8],
    };
    // SAFETY: SIOCSIFADDR and SIOCSIFNETMASK (the only REQs given) read an ifreq whose
    // union starts with a sockaddr_in, as IfReqAddr lays it out.
    unsafe { ioctl(sock, Setter::<REQ, IfReqAddr>::new(r))? };
    Ok(())
}

fn get_flags(sock: &OwnedFd, name: &str) -> io::Result<i16> {
    let mut f = IfReqFlags {
        name: name_bytes(name)?,
        flags: 0,
        _pad: [0; 22],
    };
    // SAFETY: SIOCGIFFLAGS reads the name and writes the flags of an ifreq, laid out as
    // IfReqFlags; `f` lives across the call.
    unsafe { ioctl(sock, Updater::<SIOCGIFFLAGS, IfReqFlags>::new(&mut f))? };
    Ok(f.flags)
}

fn set_flags(sock: &OwnedFd, name: &str, flags: i16) -> io::Result<()> {
    let f = IfReqFlags {
        name: name_bytes(name)?,
        flags,
        _pad: [0; 22],
    };
    // SAFETY: SIOCSIFFLAGS reads the name and flags of an ifreq, laid out as IfReqFlags.
    unsafe { ioctl(sock, Setter::<SIOCSIFFLAGS, IfReqFlags>::new(f))? };
    Ok(())
}

/// Brings interface `name` up (`ip link set NAME up`).
pub fn set_up(name: &str) -> io::Result<()> {
    set_flag_up(name, true)
}

/// Brings interface `name` up or down.
fn set_flag_up(name: &str, up: bool) -> io::Result<()> {
    let sock = control_socket()?;
    let flags = get_flags(&sock, name)?;
    set_flags(
        &sock,
        name,
        if up { flags | IFF_UP } else { flags & !IFF_UP },
    )
}

/// A bridge ioctl that takes an interface name (SIOCBRADDBR, SIOCBRDELBR).
fn bridge_ioctl<const REQ: Opcode>(name: &str) -> Result<(), Errno> {
    let sock = control_socket().map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    let b = name_bytes(name).map_err(|_| Errno::INVAL)?;
    // SAFETY: SIOCBRADDBR and SIOCBRDELBR (the only REQs given) read a NUL-terminated
    // interface name (b is IFNAMSIZ bytes with the name shorter than that).
    unsafe { ioctl(&sock, Setter::<REQ, [u8; IFNAMSIZ]>::new(b)) }
}

/// Creates bridge `name` if it does not exist; returns whether it was created.
pub fn bridge_create(name: &str) -> io::Result<bool> {
    name_bytes(name)?;
    match bridge_ioctl::<SIOCBRADDBR>(name) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Deletes bridge `name` (it must be down: [`bridge_create`]'s undo).
pub fn bridge_delete(name: &str) -> io::Result<()> {
    name_bytes(name)?;
    Ok(bridge_ioctl::<SIOCBRDELBR>(name)?)
}

/// Takes bridge `name` down and deletes it (its ports leave it).
pub fn bridge_remove(name: &str) -> io::Result<()> {
    set_flag_up(name, false)?;
    bridge_delete(name)
}

/// Puts interface `port` on bridge `bridge` (`ip link set PORT master BRIDGE`); an
/// interface already on it is left as it is.
pub fn bridge_add(bridge: &str, port: &str) -> io::Result<()> {
    let sock = control_socket()?;
    let index = rustix::net::netdevice::name_to_index(&sock, port)?;
    let r = IfReqIndex {
        name: name_bytes(bridge)?,
        index: index as i32,
        _pad: [0; 20],
    };
    // SAFETY: SIOCBRADDIF reads the ifreq's name and ifindex, laid out as IfReqIndex.
    match unsafe { ioctl(&sock, Setter::<SIOCBRADDIF, IfReqIndex>::new(r)) } {
        // EBUSY: the port is already on a bridge (this one, if serve ran before).
        Ok(()) | Err(Errno::BUSY) => Ok(()),
        Err(e) => Err(e.into()),
    }
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
        get_flags(&self.sock, &self.name)
            .is_ok_and(|f| f & (IFF_UP | IFF_RUNNING) == IFF_UP | IFF_RUNNING)
    }
}

/// Gives interface `name` the address `ip/prefix_len` and brings it up.
pub fn configure(name: &str, ip: Ipv4Address, prefix_len: u8) -> io::Result<()> {
    let sock = control_socket()?;
    set_addr::<SIOCSIFADDR>(&sock, name, ip)?;
    let mask = if prefix_len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix_len.min(32)))
    };
    set_addr::<SIOCSIFNETMASK>(&sock, name, Ipv4Address(mask.to_be_bytes()))?;
    let flags = get_flags(&sock, name)?;
    set_flags(&sock, name, flags | IFF_UP | IFF_RUNNING)
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
