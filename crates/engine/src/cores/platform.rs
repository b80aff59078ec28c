//! Counters a platform keeps outside the engine (on the host, the kernel's
//! `XDP_STATISTICS` of each AF_XDP socket), which the stats board shows beside the
//! engine's own: the trait the platform implements, a unit read into a fixed array, and
//! the JSON form (the metrics' form is `pages::render_metrics`).
//! Read only when a page is served, into fixed arrays: no allocation, nothing on the
//! request path.

use core::fmt;

/// Counters a platform keeps outside the engine, shown on the stats page and in the
/// metrics beside the engine's own: on the host, the kernel's `XDP_STATISTICS` of each
/// AF_XDP socket (frames it dropped because our rings were full or empty, descriptors it
/// refused). They are read (a system call per unit on the host) only when a page is
/// served, never on the request path.
pub trait PlatformCounters: Sync + fmt::Debug {
    /// The JSON object's name and the metrics' prefix (`xdp`).
    fn name(&self) -> &'static str;
    /// What one unit is, as the JSON key and the metrics label (`queue`).
    fn unit(&self) -> &'static str;
    /// How many units there are.
    fn units(&self) -> usize;
    /// Unit `i`'s id (its queue number) and its counters, each given to `f` as (name,
    /// value); `None` when they cannot be read now (the unit is then left out).
    fn read(&self, i: usize, f: &mut dyn FnMut(&'static str, u64)) -> Option<u64>;
}

/// Most counters of one platform unit that are shown (more are left out).
pub const COUNTERS_MAX: usize = 16;

/// One unit's counters as read for a page, in a fixed array (no allocation).
pub struct PlatformUnit {
    /// The unit's id (its queue number).
    pub id: u64,
    vals: [(&'static str, u64); COUNTERS_MAX],
    n: usize,
}

impl PlatformUnit {
    /// The counters whose names can go into JSON and a metric name as they are (plain
    /// ASCII letters, digits and `_`), at most [`COUNTERS_MAX`].
    pub fn counters(&self) -> &[(&'static str, u64)] {
        &self.vals[..self.n]
    }
}

/// Reads unit `i` of `p`, or `None` when it cannot be read now.
pub fn read(p: &dyn PlatformCounters, i: usize) -> Option<PlatformUnit> {
    let mut u = PlatformUnit {
        id: 0,
        vals: [("", 0); COUNTERS_MAX],
        n: 0,
    };
    u.id = p.read(i, &mut |name, v| {
        if u.n < COUNTERS_MAX && plain(name) {
            u.vals[u.n] = (name, v);
            u.n += 1;
        }
    })?;
    Some(u)
}

/// `,"<name>":[{"<unit>":id,"<counter>":v,..},..]`.
pub fn write_json(p: &dyn PlatformCounters, w: &mut impl fmt::Write) -> fmt::Result {
    if !plain(p.name()) || !plain(p.unit()) {
        return Ok(());
    }
    write!(w, ",\"{}\":[", p.name())?;
    let mut first = true;
    for i in 0..p.units() {
        let Some(u) = read(p, i) else {
            continue;
        };
        if !first {
            w.write_str(",")?;
        }
        first = false;
        write!(w, "{{\"{}\":{}", p.unit(), u.id)?;
        for (name, v) in u.counters() {
            write!(w, ",\"{name}\":{v}")?;
        }
        w.write_str("}")?;
    }
    w.write_str("]")
}

/// Whether `name` can go into JSON and a metric name as it is.
pub fn plain(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
