//! The checked loader's part for virtual hosts: the site table (each site a whole image
//! of its own inside the data area, checked as one, never itself holding sites) and the
//! names table (host names, sorted, each naming a site), and the default site.

use core::ops::Range;

use super::format::{self, header, le_u32, le_u64};
use super::hosts::is_site_name;
use super::load::{check as check_image, end, sub, LoadError};

/// Checks the site and names tables of `image`, whose data area is `data`; returns the
/// number of files of all its sites.
pub(super) fn check(
    image: &[u8],
    strings: &[u8],
    data: Range<u64>,
    sites: &[u8],
    names: &[u8],
) -> Result<usize, LoadError> {
    let count = sites.len() / format::SITE_LEN;
    let default = le_u32(image, header::DEFAULT_SITE);
    if count == 0 {
        if !names.is_empty() || default != format::NO_INDEX {
            return Err(LoadError::Settings("names or a default site without sites"));
        }
        return Ok(0);
    }
    if default != format::NO_INDEX && default as usize >= count {
        return Err(LoadError::Settings("default site out of range"));
    }
    let mut files = 0;
    for (i, rec) in sites.chunks_exact(format::SITE_LEN).enumerate() {
        let bad = |why| LoadError::Site {
            index: i as u32,
            why,
        };
        let off = le_u64(rec, format::site::IMAGE_OFF);
        let len = le_u64(rec, format::site::IMAGE_LEN);
        if off < data.start || end(off, len) > data.end {
            return Err(bad("image outside the data area"));
        }
        if !off.is_multiple_of(format::BODY_ALIGN as u64) {
            return Err(bad("image not at a multiple of 64"));
        }
        let own = sub(image, off, len);
        // Checked before its image, so a forged image cannot make the loader recurse.
        if own.len() < format::HEADER_LEN || le_u32(own, header::SITE_COUNT) != 0 {
            return Err(bad("image too short, or holding sites itself"));
        }
        let c = check_image(own)
            .map_err(|_| bad("image refused (a site's image is checked as a whole image)"))?;
        files += c.files;
    }
    let mut prev: Option<&[u8]> = None;
    for (i, rec) in names.chunks_exact(format::NAME_LEN).enumerate() {
        let bad = |why| LoadError::Name {
            index: i as u32,
            why,
        };
        let (o, l) = (
            u64::from(le_u32(rec, format::name::NAME_OFF)),
            u64::from(le_u32(rec, format::name::NAME_LEN)),
        );
        if end(o, l) > strings.len() as u64 {
            return Err(bad("name out of bounds"));
        }
        let name = sub(strings, o, l);
        if !is_site_name(name) {
            return Err(bad(
                "not a lowercase host name without port or trailing dot",
            ));
        }
        if prev.is_some_and(|p| p >= name) {
            return Err(bad("names not sorted, or one given twice"));
        }
        prev = Some(name);
        if le_u32(rec, format::name::SITE) as usize >= count {
            return Err(bad("site out of range"));
        }
        if le_u32(rec, format::name::RESERVED) != 0 {
            return Err(bad("reserved field set"));
        }
    }
    Ok(files)
}
