//! Site image tests. Loader tests run on a committed fixture (so they run without the
//! `std` feature too); builder tests need `std`.

use super::format::{self, entry, header};
use super::*;
use crate::resource::block_sums_into;

/// A small image made by `bless_fixture` from [`fixture_files`].
static FIXTURE: &[u8] = include_bytes!("testdata/small.bwsite");

/// The files the fixture was built from.
fn fixture_files() -> Vec<(String, Vec<u8>, u64)> {
    let page = |title: &str| {
        let mut s = format!("<!doctype html>\n<title>{title}</title>\n<ul>\n");
        for i in 0..12 {
            s += &format!("<li>item {i} of the {title} list</li>\n");
        }
        s += "</ul>\n";
        s.into_bytes()
    };
    let mut x: u32 = 0x1234_5678;
    let noise: Vec<u8> = (0..200)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    vec![
        ("/index.html".into(), page("home"), 1_700_000_000),
        ("/style.css".into(), b"body{}".to_vec(), 1_700_000_001),
        ("/docs/index.html".into(), page("docs"), 1_700_000_002),
        ("/docs/page.html".into(), page("page"), 1_700_000_003),
        ("/files/data.bin".into(), noise, 1_700_000_004),
        ("/files/empty.txt".into(), Vec::new(), 1_700_000_005),
        ("/nodir/readme.txt".into(), b"no index here\n".to_vec(), 0),
    ]
}

fn load_ok(image: &[u8]) -> Site<'_> {
    match Site::load(image) {
        Ok(site) => site,
        Err(e) => panic!("load failed: {e}"),
    }
}

fn resource<'a>(site: &Site<'a>, path: &str) -> Resource<'a> {
    match site.lookup(path.as_bytes()) {
        Found::Resource(r) => r,
        other => panic!("{path}: {other:?}"),
    }
}

/// Entry `i`'s bytes in a mutable image.
fn entry_at(image: &mut [u8], i: usize) -> &mut [u8] {
    let off = format::le_u64(image, header::ENTRIES_OFF) as usize + i * format::ENTRY_LEN;
    &mut image[off..off + format::ENTRY_LEN]
}

fn put32(buf: &mut [u8], range: core::ops::Range<usize>, v: u32) {
    buf[range].copy_from_slice(&v.to_le_bytes());
}

fn put64(buf: &mut [u8], range: core::ops::Range<usize>, v: u64) {
    buf[range].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes the checksum after a forgery, so the structural checks are what fail.
fn reseal(image: &mut [u8]) {
    let sum = format::image_checksum(image);
    put64(image, header::CHECKSUM, sum);
}

/// Index of the entry whose path is `path`.
fn index_of(site: &Site<'_>, path: &str) -> usize {
    (0..site.count)
        .find(|&i| site.path(site.raw(i)) == path.as_bytes())
        .unwrap()
}

/// Every lookup and every body sum, to prove nothing panics on a loaded image.
fn exercise(site: &Site<'_>) -> u64 {
    let mut acc = 0u64;
    for (path, r) in site.iter_files() {
        for body in core::iter::once(r.identity).chain(r.gzip) {
            assert!(body.is_consistent());
            acc += u64::from(body.sum(0, body.data.len()));
            acc += u64::from(body.sum(1, body.data.len() / 2 + 3));
        }
        assert_eq!(site.lookup(path.as_bytes()), Found::Resource(r));
    }
    for p in ["/", "/docs", "/docs/", "/x", "", "//", "/index.html/", "a"] {
        if let Found::Resource(r) = site.lookup(p.as_bytes()) {
            acc += r.identity.data.len() as u64;
        }
    }
    acc
}

#[test]
fn fixture_lookups() {
    let site = load_ok(FIXTURE);
    assert_eq!(site.len(), 7);
    assert!(!site.is_empty());
    assert_eq!(site.bytes(), FIXTURE);

    let files = fixture_files();
    for (path, data, mtime) in &files {
        let r = resource(&site, path);
        assert_eq!(r.identity.data, &data[..], "{path}");
        assert_eq!(r.last_modified, *mtime, "{path}");
        assert!(r.identity.is_consistent());
        let mut sums = vec![0u8; 2 * Body::blocks_for(data.len())];
        block_sums_into(data, &mut sums);
        assert_eq!(r.identity.block_sums, &sums[..], "{path}");
        assert_eq!(r.etag, format!("\"{:016x}\"", format::fnv1a(data)));
    }
    let paths: Vec<&str> = site.iter_files().map(|(p, _)| p).collect();
    let mut want: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    want.sort();
    assert_eq!(paths, want);

    // Directories and index files.
    assert_eq!(
        site.lookup(b"/"),
        Found::Resource(resource(&site, "/index.html"))
    );
    assert_eq!(site.lookup(b"/docs"), Found::AddSlash);
    assert_eq!(
        site.lookup(b"/docs/"),
        Found::Resource(resource(&site, "/docs/index.html"))
    );
    assert_eq!(site.lookup(b"/files"), Found::AddSlash);
    assert_eq!(site.lookup(b"/files/"), Found::NotFound);
    assert_eq!(site.lookup(b"/nodir"), Found::AddSlash);
    assert_eq!(site.lookup(b"/nodir/"), Found::NotFound);

    // Misses.
    for p in [
        "",
        "index.html",
        "/missing",
        "/docs/missing.html",
        "/index.html/",
        "//",
        "/docs//",
        "/DOCS",
        "/docs/index",
        "/style.cs",
        "/style.css2",
        "/~",
        "/\u{0}",
    ] {
        assert_eq!(site.lookup(p.as_bytes()), Found::NotFound, "{p:?}");
    }

    // Content types and gzip.
    let html = resource(&site, "/index.html");
    assert_eq!(html.content_type, "text/html; charset=utf-8");
    assert!(html
        .gzip
        .is_some_and(|g| g.data.len() < html.identity.data.len()));
    let css = resource(&site, "/style.css");
    assert_eq!(css.content_type, "text/css; charset=utf-8");
    assert_eq!(css.gzip, None, "gzip of 6 bytes is larger");
    let bin = resource(&site, "/files/data.bin");
    assert_eq!(bin.content_type, "application/octet-stream");
    assert_eq!(bin.gzip, None);
    let empty = resource(&site, "/files/empty.txt");
    assert_eq!(empty.identity.data, b"");
    assert_eq!(empty.identity.block_sums, b"");
    exercise(&site);
}

#[test]
fn bodies_are_aligned() {
    let site = load_ok(FIXTURE);
    let base = FIXTURE.as_ptr() as usize;
    for (_, r) in site.iter_files() {
        for body in core::iter::once(r.identity).chain(r.gzip) {
            assert_eq!((body.data.as_ptr() as usize - base) % 64, 0);
        }
    }
}

#[test]
fn rejects_short_and_foreign() {
    assert_eq!(Site::load(b"").unwrap_err(), LoadError::TooShort { len: 0 });
    let mut image = FIXTURE.to_vec();
    image[0] = b'X';
    assert!(matches!(Site::load(&image), Err(LoadError::Magic(m)) if m[0] == b'X'));
}

#[test]
fn rejects_other_versions() {
    for v in [0, 1, 2, 3, 5, u32::MAX] {
        let mut image = FIXTURE.to_vec();
        put32(&mut image, header::VERSION, v);
        reseal(&mut image);
        assert_eq!(Site::load(&image).unwrap_err(), LoadError::Version(v));
    }
}

#[test]
fn rejects_every_truncation() {
    for len in 0..FIXTURE.len() {
        let prefix = &FIXTURE[..len];
        assert!(Site::load(prefix).is_err(), "prefix {len}");
        // Also when the header is patched to claim the shorter length and resealed, so
        // the section and entry checks see the truncation.
        if len >= format::HEADER_LEN {
            let mut image = prefix.to_vec();
            put64(&mut image, header::IMAGE_LEN, len as u64);
            reseal(&mut image);
            assert!(Site::load(&image).is_err(), "patched prefix {len}");
        }
    }
    // And an extra byte at the end.
    let mut image = FIXTURE.to_vec();
    image.push(0);
    assert!(matches!(
        Site::load(&image),
        Err(LoadError::ImageLen { .. })
    ));
    let len = image.len() as u64;
    put64(&mut image, header::IMAGE_LEN, len);
    reseal(&mut image);
    assert!(matches!(
        Site::load(&image),
        Err(LoadError::Trailing { .. })
    ));
}

#[test]
fn rejects_every_flipped_byte() {
    let mut image = FIXTURE.to_vec();
    for i in 0..image.len() {
        for bit in [0x01u8, 0x80] {
            image[i] ^= bit;
            assert!(Site::load(&image).is_err(), "byte {i} bit {bit:#x}");
            image[i] ^= bit;
        }
    }
    assert!(Site::load(&image).is_ok());
}

#[test]
fn resealed_mutations_never_panic() {
    // Each byte set to a few values with the checksum fixed up: the loader either refuses
    // or hands out a site whose lookups and sums all work.
    let mut image = FIXTURE.to_vec();
    let mut accepted = 0;
    for i in 0..image.len() {
        let orig = image[i];
        for v in [0x00u8, 0x01, 0x2f, 0x40, 0x7f, 0xff, orig ^ 0x02] {
            image[i] = v;
            reseal(&mut image);
            if let Ok(site) = Site::load(&image) {
                accepted += 1;
                exercise(&site);
            }
        }
        image[i] = orig;
    }
    // Changing body bytes, mtimes or padding keeps the image valid: the run must have
    // reached the accepting path too.
    assert!(accepted > 0);
}

#[test]
fn checksum_error_carries_values() {
    let mut image = FIXTURE.to_vec();
    let last = image.len() - 1;
    image[last] ^= 0xff;
    let computed = format::image_checksum(&image);
    let stored = format::le_u64(&image, header::CHECKSUM);
    assert_eq!(
        Site::load(&image).unwrap_err(),
        LoadError::Checksum { stored, computed }
    );
}

#[test]
fn rejects_out_of_bounds_body() {
    let site = load_ok(FIXTURE);
    let i = index_of(&site, "/index.html");
    let data_off = format::le_u64(FIXTURE, header::DATA_OFF);
    let len = FIXTURE.len() as u64;
    let mut image = FIXTURE.to_vec();
    put64(entry_at(&mut image, i), entry::BODY_OFF, len - 64 + 64 * 10);
    reseal(&mut image);
    let err = Site::load(&image).unwrap_err();
    let body_len = format::le_u64(entry_at(&mut image, i), entry::BODY_LEN);
    assert_eq!(
        err,
        LoadError::Entry {
            index: i as u32,
            error: EntryError::OutOfBounds {
                field: Field::Body,
                offset: len + 64 * 9,
                len: body_len,
                start: data_off,
                end: len,
            },
        }
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("entry {i} body out of bounds (offset")),
        "{msg}"
    );

    // Length overflowing u64 when added to the offset.
    let mut image = FIXTURE.to_vec();
    put64(entry_at(&mut image, i), entry::BODY_LEN, u64::MAX);
    reseal(&mut image);
    assert!(matches!(
        Site::load(&image),
        Err(LoadError::Entry {
            error: EntryError::OutOfBounds {
                field: Field::Body,
                ..
            },
            ..
        })
    ));

    // Sums pointing into the string area.
    let mut image = FIXTURE.to_vec();
    put64(entry_at(&mut image, i), entry::SUMS_OFF, data_off - 2);
    reseal(&mut image);
    assert!(matches!(
        Site::load(&image),
        Err(LoadError::Entry {
            error: EntryError::OutOfBounds {
                field: Field::BodySums,
                ..
            },
            ..
        })
    ));

    // Path past the string area.
    let mut image = FIXTURE.to_vec();
    put32(entry_at(&mut image, i), entry::PATH_LEN, u32::MAX);
    reseal(&mut image);
    assert!(matches!(
        Site::load(&image),
        Err(LoadError::Entry {
            error: EntryError::OutOfBounds {
                field: Field::Path,
                ..
            },
            ..
        })
    ));
}

#[test]
fn rejects_misaligned_body() {
    let site = load_ok(FIXTURE);
    let i = index_of(&site, "/index.html");
    let mut image = FIXTURE.to_vec();
    let e = entry_at(&mut image, i);
    let off = format::le_u64(e, entry::BODY_OFF);
    put64(e, entry::BODY_OFF, off + 1);
    reseal(&mut image);
    assert_eq!(
        Site::load(&image).unwrap_err(),
        LoadError::Entry {
            index: i as u32,
            error: EntryError::Misaligned {
                field: Field::Body,
                offset: off + 1
            }
        }
    );
}

#[test]
fn rejects_unsorted_table() {
    // Swap the path references of two adjacent files.
    let site = load_ok(FIXTURE);
    let a = index_of(&site, "/docs/index.html");
    let b = a + 1;
    let mut image = FIXTURE.to_vec();
    let pa = entry_at(&mut image, a)[entry::PATH_OFF.start..entry::PATH_LEN.end].to_vec();
    let pb = entry_at(&mut image, b)[entry::PATH_OFF.start..entry::PATH_LEN.end].to_vec();
    entry_at(&mut image, a)[entry::PATH_OFF.start..entry::PATH_LEN.end].copy_from_slice(&pb);
    entry_at(&mut image, b)[entry::PATH_OFF.start..entry::PATH_LEN.end].copy_from_slice(&pa);
    reseal(&mut image);
    assert_eq!(
        Site::load(&image).unwrap_err(),
        LoadError::Entry {
            index: b as u32,
            error: EntryError::NotSorted
        }
    );
    // A duplicate path is not strictly sorted either.
    let mut image = FIXTURE.to_vec();
    entry_at(&mut image, b)[entry::PATH_OFF.start..entry::PATH_LEN.end].copy_from_slice(&pa);
    reseal(&mut image);
    assert_eq!(
        Site::load(&image).unwrap_err(),
        LoadError::Entry {
            index: b as u32,
            error: EntryError::NotSorted
        }
    );
}

#[test]
fn rejects_bad_fields() {
    let site = load_ok(FIXTURE);
    let file = index_of(&site, "/index.html");
    let dir = index_of(&site, "/docs");
    let ctype_off = format::le_u32(site.raw(file), entry::CTYPE_OFF) as usize;
    let strings_off = format::le_u64(FIXTURE, header::STRINGS_OFF) as usize;

    let forge = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut image = FIXTURE.to_vec();
        f(&mut image);
        reseal(&mut image);
        Site::load(&image).unwrap_err()
    };
    let at = |i: usize, error| LoadError::Entry {
        index: i as u32,
        error,
    };

    assert_eq!(
        forge(&|img| put32(entry_at(img, file), entry::KIND, 7)),
        at(file, EntryError::Kind(7))
    );
    assert_eq!(
        forge(&|img| put32(entry_at(img, file), entry::INDEX, 0)),
        at(
            file,
            EntryError::Reserved {
                field: Field::Index,
                value: 0
            }
        )
    );
    // A CR in the content type would inject a header line. The string is shared by all
    // HTML files, so the first of them in the table is the one refused.
    assert_eq!(
        forge(&|img| img[strings_off + ctype_off + 4] = b'\r'),
        at(
            index_of(&site, "/docs/index.html"),
            EntryError::BadText {
                field: Field::ContentType,
                byte: b'\r',
                at: 4
            }
        )
    );
    assert_eq!(
        forge(&|img| put32(entry_at(img, file), entry::ETAG_LEN, 0)),
        at(file, EntryError::Empty(Field::Etag))
    );
    assert_eq!(
        forge(&|img| put64(entry_at(img, dir), entry::LAST_MODIFIED, 5)),
        at(
            dir,
            EntryError::Reserved {
                field: Field::LastModified,
                value: 5
            }
        )
    );
    // A directory whose index names another file.
    assert_eq!(
        forge(&|img| put32(entry_at(img, dir), entry::INDEX, file as u32)),
        at(dir, EntryError::Index(file as u32))
    );
    assert_eq!(
        forge(&|img| put32(entry_at(img, dir), entry::INDEX, 1000)),
        at(dir, EntryError::Index(1000))
    );
    // Gzip body that is not gzip.
    let gz = format::le_u64(site.raw(file), entry::GZIP_OFF) as usize;
    assert!(gz != 0);
    assert_eq!(
        forge(&|img| img[gz] = 0),
        at(file, EntryError::NotGzip([0, 0x8b]))
    );
    // Gzip absent but a stray sums offset.
    let css = index_of(&site, "/style.css");
    assert_eq!(
        forge(&|img| put64(entry_at(img, css), entry::GZIP_SUMS_OFF, 64)),
        at(
            css,
            EntryError::Reserved {
                field: Field::GzipSums,
                value: 64
            }
        )
    );
    // Invalid UTF-8 in a path (0xff), and a path without its leading slash.
    let path_off = format::le_u32(site.raw(file), entry::PATH_OFF) as usize;
    assert_eq!(
        forge(&|img| img[strings_off + path_off + 1] = 0xff),
        at(file, EntryError::NotUtf8(Field::Path))
    );
    assert!(matches!(
        forge(&|img| put32(entry_at(img, 0), entry::PATH_LEN, 0)),
        LoadError::Entry {
            index: 0,
            error: EntryError::BadPath(_)
        }
    ));
}

#[test]
fn rejects_bad_header_fields() {
    let forge = |range: core::ops::Range<usize>, v: u64| {
        let mut image = FIXTURE.to_vec();
        if range.len() == 4 {
            put32(&mut image, range, v as u32);
        } else {
            put64(&mut image, range, v);
        }
        reseal(&mut image);
        Site::load(&image).unwrap_err()
    };
    assert_eq!(forge(header::HEADER_LEN, 96), LoadError::HeaderLen(96));
    assert_eq!(forge(header::ENTRY_LEN, 64), LoadError::EntryLen(64));
    assert!(matches!(
        forge(header::ENTRY_COUNT, u32::MAX.into()),
        LoadError::Section {
            section: Section::Entries,
            ..
        }
    ));
    assert!(matches!(
        forge(header::STRINGS_OFF, 0),
        LoadError::Section {
            section: Section::Strings,
            ..
        }
    ));
    assert!(matches!(
        forge(header::DATA_OFF, u64::MAX),
        LoadError::Section {
            section: Section::Data,
            ..
        }
    ));
    let data_off = format::le_u64(FIXTURE, header::DATA_OFF);
    let data_len = format::le_u64(FIXTURE, header::DATA_LEN);
    let mut image = FIXTURE.to_vec();
    put64(&mut image, header::DATA_OFF, data_off + 2);
    put64(&mut image, header::DATA_LEN, data_len - 2);
    reseal(&mut image);
    assert_eq!(
        Site::load(&image).unwrap_err(),
        LoadError::DataMisaligned(data_off + 2)
    );
}

#[test]
fn errors_display() {
    let e = LoadError::Entry {
        index: 3,
        error: EntryError::OutOfBounds {
            field: Field::Body,
            offset: 123,
            len: 456,
            start: 64,
            end: 789,
        },
    };
    assert_eq!(
        e.to_string(),
        "entry 3 body out of bounds (offset 123, len 456, allowed 64..789)"
    );
    assert_eq!(
        LoadError::Version(9).to_string(),
        "site image format version 9, which this bareweb does not know (it reads version 4): \
         serve it with the bareweb that built it, or rebuild it with this one"
    );
}

/// An image of the previous format (version 3, before virtual hosts; committed as built
/// then) is refused by its version, with the advice to rebuild, not a layout error.
#[test]
fn an_image_of_the_previous_format_is_refused_by_its_version() {
    static V3: &[u8] = include_bytes!("testdata/small-v3.bwsite");
    let e = Site::load(V3).unwrap_err();
    assert_eq!(e, LoadError::Version(3));
    assert_eq!(
        e.to_string(),
        "site image format version 3, made by an older bareweb; this one reads version 4: \
         rebuild the image with this bareweb (bareweb build)"
    );
    // Even cut to less than a header, it is named by its version.
    assert_eq!(Site::load(&V3[..64]).unwrap_err(), LoadError::Version(3));
}

#[cfg(feature = "std")]
mod builder;
#[cfg(feature = "std")]
mod vhosts;
