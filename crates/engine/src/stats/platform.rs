//! Counters a platform keeps outside the engine (on the host, the kernel's
//! `XDP_STATISTICS` of each AF_XDP socket), which the stats board shows beside the
//! engine's own: the trait the platform implements, a unit read into a fixed array, and
//! the JSON form (the metrics' form is `cores::pages::render_metrics`).
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

/// A reload's counters, as a platform that reloads its site keeps them (the host's
/// `serve`, on SIGHUP): shown on the stats page (JSON `reload`) and in the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReloadCounts {
    /// The site's generation served (0: the one of the start).
    pub generation: u64,
    /// Reloads that put a new site in service.
    pub done: u64,
    /// Reloads refused (the new site or configuration did not build); the old one kept
    /// serving.
    pub refused: u64,
    /// Old site images freed (no connection sent from them any more).
    pub freed: u64,
    /// Connections reset because they still sent from an old image at the drain timeout.
    pub reset: u64,
}

/// Where the board reads a platform's [`ReloadCounts`] (only when a page is served).
pub trait ReloadCounters: Sync + fmt::Debug {
    /// The counters now.
    fn reload_counts(&self) -> ReloadCounts;
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

/// Units a [`Snapshot`] holds (more are read again for each counter that names them).
pub const UNITS_CACHED: usize = 32;

// A snapshot marks which counters a unit has in a `u16`.
const _: () = assert!(COUNTERS_MAX <= u16::BITS as usize);

/// Every unit's counters read once (a system call per unit on the host), so that the
/// metrics page can write them counter by counter (Prometheus wants each metric's samples
/// together) without reading each unit once per counter. Fixed arrays: units past
/// [`UNITS_CACHED`] are read again when asked for (correct, only slower).
pub struct Snapshot<'a> {
    p: &'a dyn PlatformCounters,
    /// The counter names of every readable unit, in order of first appearance.
    names: [&'static str; COUNTERS_MAX],
    n_names: usize,
    /// Per cached unit: its id, or `None` when it could not be read.
    ids: [Option<u64>; UNITS_CACHED],
    /// Per cached unit: the value of `names[j]`, and bit `j` of `has` says it has one.
    vals: [[u64; COUNTERS_MAX]; UNITS_CACHED],
    has: [u16; UNITS_CACHED],
}

impl<'a> Snapshot<'a> {
    /// Reads every unit of `p` once (the cached ones for good, the others to learn their
    /// names).
    pub fn read(p: &'a dyn PlatformCounters) -> Snapshot<'a> {
        let mut s = Snapshot {
            p,
            names: [""; COUNTERS_MAX],
            n_names: 0,
            ids: [None; UNITS_CACHED],
            vals: [[0; COUNTERS_MAX]; UNITS_CACHED],
            has: [0; UNITS_CACHED],
        };
        for i in 0..p.units() {
            let Some(u) = read(p, i) else { continue };
            for &(name, v) in u.counters() {
                let j = match s.names[..s.n_names].iter().position(|n| *n == name) {
                    Some(j) => j,
                    None if s.n_names < COUNTERS_MAX => {
                        s.names[s.n_names] = name;
                        s.n_names += 1;
                        s.n_names - 1
                    }
                    None => continue,
                };
                // A name said twice by one unit keeps its first value, as `get` does for
                // the units past the cache.
                if let (Some(vals), Some(has)) = (s.vals.get_mut(i), s.has.get_mut(i)) {
                    if *has & (1 << j) == 0 {
                        vals[j] = v;
                        *has |= 1 << j;
                    }
                }
            }
            if let Some(id) = s.ids.get_mut(i) {
                *id = Some(u.id);
            }
        }
        s
    }

    /// The counter names, in order of first appearance.
    pub fn names(&self) -> &[&'static str] {
        &self.names[..self.n_names]
    }

    /// Unit `i`'s id and its value of counter `names()[j]`, if it has one.
    pub fn get(&self, i: usize, j: usize) -> Option<(u64, u64)> {
        if j >= self.n_names {
            return None;
        }
        if i < UNITS_CACHED {
            let id = self.ids[i]?;
            return (self.has[i] & (1 << j) != 0).then(|| (id, self.vals[i][j]));
        }
        let name = *self.names().get(j)?;
        let u = read(self.p, i)?;
        let v = u.counters().iter().find(|(k, _)| *k == name)?.1;
        Some((u.id, v))
    }
}

/// Whether `name` can go into JSON and a metric name as it is.
pub fn plain(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
