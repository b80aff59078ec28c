//! Field-value grammar shared by the parser and the responder (RFC 9110 section 5.6):
//! OWS, `#rule` lists, tokens, q-values and entity-tags.

pub use crate::resource::is_tchar;

/// Strips optional whitespace (SP / HTAB) from both ends.
pub fn trim_ows(mut b: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = b {
        b = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = b {
        b = rest;
    }
    b
}

/// The non-empty elements of a comma-separated list, trimmed. RFC 9110 5.6.1: "a
/// recipient MUST accept lists that contain empty list elements" (and ignores them).
/// Only for lists whose elements cannot contain a comma (no quoted strings).
pub fn list(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    b.split(|&c| c == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// Which of `tokens` the comma-separated token list `b` contains (case-insensitive), in
/// one pass over the list.
pub fn has_tokens<const N: usize>(b: &[u8], tokens: [&[u8]; N]) -> [bool; N] {
    let mut found = [false; N];
    for t in list(b) {
        for (f, want) in found.iter_mut().zip(tokens) {
            *f |= t.eq_ignore_ascii_case(want);
        }
    }
    found
}

/// `qvalue` of RFC 9110 12.4.2, in thousandths: `( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "."
/// 0*3("0") ] )`.
pub fn qvalue(b: &[u8]) -> Option<u16> {
    let (int, frac) = match b {
        [i] => (*i, &[][..]),
        [i, b'.', frac @ ..] if frac.len() <= 3 => (*i, frac),
        _ => return None,
    };
    let mut q: u16 = match int {
        b'0' => 0,
        b'1' => 1000,
        _ => return None,
    };
    let mut scale = 100;
    for &d in frac {
        if !d.is_ascii_digit() || (int == b'1' && d != b'0') {
            return None;
        }
        q += u16::from(d - b'0') * scale;
        scale /= 10;
    }
    Some(q)
}

/// What an `Accept-Encoding` field (all its lines) says about the codings we care for,
/// each as a q-value in thousandths when listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptEncoding {
    gzip: Option<u16>,
    br: Option<u16>,
    zstd: Option<u16>,
    identity: Option<u16>,
    any: Option<u16>,
}

/// A content coding the site may hold a variant in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// gzip (RFC 9110 8.4.1.3).
    Gzip,
    /// Brotli (RFC 7932).
    Br,
    /// Zstandard (RFC 8878).
    Zstd,
}

impl Coding {
    /// The `Content-Encoding` token.
    pub fn token(self) -> &'static [u8] {
        match self {
            Coding::Gzip => b"gzip",
            Coding::Br => b"br",
            Coding::Zstd => b"zstd",
        }
    }

    /// What the entity tag of this variant gets before its closing quote.
    pub fn etag_suffix(self) -> &'static [u8] {
        match self {
            Coding::Gzip => b"-gz",
            Coding::Br => b"-br",
            Coding::Zstd => b"-zst",
        }
    }
}

impl AcceptEncoding {
    /// Adds one `Accept-Encoding` field line. An element with a malformed weight is
    /// ignored; the first mention of a coding wins.
    pub fn add(&mut self, line: &[u8]) {
        for element in list(line) {
            let mut parts = element.split(|&c| c == b';');
            let coding = trim_ows(parts.next().unwrap_or_default());
            let mut q = Some(1000);
            for param in parts {
                let param = trim_ows(param);
                if let [b'q' | b'Q', b'=', v @ ..] = param {
                    q = qvalue(v);
                }
            }
            let Some(q) = q else { continue };
            // RFC 9110 8.4.1.3: "A recipient SHOULD consider "x-gzip" to be equivalent
            // to "gzip"."
            let slot =
                if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
                    &mut self.gzip
                } else if coding.eq_ignore_ascii_case(b"br") {
                    &mut self.br
                } else if coding.eq_ignore_ascii_case(b"zstd") {
                    &mut self.zstd
                } else if coding.eq_ignore_ascii_case(b"identity") {
                    &mut self.identity
                } else if coding == b"*" {
                    &mut self.any
                } else {
                    continue;
                };
            slot.get_or_insert(q);
        }
    }

    /// Whether to send the gzip variant: gzip is acceptable (q > 0, named or through
    /// `*`) and not less preferred than an identity weight the client stated (`identity`
    /// or `*`). RFC 9110 12.5.3 leaves an unlisted identity acceptable but gives it no
    /// weight, so `gzip;q=0.5` alone selects gzip. A request without the field gets
    /// identity (any coding would be allowed, but identity is the safe choice).
    pub fn gzip_preferred(&self) -> bool {
        self.acceptable(Coding::Gzip).is_some()
    }

    /// The weight of `coding` if it is acceptable and not less preferred than identity
    /// (see [`Self::gzip_preferred`]), else `None`.
    pub fn acceptable(&self, coding: Coding) -> Option<u16> {
        let q = match coding {
            Coding::Gzip => self.gzip,
            Coding::Br => self.br,
            Coding::Zstd => self.zstd,
        }
        .or(self.any)
        .unwrap_or(0);
        let identity = self.identity.or(self.any).unwrap_or(0);
        (q > 0 && q >= identity).then_some(q)
    }

    /// Chooses among the variants a resource has (coding and body length): the highest
    /// weight acceptable, the smaller body on a tie; `None` sends identity.
    pub fn choose(&self, have: &[(Coding, usize)]) -> Option<Coding> {
        have.iter()
            .filter_map(|&(c, len)| self.acceptable(c).map(|q| (q, len, c)))
            .min_by_key(|&(q, len, _)| (core::cmp::Reverse(q), len))
            .map(|(_, _, c)| c)
    }
}

/// One member of an entity-tag list: whether it is weak, and its opaque-tag without the
/// quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityTag<'b> {
    /// `W/` prefix present.
    pub weak: bool,
    /// The characters between the quotes.
    pub opaque: &'b [u8],
}

impl<'b> EntityTag<'b> {
    /// Parses one `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE` at the start of `b`,
    /// returning it and the rest of `b`.
    fn parse_prefix(b: &'b [u8]) -> Option<(Self, &'b [u8])> {
        let (weak, b) = match b {
            [b'W', b'/', rest @ ..] => (true, rest),
            _ => (false, b),
        };
        let [b'"', rest @ ..] = b else { return None };
        let end = rest.iter().position(|&c| c == b'"')?;
        let opaque = &rest[..end];
        // etagc = %x21 / %x23-7E / obs-text
        if opaque.iter().any(|&c| c < 0x21 || c == 0x7f) {
            return None;
        }
        Some((EntityTag { weak, opaque }, &rest[end + 1..]))
    }

    /// Parses a whole field value that must be exactly one entity-tag.
    pub fn parse(b: &'b [u8]) -> Option<Self> {
        match Self::parse_prefix(trim_ows(b))? {
            (tag, []) => Some(tag),
            _ => None,
        }
    }

    /// Parses a stored tag such as `"5f3a-1c2b"`; a tag without quotes is taken whole as
    /// its opaque part, so a malformed site tag still compares consistently.
    pub fn of_stored(s: &'b str) -> Self {
        Self::parse(s.as_bytes()).unwrap_or(EntityTag {
            weak: false,
            opaque: s.as_bytes(),
        })
    }

    /// Whether `self` equals `other` with `suffix` appended to `other`'s opaque part.
    fn same_opaque(&self, other: &EntityTag<'_>, suffix: &[u8]) -> bool {
        self.opaque.len() == other.opaque.len() + suffix.len()
            && self.opaque.starts_with(other.opaque)
            && self.opaque.ends_with(suffix)
    }

    /// RFC 9110 8.8.3.2 weak comparison against `ours` + `suffix`.
    pub fn weak_eq(&self, ours: &EntityTag<'_>, suffix: &[u8]) -> bool {
        self.same_opaque(ours, suffix)
    }

    /// RFC 9110 8.8.3.2 strong comparison against `ours` + `suffix`: neither is weak.
    pub fn strong_eq(&self, ours: &EntityTag<'_>, suffix: &[u8]) -> bool {
        !self.weak && !ours.weak && self.same_opaque(ours, suffix)
    }
}

/// Evaluates `If-None-Match` (RFC 9110 13.1.2) for an existing representation whose tag is
/// `ours` + `suffix`: true when the field is `*` or lists a tag that matches weakly. A
/// malformed list matches nothing from the first bad member on (the condition is then
/// true and the full response is sent, which is always safe).
pub fn if_none_match(field: &[u8], ours: &EntityTag<'_>, suffix: &[u8]) -> bool {
    any_tag(field, |tag| tag.weak_eq(ours, suffix))
}

/// Evaluates `If-Match` (RFC 9110 13.1.1) for an existing representation whose tag is
/// `ours` + `suffix`: true when the field is `*` or lists a tag that matches strongly (a
/// weak tag never does). A malformed list matches nothing from the first bad member on.
pub fn if_match(field: &[u8], ours: &EntityTag<'_>, suffix: &[u8]) -> bool {
    any_tag(field, |tag| tag.strong_eq(ours, suffix))
}

/// Whether `field`, `*` or a list of entity-tags, is `*` or has a member for which `hit`
/// holds (members after a malformed one are not looked at).
fn any_tag(field: &[u8], hit: impl Fn(&EntityTag<'_>) -> bool) -> bool {
    let field = trim_ows(field);
    if field == b"*" {
        return true;
    }
    let mut rest = field;
    loop {
        // Skip OWS and empty list elements.
        while let [b' ' | b'\t' | b',', r @ ..] = rest {
            rest = r;
        }
        if rest.is_empty() {
            return false;
        }
        let Some((tag, r)) = EntityTag::parse_prefix(rest) else {
            return false;
        };
        if hit(&tag) {
            return true;
        }
        let r = trim_ows(r);
        match r {
            [] => return false,
            [b',', ..] => rest = r,
            _ => return false,
        }
    }
}

/// Parses a `Content-Length` field line: `1*DIGIT`, or a list of identical values
/// (RFC 9110 8.6 allows accepting `42, 42`). `None` when invalid or over `u64`.
pub fn content_length(b: &[u8]) -> Option<u64> {
    let mut value = None;
    let mut any = false;
    for element in b.split(|&c| c == b',') {
        let element = trim_ows(element);
        if element.is_empty() || !element.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut n: u64 = 0;
        for &d in element {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        if value.is_some_and(|v| v != n) {
            return None;
        }
        value = Some(n);
        any = true;
    }
    if any {
        value
    } else {
        None
    }
}

/// Whether `b` is a plausible `Host` value: `uri-host [ ":" port ]` built from
/// unreserved, sub-delims, `%`, `:` and brackets (RFC 9110 7.2, RFC 3986 3.2.2). Empty is
/// allowed (RFC 9112 3.2: sent when the target URI has no authority). One table lookup a
/// byte (every request has a Host).
pub fn valid_host(b: &[u8]) -> bool {
    b.iter().all(|&c| HOST_BYTES[c as usize])
}

/// The bytes [`valid_host`] allows.
static HOST_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b':'
                    | b'['
                    | b']'
            );
        c += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_and_lists() {
        assert_eq!(trim_ows(b" \t a b \t"), b"a b");
        assert_eq!(trim_ows(b"   "), b"");
        let v: alloc::vec::Vec<&[u8]> = list(b" a, ,b ,, c\t,").collect();
        assert_eq!(v, [&b"a"[..], b"b", b"c"]);
        assert!(has_tokens(b"keep-alive, Close", [b"close"])[0]);
        assert!(has_tokens(b"Upgrade,KEEP-ALIVE", [b"keep-alive"])[0]);
        assert!(!has_tokens(b"closed, clos", [b"close"])[0]);
        let both = has_tokens(b" Keep-Alive ,, close", [b"close", b"keep-alive", b"x"]);
        assert_eq!(both, [true, true, false]);
    }

    #[test]
    fn qvalue_table() {
        let table: &[(&[u8], Option<u16>)] = &[
            (b"0", Some(0)),
            (b"1", Some(1000)),
            (b"0.", Some(0)),
            (b"0.5", Some(500)),
            (b"0.05", Some(50)),
            (b"0.001", Some(1)),
            (b"0.999", Some(999)),
            (b"1.0", Some(1000)),
            (b"1.000", Some(1000)),
            (b"1.", Some(1000)),
            (b"1.001", None),
            (b"0.1234", None),
            (b"2", None),
            (b"", None),
            (b".5", None),
            (b"0.5x", None),
            (b"-0", None),
            (b" 0.5", None),
        ];
        for &(s, q) in table {
            assert_eq!(qvalue(s), q, "{:?}", core::str::from_utf8(s));
        }
    }

    #[test]
    fn accept_encoding_table() {
        let table: &[(&[&[u8]], bool)] = &[
            (&[], false),
            (&[b""], false),
            (&[b"gzip"], true),
            (&[b"GZIP"], true),
            (&[b"x-gzip"], true),
            (&[b"gzip, deflate, br"], true),
            (&[b"br;q=1.0, gzip;q=0.8, *;q=0.1"], true),
            (&[b"gzip;q=0"], false),
            (&[b"gzip; q=0.000"], false),
            (&[b"gzip ; Q=0.5"], true),
            (&[b"gzip;q=0.001"], true),
            (&[b"gzip;q=0.5, identity;q=0.6"], false),
            (&[b"gzip;q=0.5, *;q=0.6"], false),
            (&[b"gzip;q=0.6, *;q=0.5"], true),
            (&[b"identity"], false),
            (&[b"deflate, br"], false),
            (&[b"*"], true),
            (&[b"*;q=0"], false),
            (&[b"*, gzip;q=0"], false),
            (&[b"gzip;q=0, *"], false),
            (&[b"gzip;q=0.5, identity;q=1"], false),
            (&[b"gzip;q=0.5, identity;q=0.5"], true),
            (&[b"gzip;q=0.5, *;q=0"], true),
            (&[b"gzip;q=2"], false),
            (&[b"gzip;q=abc"], false),
            (&[b"gzip;q=abc, *"], true),
            (&[b"gzipx, xgzip"], false),
            (&[b"deflate", b"gzip"], true),
            (&[b"gzip;q=0", b"gzip"], false),
            (&[b",,gzip,,"], true),
        ];
        for &(lines, want) in table {
            let mut ae = AcceptEncoding::default();
            for line in lines {
                ae.add(line);
            }
            assert_eq!(ae.gzip_preferred(), want, "{lines:?}");
        }
    }

    #[test]
    fn entity_tags() {
        let ours = EntityTag::of_stored("\"abc\"");
        assert_eq!(
            ours,
            EntityTag {
                weak: false,
                opaque: b"abc"
            }
        );
        let weak = EntityTag::parse(b"W/\"abc\"").unwrap();
        assert!(weak.weak_eq(&ours, b""));
        assert!(!weak.strong_eq(&ours, b""));
        let gz = EntityTag::parse(b"\"abc-gz\"").unwrap();
        assert!(gz.strong_eq(&ours, b"-gz"));
        assert!(!gz.strong_eq(&ours, b""));
        assert!(EntityTag::parse(b"abc").is_none());
        assert!(EntityTag::parse(b"\"abc").is_none());
        assert!(EntityTag::parse(b"\"a\" x").is_none());
        assert!(EntityTag::parse(b"w/\"a\"").is_none());
        assert!(EntityTag::parse(b"\"a b\"").is_none());
        assert_eq!(EntityTag::of_stored("raw").opaque, b"raw");
    }

    #[test]
    fn if_none_match_table() {
        let ours = EntityTag::of_stored("\"abc\"");
        let table: &[(&[u8], &[u8], bool)] = &[
            (b"\"abc\"", b"", true),
            (b"W/\"abc\"", b"", true),
            (b"*", b"", true),
            (b" * ", b"-gz", true),
            (b"\"x\", \"abc\"", b"", true),
            (b"\"x\",W/\"abc\"", b"", true),
            (b" , \"x\" ,, \"abc\" ", b"", true),
            (b"\"abc\"", b"-gz", false),
            (b"\"abc-gz\"", b"-gz", true),
            (b"W/\"abc-gz\"", b"-gz", true),
            (b"\"abc-gz\"", b"", false),
            (b"\"ab\"", b"", false),
            (b"\"abcd\"", b"", false),
            (b"abc", b"", false),
            (b"\"x\" \"abc\"", b"", false),
            (b"\"x\", abc, \"abc\"", b"", false),
            (b"", b"", false),
            (b"\"a,b\", \"abc\"", b"", true),
            (b"*, \"abc\"", b"", false),
        ];
        for &(field, suffix, want) in table {
            assert_eq!(
                if_none_match(field, &ours, suffix),
                want,
                "{:?} {:?}",
                core::str::from_utf8(field),
                core::str::from_utf8(suffix)
            );
        }
    }

    #[test]
    fn if_match_table() {
        let ours = EntityTag::of_stored("\"abc\"");
        let table: &[(&[u8], &[u8], bool)] = &[
            (b"\"abc\"", b"", true),
            // Strong comparison (RFC 9110 8.8.3.2): a weak tag never matches.
            (b"W/\"abc\"", b"", false),
            (b"*", b"", true),
            (b" * ", b"-gz", true),
            (b"\"x\", \"abc\"", b"", true),
            (b"W/\"abc\", \"abc\"", b"", true),
            (b"\"abc\"", b"-gz", false),
            (b"\"abc-gz\"", b"-gz", true),
            (b"W/\"abc-gz\"", b"-gz", false),
            (b"\"ab\"", b"", false),
            (b"abc", b"", false),
            (b"", b"", false),
        ];
        for &(field, suffix, want) in table {
            assert_eq!(
                if_match(field, &ours, suffix),
                want,
                "{:?} {:?}",
                core::str::from_utf8(field),
                core::str::from_utf8(suffix)
            );
        }
        // A weak stored tag matches nothing strongly, `*` aside.
        let weak = EntityTag::of_stored("W/\"abc\"");
        assert!(!if_match(b"\"abc\"", &weak, b""));
        assert!(if_match(b"*", &weak, b""));
    }

    #[test]
    fn content_length_table() {
        let table: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"42", Some(42)),
            (b"007", Some(7)),
            (b"42, 42", Some(42)),
            (b"42,42,42", Some(42)),
            (b"42, 43", None),
            (b"", None),
            (b",", None),
            (b"42,", None),
            (b"-1", None),
            (b"+1", None),
            (b"1 2", None),
            (b"0x10", None),
            (b"18446744073709551615", Some(u64::MAX)),
            (b"18446744073709551616", None),
            (b"99999999999999999999999", None),
        ];
        for &(s, want) in table {
            assert_eq!(content_length(s), want, "{:?}", core::str::from_utf8(s));
        }
    }

    #[test]
    fn hosts() {
        for ok in [
            &b""[..],
            b"example.com",
            b"10.0.0.2:8080",
            b"[::1]:80",
            b"a-b_c~d",
        ] {
            assert!(valid_host(ok), "{ok:?}");
        }
        for bad in [&b"a b"[..], b"a/b", b"a@b", b"a\"b", b"a\\b", b"\x80"] {
            assert!(!valid_host(bad), "{bad:?}");
        }
    }
}
