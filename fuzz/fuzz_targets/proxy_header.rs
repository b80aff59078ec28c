//! The PROXY protocol header parser (`wire::proxy`) over arbitrary bytes: never a panic;
//! a whole header is no longer than the input nor than the specification's bounds, and
//! every shorter prefix of it is `Partial` (what lets the server wait for the rest of a
//! split header); the version 2 view's accessors and TLV walk hold on anything
//! `new_checked` admits. Seeds: HAProxy 2.6's headers (crates/engine/testdata/proxy/).
#![no_main]

use bareweb_engine::wire::proxy::{self, Error, Packet, Parsed, V1_MAX, V2_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match proxy::parse(data) {
        Parsed::Complete { repr, len } => {
            assert!(len <= data.len() && len <= V2_MAX.max(V1_MAX));
            assert!(proxy::has_signature(data));
            for cut in [0, len / 2, len - 1] {
                assert_eq!(proxy::parse(&data[..cut]), Parsed::Partial, "cut {cut}");
            }
            assert_eq!(
                proxy::parse(&data[..len]),
                Parsed::Complete { repr, len },
                "the header alone"
            );
        }
        Parsed::Partial => assert!(data.len() < V2_MAX && proxy::has_signature(data) || data.is_empty()),
        Parsed::Error(Error::Missing) => assert!(!proxy::has_signature(data)),
        Parsed::Error(_) => assert!(proxy::has_signature(data)),
    }
    if let Ok(p) = Packet::new_checked(data) {
        let _ = (p.command(), p.family(), p.payload().len(), p.repr());
        assert!(p.header_len() <= V2_MAX);
        for t in p.tlvs() {
            if let Ok(t) = t {
                assert!(t.value.len() <= p.payload().len());
            }
        }
    }
});
