//! HTTP Strict Transport Security (RFC 6797): the policy a server asks browsers to keep
//! (`--hsts`), its parsing from the option's text and its one header field, rendered once
//! when the server starts and sent on HTTPS responses only (RFC 6797 §7.2: "An HSTS Host
//! MUST NOT include the STS header field in HTTP responses conveyed over non-secure
//! transport").

use alloc::vec::Vec;

/// An HSTS policy: `max-age=N`, with `includeSubDomains` and `preload` when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hsts {
    /// Seconds a browser keeps the policy (0: forget it, RFC 6797 §6.1.1).
    pub max_age: u32,
    /// `includeSubDomains` (RFC 6797 §6.1.2).
    pub include_subdomains: bool,
    /// `preload`: the hstspreload.org list's token (not in RFC 6797).
    pub preload: bool,
}

/// What [`Hsts::parse`] expected, for its callers' error messages.
pub const HSTS_EXPECTED: &str =
    "expected max-age=SECONDS (0 to 4294967295), then ;includeSubDomains and ;preload if wanted";

impl Hsts {
    /// Parses `max-age=N[; includeSubDomains][; preload]` (directive names in any case,
    /// white space around `;`, RFC 6797 §6.1); every other text is refused, a quoted value
    /// and unknown directives included: the policy is sticky in browsers, so a typo must
    /// stop the start rather than be sent.
    pub fn parse(s: &str) -> Option<Hsts> {
        let mut max_age = None;
        let mut include_subdomains = false;
        let mut preload = false;
        for d in s.split(';') {
            let d = d.trim_matches([' ', '\t']);
            if d.is_empty() {
                // `[ directive ] *( ";" [ directive ] )`: empty ones are allowed.
                continue;
            }
            if let Some((name, value)) = d.split_once('=') {
                if !name.trim_end().eq_ignore_ascii_case("max-age") || max_age.is_some() {
                    return None;
                }
                let v = value.trim_start();
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                max_age = Some(v.parse::<u32>().ok()?);
            } else if d.eq_ignore_ascii_case("includeSubDomains") && !include_subdomains {
                include_subdomains = true;
            } else if d.eq_ignore_ascii_case("preload") && !preload {
                preload = true;
            } else {
                return None;
            }
        }
        Some(Hsts {
            max_age: max_age?,
            include_subdomains,
            preload,
        })
    }

    /// The whole header line, `Strict-Transport-Security: max-age=N[; …]\r\n`.
    pub fn field(&self) -> Vec<u8> {
        let mut f = Vec::with_capacity(80);
        f.extend_from_slice(b"Strict-Transport-Security: max-age=");
        f.extend_from_slice(alloc::format!("{}", self.max_age).as_bytes());
        if self.include_subdomains {
            f.extend_from_slice(b"; includeSubDomains");
        }
        if self.preload {
            f.extend_from_slice(b"; preload");
        }
        f.extend_from_slice(b"\r\n");
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_render_canonically() {
        let h = Hsts::parse("max-age=31536000; includeSubDomains").unwrap();
        assert_eq!(
            h.field(),
            b"Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n"
        );
        let h = Hsts::parse("MAX-AGE=0;PRELOAD ;\tincludesubdomains;").unwrap();
        assert_eq!(
            h,
            Hsts {
                max_age: 0,
                include_subdomains: true,
                preload: true
            }
        );
        assert_eq!(
            Hsts::parse("max-age=4294967295").unwrap().field(),
            b"Strict-Transport-Security: max-age=4294967295\r\n"
        );
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "includeSubDomains",
            "max-age=",
            "max-age=-1",
            "max-age=\"300\"",
            "max-age=4294967296",
            "max-age=1; max-age=2",
            "max-age=1; includeSubDomains; includeSubDomains",
            "max-age=1; foo",
            "max-age=1\r\nX: y",
        ] {
            assert_eq!(Hsts::parse(bad), None, "{bad:?}");
        }
    }
}
