//! The kernel command line: any text parses to settings within their ranges, never panics.
#![no_main]

use bareweb_kernel::cmdline;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let mut complaints = 0usize;
    let s = cmdline::parse(line, |_| complaints += 1);
    assert!(s.prefix <= 32 && s.port != 0 && s.tcbs >= 1 && s.tcbs <= 1 << 20);
    assert!(complaints <= line.split_ascii_whitespace().count());
    // Parsing the same line over its own result changes nothing.
    assert_eq!(cmdline::parse_over(s, line, |_| {}), s);
});
