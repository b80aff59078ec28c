//! Helpers shared by the subcommands: reading sites, parsing addresses, randomness.

use std::path::Path;

use bareweb_engine::site::{self, Site};
use bareweb_engine::wire::{EthernetAddress, Ipv4Address};

/// Reads a site directory or image and keeps it for the life of the process.
pub fn load_site(path: &Path) -> Result<Site<'static>, String> {
    let bytes = if path.is_dir() {
        site::build_from_dir(path).map_err(|e| format!("cannot build {}: {e}", path.display()))?
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    let image: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    Site::load(image).map_err(|e| format!("{} is not a usable site image: {e}", path.display()))
}

pub fn parse_ip(s: &str) -> Result<Ipv4Address, String> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return Err(format!("bad IPv4 address {s:?}"));
    }
    let mut a = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        a[i] = p.parse().map_err(|_| format!("bad IPv4 address {s:?}"))?;
    }
    Ok(Ipv4Address(a))
}

pub fn parse_cidr(s: &str) -> Result<(Ipv4Address, u8), String> {
    let (ip, len) = s.split_once('/').unwrap_or((s, "24"));
    let len: u8 = len
        .parse()
        .ok()
        .filter(|l| *l <= 32)
        .ok_or(format!("bad prefix length in {s:?}"))?;
    Ok((parse_ip(ip)?, len))
}

pub fn parse_mac(s: &str) -> Result<EthernetAddress, String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("bad MAC address {s:?}"));
    }
    let mut m = [0u8; 6];
    for (i, p) in parts.iter().enumerate() {
        m[i] = u8::from_str_radix(p, 16).map_err(|_| format!("bad MAC address {s:?}"))?;
    }
    Ok(EthernetAddress(m))
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b
}
