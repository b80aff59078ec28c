//! The access log's lines from hostile request bytes: a request head (and its first line)
//! of arbitrary bytes, formatted in every `LogFormat`. Each is one line with no control
//! character, shorter than `LINE_MAX`; the JSON one parses as one object whose
//! `user_agent` is the header's text, its invalid UTF-8 replaced.
#![no_main]

use bareweb_engine::http::log::{AccessRecord, LogFormat, LINE_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line_end = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let r = AccessRecord {
        peer: core::net::IpAddr::from([10, 0, 0, 1]),
        request_line: &data[..line_end],
        head: data,
        status: 200,
        bytes: data.len(),
        unix_secs: u64::from(data.first().copied().unwrap_or(0)) << 30,
        duration_us: data.len() as u64,
    };
    for format in [LogFormat::Common, LogFormat::Combined, LogFormat::Json] {
        let line = r.line(format).to_string();
        assert!(line.len() < LINE_MAX);
        assert!(line.chars().all(|c| !c.is_control()), "{line:?}");
        if format == LogFormat::Json {
            let v: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
            assert!(v.is_object());
            if let Some(ua) = r.header(b"user-agent") {
                let want = String::from_utf8_lossy(&ua[..ua.len().min(2048)]);
                assert_eq!(v["user_agent"].as_str(), Some(&*want));
            }
        }
    }
});
