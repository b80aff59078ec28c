//! How a bootable image carries HTTPS's certificate chain and key to the bare machine:
//! after the site image's last byte, in the same boot module (QEMU `-initrd`) or embedded
//! segment (`bareweb build -o X.elf`, `--iso`, `--disk`), as a trailer:
//!
//! ```text
//! site image (image_len bytes, its header's field at offset 16)
//! "BWTLS\0v1"  cert_len: u32 LE  key_len: u32 LE  cert PEM  key PEM
//! ```
//!
//! The site image's own format is untouched (its loader checks exactly `image_len`
//! bytes), so an image without the trailer is a plain site and one with it still loads
//! where HTTPS is not asked for. The writer is the CLI (`run`, `build`), which checks the
//! files first (serve's checks); the reader is the kernel at boot ([`split`]), which
//! bounds every length by the module it was given. The key's bytes never reach a log.

/// The trailer's first bytes.
pub const MAGIC: [u8; 8] = *b"BWTLS\0v1";
/// Bytes before the PEMs: magic, two lengths.
pub const HEAD: usize = 16;

/// The trailer's head for a chain of `cert_len` and a key of `key_len` bytes (the PEMs
/// follow it, chain first). `None` when a length does not fit in 32 bits.
pub fn head(cert_len: usize, key_len: usize) -> Option<[u8; HEAD]> {
    let c = u32::try_from(cert_len).ok()?;
    let k = u32::try_from(key_len).ok()?;
    let mut h = [0u8; HEAD];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&c.to_le_bytes());
    h[12..16].copy_from_slice(&k.to_le_bytes());
    Some(h)
}

/// What the boot module holds: the site image's bytes, and the PEMs when a trailer
/// follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The site image (exactly `image_len` bytes when the header says so, else all).
    pub site: &'a [u8],
    /// The certificate chain and key (PEM), when the module carries them.
    pub pems: Option<(&'a [u8], &'a [u8])>,
}

/// Why a trailer is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Bytes follow the site image that are not a trailer.
    NotATrailer,
    /// The lengths do not match the bytes there are.
    Lengths,
}

/// Splits a boot module into the site image and the trailer's PEMs. A module too short
/// for a site header, or whose `image_len` is past its end, is returned whole as the
/// site (the site loader then says what is wrong with it).
pub fn split(module: &[u8]) -> Result<Split<'_>, Bad> {
    let whole = Split {
        site: module,
        pems: None,
    };
    let Some(len) = module.get(16..24) else {
        return Ok(whole);
    };
    let len = u64::from_le_bytes(len.try_into().unwrap_or([0; 8]));
    let Some(len) = usize::try_from(len).ok().filter(|&l| l <= module.len()) else {
        return Ok(whole);
    };
    let (site, rest) = module.split_at(len);
    // Loaders round a module up (GRUB to a page on some paths): zeros after the site are
    // no trailer.
    if rest.iter().all(|&b| b == 0) {
        return Ok(Split { site, pems: None });
    }
    if rest.len() < HEAD || rest[..8] != MAGIC {
        return Err(Bad::NotATrailer);
    }
    let n = |at: usize| u32::from_le_bytes([rest[at], rest[at + 1], rest[at + 2], rest[at + 3]]);
    let (c, k) = (n(8) as usize, n(12) as usize);
    let body = &rest[HEAD..];
    if c.checked_add(k).is_none_or(|t| t > body.len()) || !body[c + k..].iter().all(|&b| b == 0) {
        return Err(Bad::Lengths);
    }
    Ok(Split {
        site,
        pems: Some((&body[..c], &body[c..c + k])),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn site(len: usize) -> Vec<u8> {
        let mut s = std::vec![7u8; len];
        s[16..24].copy_from_slice(&(len as u64).to_le_bytes());
        s
    }

    #[test]
    fn a_trailer_round_trips_and_a_plain_site_has_none() {
        let plain = site(200);
        assert_eq!(split(&plain).unwrap().pems, None);
        assert_eq!(split(&plain).unwrap().site.len(), 200);
        let mut m = plain.clone();
        m.extend_from_slice(&head(5, 3).unwrap());
        m.extend_from_slice(b"CERT!KEY");
        let s = split(&m).unwrap();
        assert_eq!(s.site, &plain[..]);
        assert_eq!(s.pems, Some((&b"CERT!"[..], &b"KEY"[..])));
        // Padding a loader adds after the module is not a trailer and not an error.
        let mut padded = m.clone();
        padded.extend_from_slice(&[0; 4096]);
        assert_eq!(split(&padded).unwrap().pems, s.pems);
        let mut padded = plain.clone();
        padded.extend_from_slice(&[0; 100]);
        assert_eq!(split(&padded).unwrap().site, &plain[..]);
    }

    #[test]
    fn bad_trailers_are_refused_never_read_past_the_module() {
        let plain = site(64);
        let mut m = plain.clone();
        m.extend_from_slice(b"garbage");
        assert_eq!(split(&m), Err(Bad::NotATrailer));
        for (c, k) in [
            (5usize, 4usize),
            (u32::MAX as usize, 1),
            (1, u32::MAX as usize),
        ] {
            let mut m = plain.clone();
            m.extend_from_slice(&head(c, k).unwrap());
            m.extend_from_slice(b"CERT!KEY");
            assert_eq!(split(&m), Err(Bad::Lengths), "{c} {k}");
        }
        let mut m = plain.clone();
        m.extend_from_slice(&head(1, 1).unwrap());
        m.extend_from_slice(b"ab junk");
        assert_eq!(split(&m), Err(Bad::Lengths));
        // Too short for a header, or a length past the end: the whole is the site.
        assert_eq!(split(b"short").unwrap().site, b"short");
        let mut long = site(64);
        long[16..24].copy_from_slice(&1000u64.to_le_bytes());
        assert_eq!(split(&long).unwrap().site.len(), 64);
        assert_eq!(head(1 << 33, 0), None);
    }
}
