//! A per-server cache of rendered `200 OK` response heads (the kernel-bypass work's
//! profile: the HTTP step's largest cost was writing the same head again: the status
//! line, two HTTP-dates, the content type checked byte by byte, numbers in decimal).
//!
//! A full `200` head (no `Range`, no precondition) depends only on the resource's stored
//! fields, the variant chosen, the second of the `Date` field, whether the connection
//! closes, the request's version, the server name and the connection's extra lines
//! (HTTPS's `Strict-Transport-Security`). [`Key`] holds exactly those, the
//! stored strings by address and length: they live in the site image, which does not
//! change under a server, so equal addresses mean equal bytes. A hit copies the cached
//! bytes; a miss renders as before and keeps the result. Each entry is refreshed at least
//! once a second (its `Date`). The cache is direct-mapped by the entity tag's address:
//! fixed memory, no allocation after start, a few compares per lookup.
//!
//! It must never change what goes on the wire: a response from the cache is byte for
//! byte the one [`respond`](super::respond) writes (tested against it).

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::fields::Coding;
use super::{Version, HEAD_MAX};
use crate::resource::Resource;

/// Entries per cache.
const ENTRIES: usize = 8;

/// A stored string, by address and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Str(usize, usize);

impl Str {
    fn of(s: &[u8]) -> Str {
        Str(s.as_ptr() as usize, s.len())
    }
}

/// Everything a `200` head is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Key {
    content_type: Str,
    etag: Str,
    headers: Str,
    server: Str,
    /// The connection's extra lines (`Ctx::extra`): prepared once, so by address too.
    extra: Str,
    last_modified: u64,
    /// Bytes of the variant sent (its `Content-Length`).
    body_len: usize,
    coding: Option<Coding>,
    /// Whether the resource has encoded variants (`Vary`).
    vary: bool,
    now: u64,
    close: bool,
    version: Version,
}

impl Key {
    /// The key of the full `200` head of `res` in variant `coding` (`body_len` bytes).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        res: &Resource<'_>,
        coding: Option<Coding>,
        body_len: usize,
        vary: bool,
        now: u64,
        close: bool,
        version: Version,
        server: &str,
        extra: &[u8],
    ) -> Key {
        Key {
            content_type: Str::of(res.content_type.as_bytes()),
            etag: Str::of(res.etag.as_bytes()),
            headers: Str::of(res.headers.as_bytes()),
            server: Str::of(server.as_bytes()),
            extra: Str::of(extra),
            last_modified: res.last_modified,
            body_len,
            coding,
            vary,
            now,
            close,
            version,
        }
    }

    fn slot(&self) -> usize {
        // Entity tags are distinct strings of the image: their addresses spread well.
        (self.etag.0 >> 3 ^ self.etag.0 >> 7) % ENTRIES
    }
}

struct Entry {
    key: Option<Key>,
    len: usize,
    head: [u8; HEAD_MAX],
}

/// Rendered `200` heads, one cache per server (it holds the site's addresses: never share
/// it between servers of different sites).
pub struct HeadCache {
    entries: Box<[Entry]>,
    /// Lookups answered from the cache, and those that rendered.
    pub hits: u64,
    /// See `hits`.
    pub misses: u64,
}

impl Default for HeadCache {
    fn default() -> Self {
        HeadCache::new()
    }
}

impl HeadCache {
    /// An empty cache (its memory is allocated here, once: ~8 KiB).
    pub fn new() -> HeadCache {
        let entries: Vec<Entry> = (0..ENTRIES)
            .map(|_| Entry {
                key: None,
                len: 0,
                head: [0; HEAD_MAX],
            })
            .collect();
        HeadCache {
            entries: entries.into_boxed_slice(),
            hits: 0,
            misses: 0,
        }
    }

    /// Forgets every entry (the server's site was replaced: its addresses may be reused
    /// by another image).
    pub fn clear(&mut self) {
        for e in self.entries.iter_mut() {
            e.key = None;
        }
    }

    /// The head cached for `key`, if any.
    pub(super) fn get(&mut self, key: &Key) -> Option<&[u8]> {
        let e = &self.entries[key.slot()];
        if e.key.as_ref() == Some(key) {
            self.hits += 1;
            Some(&e.head[..e.len])
        } else {
            self.misses += 1;
            None
        }
    }

    /// Keeps `head` as the head for `key`.
    pub(super) fn put(&mut self, key: Key, head: &[u8]) {
        let e = &mut self.entries[key.slot()];
        if let Some(dst) = e.head.get_mut(..head.len()) {
            dst.copy_from_slice(head);
            e.len = head.len();
            e.key = Some(key);
        }
    }
}
