//! Byte ranges (RFC 9110 section 14). We serve a single range; a request for several is
//! answered with the whole representation, which section 14.2 allows ("A server MAY
//! ignore the Range header field").

use super::fields::trim_ows;

/// One `byte-range-spec` or `suffix-range`, as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// `first-pos "-" last-pos`, both inclusive.
    FromTo(u64, u64),
    /// `first-pos "-"`: from `first-pos` to the end.
    From(u64),
    /// `"-" suffix-length`: the last `suffix-length` bytes.
    Suffix(u64),
}

/// Parses `1*DIGIT`, saturating at `u64::MAX` (a position that large is past any body).
fn pos(b: &[u8]) -> Option<u64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

fn spec(b: &[u8]) -> Option<Spec> {
    let dash = b.iter().position(|&c| c == b'-')?;
    let (first, last) = (&b[..dash], &b[dash + 1..]);
    match (first.is_empty(), last.is_empty()) {
        (true, _) => Some(Spec::Suffix(pos(last)?)),
        (false, true) => Some(Spec::From(pos(first)?)),
        (false, false) => {
            let (a, z) = (pos(first)?, pos(last)?);
            // RFC 9110 14.1.1: "A byte-range-spec is invalid if the last-pos value is
            // present and less than the first-pos."
            (z >= a).then_some(Spec::FromTo(a, z))
        }
    }
}

/// Parses a `Range` field value. `None` when it is not a `bytes` range, is syntactically
/// invalid, or asks for more than one range: in every case the field is ignored.
pub fn parse(field: &[u8]) -> Option<Spec> {
    let field = trim_ows(field);
    let eq = field.iter().position(|&c| c == b'=')?;
    // Range units are compared case-insensitively (RFC 9110 14.1).
    if !field[..eq].eq_ignore_ascii_case(b"bytes") {
        return None;
    }
    let mut one = None;
    for element in field[eq + 1..].split(|&c| c == b',') {
        let element = trim_ows(element);
        if element.is_empty() {
            continue; // empty list elements are allowed (RFC 9110 5.6.1)
        }
        let s = spec(element)?;
        if one.replace(s).is_some() {
            return None;
        }
    }
    one
}

/// Resolves `spec` against a body of `len` bytes: `Some((start, end))` with `end`
/// exclusive, or `None` when it is unsatisfiable (RFC 9110 14.1.1: a first-pos at or past
/// the end, a zero suffix-length, or an empty body).
pub fn resolve(spec: Spec, len: u64) -> Option<(u64, u64)> {
    if len == 0 {
        return None;
    }
    match spec {
        Spec::FromTo(a, _) | Spec::From(a) if a >= len => None,
        // "last-pos ... greater than or equal to the current length ... is replaced"
        // by the last byte's offset.
        Spec::FromTo(a, z) => Some((a, z.min(len - 1) + 1)),
        Spec::From(a) => Some((a, len)),
        Spec::Suffix(0) => None,
        Spec::Suffix(n) => Some((len - n.min(len), len)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let table: &[(&[u8], Option<Spec>)] = &[
            (b"bytes=0-499", Some(Spec::FromTo(0, 499))),
            (b"bytes=500-999", Some(Spec::FromTo(500, 999))),
            (b"bytes=5-5", Some(Spec::FromTo(5, 5))),
            (b"bytes=9500-", Some(Spec::From(9500))),
            (b"bytes=-500", Some(Spec::Suffix(500))),
            (b"bytes=-0", Some(Spec::Suffix(0))),
            (b"Bytes=0-1", Some(Spec::FromTo(0, 1))),
            (b" bytes=0-1 ", Some(Spec::FromTo(0, 1))),
            (b"bytes= 0-1 ,", Some(Spec::FromTo(0, 1))),
            (b"bytes=,0-1", Some(Spec::FromTo(0, 1))),
            (
                b"bytes=0-99999999999999999999999",
                Some(Spec::FromTo(0, u64::MAX)),
            ),
            (b"bytes=0-0,-1", None),
            (b"bytes=0-1, 5-6", None),
            (b"bytes=5-4", None),
            (b"bytes=", None),
            (b"bytes=-", None),
            (b"bytes=a-b", None),
            (b"bytes=1-2-3", None),
            (b"bytes=0 - 1", None),
            (b"bytes=+1-2", None),
            (b"bytes 0-1", None),
            (b"items=0-1", None),
            (b"bytes =0-1", None),
            (b"", None),
            (b"bytes=0-1,x", None),
        ];
        for &(s, want) in table {
            assert_eq!(parse(s), want, "{:?}", core::str::from_utf8(s));
        }
    }

    #[test]
    fn resolve_table() {
        type Row = (Spec, u64, Option<(u64, u64)>);
        let table: &[Row] = &[
            (Spec::FromTo(0, 499), 10_000, Some((0, 500))),
            (Spec::FromTo(0, 0), 1, Some((0, 1))),
            (Spec::FromTo(9_990, 20_000), 10_000, Some((9_990, 10_000))),
            (Spec::FromTo(0, u64::MAX), 10, Some((0, 10))),
            (Spec::FromTo(10, 20), 10, None),
            (Spec::FromTo(11, 20), 10, None),
            (Spec::From(9_500), 10_000, Some((9_500, 10_000))),
            (Spec::From(0), 10, Some((0, 10))),
            (Spec::From(9), 10, Some((9, 10))),
            (Spec::From(10), 10, None),
            (Spec::From(u64::MAX), 10, None),
            (Spec::Suffix(500), 10_000, Some((9_500, 10_000))),
            (Spec::Suffix(1), 10, Some((9, 10))),
            (Spec::Suffix(10), 10, Some((0, 10))),
            (Spec::Suffix(11), 10, Some((0, 10))),
            (Spec::Suffix(u64::MAX), 10, Some((0, 10))),
            (Spec::Suffix(0), 10, None),
            (Spec::From(0), 0, None),
            (Spec::Suffix(5), 0, None),
            (Spec::FromTo(0, 5), 0, None),
        ];
        for &(spec, len, want) in table {
            assert_eq!(resolve(spec, len), want, "{spec:?} of {len}");
        }
    }
}
