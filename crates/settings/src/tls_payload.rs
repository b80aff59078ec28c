//! How a bootable image carries what the bare machine's TLS needs to the kernel: after the
//! site image's last byte, in the same boot module (QEMU `-initrd`) or embedded segment
//! (`bareweb build -o X.elf`, `--iso`, `--disk`), up to two trailers, in either order:
//!
//! ```text
//! site image (image_len bytes, its header's field at offset 16)
//! "BWTLS\0v1"  cert_len: u32 LE  key_len: u32 LE  cert PEM  key PEM   HTTPS's chain and key
//! "BWACA\0v1"  ca_len: u32 LE    0u32             roots PEM           the ACME client's roots
//! zero bytes (a loader's rounding)
//! ```
//!
//! Each trailer at most once; nothing but zeros after the last. The site image's own
//! format is untouched (its loader checks exactly `image_len` bytes), so an image without
//! a trailer is a plain site and one with them still loads where they are not asked for.
//! The writer is the CLI (`run`, `build`), which checks the files first (serve's checks);
//! the reader is the kernel at boot ([`split`]), which bounds every length by the module
//! it was given. The key's bytes never reach a log.

/// The HTTPS trailer's first bytes (the certificate chain and its key).
pub const MAGIC: [u8; 8] = *b"BWTLS\0v1";
/// The ACME trailer's first bytes (the roots the ACME client trusts, `--acme-ca`).
pub const CA_MAGIC: [u8; 8] = *b"BWACA\0v1";
/// Bytes of a trailer before its PEMs: magic, two 32-bit words.
pub const HEAD: usize = 16;

fn head_of(magic: [u8; 8], a: usize, b: usize) -> Option<[u8; HEAD]> {
    let a = u32::try_from(a).ok()?;
    let b = u32::try_from(b).ok()?;
    let mut h = [0u8; HEAD];
    h[..8].copy_from_slice(&magic);
    h[8..12].copy_from_slice(&a.to_le_bytes());
    h[12..16].copy_from_slice(&b.to_le_bytes());
    Some(h)
}

/// The HTTPS trailer's head for a chain of `cert_len` and a key of `key_len` bytes (the
/// PEMs follow it, chain first). `None` when a length does not fit in 32 bits.
pub fn head(cert_len: usize, key_len: usize) -> Option<[u8; HEAD]> {
    head_of(MAGIC, cert_len, key_len)
}

/// The ACME trailer's head for roots of `len` bytes (the PEM follows it). `None` when the
/// length does not fit in 32 bits.
pub fn ca_head(len: usize) -> Option<[u8; HEAD]> {
    head_of(CA_MAGIC, len, 0)
}

/// What the boot module holds: the site image's bytes, and what the trailers carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The site image (exactly `image_len` bytes when the header says so, else all).
    pub site: &'a [u8],
    /// The certificate chain and key (PEM), when the module carries them.
    pub pems: Option<(&'a [u8], &'a [u8])>,
    /// The roots the ACME client trusts (PEM), when the module carries them.
    pub ca: Option<&'a [u8]>,
}

/// Why a trailer is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Bytes follow the site image that are not a trailer (or a trailer's reserved word is
    /// not zero).
    NotATrailer,
    /// The lengths do not match the bytes there are.
    Lengths,
    /// A trailer is there twice.
    Twice,
}

/// Splits a boot module into the site image and the trailers' PEMs. A module too short
/// for a site header, or whose `image_len` is past its end, is returned whole as the
/// site (the site loader then says what is wrong with it).
pub fn split(module: &[u8]) -> Result<Split<'_>, Bad> {
    let mut out = Split {
        site: module,
        pems: None,
        ca: None,
    };
    let Some(len) = module.get(16..24) else {
        return Ok(out);
    };
    let len = u64::from_le_bytes(len.try_into().unwrap_or([0; 8]));
    let Some(len) = usize::try_from(len).ok().filter(|&l| l <= module.len()) else {
        return Ok(out);
    };
    let (site, mut rest) = module.split_at(len);
    out.site = site;
    let mut first = true;
    // Loaders round a module up (GRUB to a page on some paths): zeros after the last
    // trailer are no trailer.
    while !rest.iter().all(|&b| b == 0) {
        let head = rest.get(..HEAD).unwrap_or_default();
        let tls = head.get(..8) == Some(&MAGIC[..]);
        if !tls && head.get(..8) != Some(&CA_MAGIC[..]) {
            // Bytes after a trailer that are neither zeros nor a trailer: its lengths do
            // not cover what is there.
            return Err(if first {
                Bad::NotATrailer
            } else {
                Bad::Lengths
            });
        }
        first = false;
        let word = |at: usize| {
            u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]) as usize
        };
        let (a, b) = (word(8), word(12));
        if !tls && b != 0 {
            // The CA trailer's reserved word.
            return Err(Bad::NotATrailer);
        }
        let body = &rest[HEAD..];
        let Some(used) = a.checked_add(b).filter(|&t| t <= body.len()) else {
            return Err(Bad::Lengths);
        };
        let twice = if tls {
            out.pems.replace((&body[..a], &body[a..used])).is_some()
        } else {
            out.ca.replace(&body[..a]).is_some()
        };
        if twice {
            return Err(Bad::Twice);
        }
        rest = &body[used..];
    }
    Ok(out)
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
        assert_eq!(split(&plain).unwrap().ca, None);
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
        assert_eq!(ca_head(1 << 33), None);
    }

    fn tls(cert: &[u8], key: &[u8]) -> Vec<u8> {
        let mut t = head(cert.len(), key.len()).unwrap().to_vec();
        t.extend_from_slice(cert);
        t.extend_from_slice(key);
        t
    }

    fn ca(roots: &[u8]) -> Vec<u8> {
        let mut t = ca_head(roots.len()).unwrap().to_vec();
        t.extend_from_slice(roots);
        t
    }

    #[test]
    fn both_trailers_in_either_order_and_the_roots_alone() {
        let plain = site(100);
        let (t, c) = (tls(b"CERT", b"KEY!"), ca(b"ROOTS"));
        for (order, padding) in [
            ([&t, &c], 0),
            ([&c, &t], 0),
            ([&t, &c], 4096),
            ([&c, &t], 1),
        ] {
            let mut m = plain.clone();
            m.extend_from_slice(order[0]);
            m.extend_from_slice(order[1]);
            m.extend(core::iter::repeat_n(0, padding));
            let s = split(&m).unwrap();
            assert_eq!(s.site, &plain[..]);
            assert_eq!(s.pems, Some((&b"CERT"[..], &b"KEY!"[..])));
            assert_eq!(s.ca, Some(&b"ROOTS"[..]));
        }
        for padding in [0, 3, 4096] {
            let mut m = plain.clone();
            m.extend_from_slice(&c);
            m.extend(core::iter::repeat_n(0, padding));
            let s = split(&m).unwrap();
            assert_eq!(
                (s.site, s.pems, s.ca),
                (&plain[..], None, Some(&b"ROOTS"[..]))
            );
        }
        // Empty roots are a trailer still (the writer never makes one; the reader says
        // what is there).
        let mut m = plain.clone();
        m.extend_from_slice(&ca(b""));
        assert_eq!(split(&m).unwrap().ca, Some(&b""[..]));
        let h = ca_head(5).unwrap();
        assert_eq!(
            (&h[..8], &h[8..12], &h[12..]),
            (&CA_MAGIC[..], &[5, 0, 0, 0][..], &[0u8; 4][..])
        );
    }

    #[test]
    fn trailers_twice_or_past_the_end_or_between_zeros_are_refused() {
        let plain = site(64);
        let (t, c) = (tls(b"C", b"K"), ca(b"R"));
        for (parts, bad) in [
            (&[&t, &t][..], Bad::Twice),
            (&[&c, &c], Bad::Twice),
            (&[&t, &c, &t], Bad::Twice),
            (&[&c, &t, &c], Bad::Twice),
        ] {
            let mut m = plain.clone();
            parts.iter().for_each(|p| m.extend_from_slice(p));
            assert_eq!(split(&m), Err(bad), "{parts:?}");
        }
        // A length past the module's end, in either trailer, first or second.
        for len in [2usize, 100, u32::MAX as usize] {
            let mut short = ca_head(len).unwrap().to_vec();
            short.push(b'R');
            for before in [&[][..], &t[..]] {
                let mut m = plain.clone();
                m.extend_from_slice(before);
                m.extend_from_slice(&short);
                assert_eq!(split(&m), Err(Bad::Lengths), "{len}");
            }
            let mut m = plain.clone();
            m.extend_from_slice(&c);
            m.extend_from_slice(&head(len, 0).unwrap());
            m.push(b'C');
            assert_eq!(split(&m), Err(Bad::Lengths), "{len}");
        }
        // A reserved word that is not zero; a CA head cut short; zeros between trailers;
        // garbage after the second.
        let mut m = plain.clone();
        m.extend_from_slice(&head(1, 1).unwrap());
        m[64..72].copy_from_slice(&CA_MAGIC);
        m.extend_from_slice(b"RR");
        assert_eq!(split(&m), Err(Bad::NotATrailer));
        let mut m = plain.clone();
        m.extend_from_slice(&c[..10]);
        assert_eq!(split(&m), Err(Bad::NotATrailer));
        let mut m = plain.clone();
        m.extend_from_slice(&t);
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&c);
        assert_eq!(split(&m), Err(Bad::Lengths));
        let mut m = plain.clone();
        m.extend_from_slice(&t);
        m.extend_from_slice(&c);
        m.extend_from_slice(b"x");
        assert_eq!(split(&m), Err(Bad::Lengths));
    }
}
