//! The load generator's HTTP response reader (bareweb-loadgen `http`) on arbitrary bytes,
//! fed in pieces of every size the first byte picks, with and without end of file: it
//! must return a result, never panic, and never report more body than it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&piece, rest)) = data.split_first() else {
        return;
    };
    for eof in [false, true] {
        if let Ok((_, body, left)) = bareweb_loadgen::http::parse_all(rest, piece as usize + 1, eof) {
            assert!(body.len() + left <= rest.len());
        }
    }
});
