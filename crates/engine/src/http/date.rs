//! HTTP-date (RFC 9110 section 5.6.7): formatting as IMF-fixdate, parsing of all three
//! formats, and the Common Log Format timestamp for access logs.
//!
//! Calendar arithmetic is Howard Hinnant's `days_from_civil` / `civil_from_days`,
//! restricted to the years 1970..=9999 that an HTTP-date can name after the epoch.

use core::fmt;

/// Length of an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const IMF_LEN: usize = 29;

/// Last second that still has a four-digit year: 9999-12-31 23:59:59 UTC.
const MAX_UNIX: u64 = 253_402_300_799;

const DAYS: [&[u8; 3]; 7] = [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"];
const LONG_DAYS: [&[u8]; 7] = [
    b"Sunday",
    b"Monday",
    b"Tuesday",
    b"Wednesday",
    b"Thursday",
    b"Friday",
    b"Saturday",
];
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Civil {
    year: u64,
    month: u64, // 1..=12
    day: u64,   // 1..=31
    hour: u64,
    minute: u64,
    second: u64,
    weekday: usize, // 0 = Sunday
}

/// Days since 1970-01-01 of a proleptic Gregorian date with `year >= 1`.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    // Shift the epoch to 0000-03-01 so the leap day ends the year; `+ 400` keeps all
    // arithmetic unsigned for year 0 (from January/February of year 1).
    let y = if month <= 2 { year + 399 } else { year + 400 };
    let era = y / 400;
    let yoe = y % 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    // 719_468 days from 0000-03-01 to 1970-01-01, plus the 146_097 of the extra era.
    (era * 146_097 + doe).saturating_sub(719_468 + 146_097)
}

fn civil(unix: u64) -> Civil {
    let unix = unix.min(MAX_UNIX);
    let days = unix / 86_400;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs / 60 % 60,
        second: secs % 60,
        weekday: ((days + 4) % 7) as usize,
    }
}

fn two(out: &mut [u8], n: u64) {
    out[0] = b'0' + (n / 10 % 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

fn four(out: &mut [u8], n: u64) {
    two(&mut out[..2], n / 100);
    two(&mut out[2..4], n % 100);
}

/// Formats `unix` (clamped to year 9999) as an IMF-fixdate:
/// `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn format(unix: u64) -> [u8; IMF_LEN] {
    let c = civil(unix);
    let mut out = *b"Sun, 00 Jan 0000 00:00:00 GMT";
    out[..3].copy_from_slice(DAYS[c.weekday % 7]);
    two(&mut out[5..7], c.day);
    out[8..11].copy_from_slice(MONTHS[(c.month as usize + 11) % 12]);
    four(&mut out[12..16], c.year);
    two(&mut out[17..19], c.hour);
    two(&mut out[20..22], c.minute);
    two(&mut out[23..25], c.second);
    out
}

/// A Common Log Format timestamp, `10/Oct/2000:13:55:36 +0000`, from [`clf_date`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClfDate([u8; 26]);

impl ClfDate {
    /// The timestamp's bytes (always ASCII).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for ClfDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every byte was written from ASCII digits and month names.
        f.write_str(core::str::from_utf8(&self.0).unwrap_or("01/Jan/1970:00:00:00 +0000"))
    }
}

/// Formats `unix` as a Common Log Format timestamp in UTC, for access logs.
pub fn clf_date(unix: u64) -> ClfDate {
    let c = civil(unix);
    let mut out = *b"00/Jan/0000:00:00:00 +0000";
    two(&mut out[0..2], c.day);
    out[3..6].copy_from_slice(MONTHS[(c.month as usize + 11) % 12]);
    four(&mut out[7..11], c.year);
    two(&mut out[12..14], c.hour);
    two(&mut out[15..17], c.minute);
    two(&mut out[18..20], c.second);
    ClfDate(out)
}

/// An RFC 3339 timestamp in UTC, `2000-10-10T13:55:36Z`, from [`iso_date`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsoDate([u8; 20]);

impl fmt::Display for IsoDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every byte was written from ASCII digits and separators.
        f.write_str(core::str::from_utf8(&self.0).unwrap_or("1970-01-01T00:00:00Z"))
    }
}

/// Formats `unix` as an RFC 3339 timestamp in UTC, for the JSON access log.
pub fn iso_date(unix: u64) -> IsoDate {
    let c = civil(unix);
    let mut out = *b"0000-00-00T00:00:00Z";
    four(&mut out[0..4], c.year);
    two(&mut out[5..7], c.month);
    two(&mut out[8..10], c.day);
    two(&mut out[11..13], c.hour);
    two(&mut out[14..16], c.minute);
    two(&mut out[17..19], c.second);
    IsoDate(out)
}

fn digits(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let mut n = 0u64;
    for &d in b {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    Some(n)
}

fn month(b: &[u8]) -> Option<u64> {
    MONTHS
        .iter()
        .position(|m| &m[..] == b)
        .map(|i| i as u64 + 1)
}

fn is_leap(y: u64) -> bool {
    matches!((y % 4, y % 100, y % 400), (0, 1.., _) | (_, _, 0))
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `hour ":" minute ":" second`, 8 bytes.
fn time_of_day(b: &[u8]) -> Option<u64> {
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, s) = (digits(&b[0..2])?, digits(&b[3..5])?, digits(&b[6..8])?);
    // RFC 9110 5.6.7: second = 2DIGIT, 00-60 (a leap second).
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    Some(h * 3600 + m * 60 + s)
}

fn assemble(year: u64, month: u64, day: u64, time: u64) -> Option<u64> {
    if !(1970..=9999).contains(&year) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + time)
}

/// Parses an HTTP-date in any of the three formats RFC 9110 section 5.6.7 requires a
/// recipient to accept. `now` resolves the two-digit year of the obsolete RFC 850 form.
/// Returns seconds since the epoch, or `None` for anything invalid (or before 1970).
pub fn parse(b: &[u8], now: u64) -> Option<u64> {
    let b = super::fields::trim_ows(b);
    if b.len() == IMF_LEN && b[3] == b',' {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        if !DAYS.iter().any(|d| d[..] == b[..3])
            || b[4] != b' '
            || b[7] != b' '
            || b[11] != b' '
            || b[16] != b' '
            || &b[25..] != b" GMT"
        {
            return None;
        }
        let day = digits(&b[5..7])?;
        let mon = month(&b[8..11])?;
        let year = digits(&b[12..16])?;
        return assemble(year, mon, day, time_of_day(&b[17..25])?);
    }
    if let Some(comma) = b.iter().position(|&c| c == b',') {
        // rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
        let rest = &b[comma..];
        if !LONG_DAYS.iter().any(|d| *d == &b[..comma])
            || rest.len() != 24
            || rest[1] != b' '
            || rest[4] != b'-'
            || rest[8] != b'-'
            || rest[11] != b' '
            || &rest[20..] != b" GMT"
        {
            return None;
        }
        let day = digits(&rest[2..4])?;
        let mon = month(&rest[5..8])?;
        let yy = digits(&rest[9..11])?;
        // RFC 9110 5.6.7: "Recipients of a timestamp value in rfc850-date format, which
        // uses a two-digit year, MUST interpret a timestamp that appears to be more than
        // 50 years in the future as representing the most recent year in the past that
        // had the same last two digits."
        let this_year = civil(now).year;
        let mut year = this_year / 100 * 100 + yy;
        if year > this_year + 50 {
            year -= 100;
        }
        return assemble(year, mon, day, time_of_day(&rest[12..20])?);
    }
    // asctime-date: Sun Nov  6 08:49:37 1994
    if b.len() != 24 || b[3] != b' ' || b[7] != b' ' || b[10] != b' ' || b[19] != b' ' {
        return None;
    }
    if !DAYS.iter().any(|d| d[..] == b[..3]) {
        return None;
    }
    let mon = month(&b[4..7])?;
    let day = match (b[8], b[9]) {
        (b' ', d) => digits(&[d])?,
        (t, d) => digits(&[t, d])?,
    };
    let year = digits(&b[20..24])?;
    assemble(year, mon, day, time_of_day(&b[11..19])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_timestamps() {
        let table: &[(u64, &[u8])] = &[
            (0, b"Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, b"Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, b"Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_000_000_000, b"Sun, 09 Sep 2001 01:46:40 GMT"),
            (1_700_000_000, b"Tue, 14 Nov 2023 22:13:20 GMT"),
            (4_133_980_799, b"Fri, 31 Dec 2100 23:59:59 GMT"),
            (MAX_UNIX, b"Fri, 31 Dec 9999 23:59:59 GMT"),
            (u64::MAX, b"Fri, 31 Dec 9999 23:59:59 GMT"),
        ];
        for &(t, s) in table {
            assert_eq!(&format(t)[..], s, "{t}");
        }
    }

    #[test]
    fn formats_clf() {
        assert_eq!(
            clf_date(971_186_136).as_bytes(),
            b"10/Oct/2000:13:55:36 +0000"
        );
        assert_eq!(
            alloc::format!("{}", clf_date(784_111_777)),
            "06/Nov/1994:08:49:37 +0000"
        );
    }

    #[test]
    fn round_trips_every_day() {
        // One sample per day across 1970..2400 plus some awkward seconds.
        let mut t = 0u64;
        while t < 13_569_465_600 {
            let s = format(t);
            assert_eq!(
                parse(&s, 0),
                Some(t),
                "{}",
                core::str::from_utf8(&s).unwrap()
            );
            t += 86_400 + 3_599;
        }
    }

    #[test]
    fn parses_three_formats() {
        let now = 1_700_000_000;
        for s in [
            &b"Sun, 06 Nov 1994 08:49:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov  6 08:49:37 1994",
            b"  Sun, 06 Nov 1994 08:49:37 GMT ",
        ] {
            assert_eq!(
                parse(s, now),
                Some(784_111_777),
                "{:?}",
                core::str::from_utf8(s)
            );
        }
        assert_eq!(
            parse(b"Sun Nov 16 08:49:37 1994", now),
            Some(784_111_777 + 10 * 86_400)
        );
        // Two-digit years: more than 50 years ahead means the previous century.
        // 2070 is less than 50 years after 2023, so "70" is 2070 here.
        assert_eq!(
            parse(b"Thursday, 01-Jan-70 00:00:00 GMT", now),
            Some(3_155_760_000)
        );
        assert_eq!(parse(b"Thursday, 01-Jan-70 00:00:00 GMT", 0), Some(0));
        assert_eq!(
            parse(b"Friday, 01-Jan-21 00:00:00 GMT", now),
            Some(1_609_459_200)
        );
        // 2073 is within 50 years of 2023, so it is 2073, not 1973.
        assert_eq!(
            parse(b"Sunday, 01-Jan-73 00:00:00 GMT", now),
            Some(3_250_454_400)
        );
        assert_eq!(
            parse(b"Monday, 01-Jan-74 00:00:00 GMT", now),
            Some(126_230_400)
        );
        // Leap second is accepted.
        assert_eq!(
            parse(b"Sat, 31 Dec 2016 23:59:60 GMT", now),
            Some(1_483_228_800)
        );
    }

    #[test]
    fn rejects_invalid_dates() {
        for s in [
            &b""[..],
            b"yesterday",
            b"Sun, 06 Nov 1994 08:49:37 UTC",
            b"Sun, 06 Nov 1994 08:49:37 gmt",
            b"sun, 06 Nov 1994 08:49:37 GMT",
            b"Sun, 06 nov 1994 08:49:37 GMT",
            b"Sun, 6 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Nov 94 08:49:37 GMT",
            b"Sun, 31 Nov 1994 08:49:37 GMT",
            b"Sun, 29 Feb 1900 08:49:37 GMT",
            b"Sun, 00 Nov 1994 08:49:37 GMT",
            b"Sun, 06 Nov 1994 24:00:00 GMT",
            b"Sun, 06 Nov 1994 08:60:00 GMT",
            b"Sun, 06 Nov 1994 08:49:61 GMT",
            b"Sun, 06 Nov 1969 08:49:37 GMT",
            b"Sun, 06 Nov 1994 08-49-37 GMT",
            b"Sun, +6 Nov 1994 08:49:37 GMT",
            b"Sun; 06 Nov 1994 08:49:37 GMT",
            b"Sunday, 06-Nov-1994 08:49:37 GMT",
            b"Sonday, 06-Nov-94 08:49:37 GMT",
            b"Sunday, 06 Nov 94 08:49:37 GMT",
            b"Sun Nov 6 08:49:37 1994",
            b"Sun Nov  6 08:49:37 94",
            b"Xyz Nov  6 08:49:37 1994",
            b"Sun Nov  0 08:49:37 1994",
            b",",
            b"Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(
                parse(s, 1_700_000_000),
                None,
                "{:?}",
                core::str::from_utf8(s)
            );
        }
    }
}
