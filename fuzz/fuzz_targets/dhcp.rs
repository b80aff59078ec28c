//! The DHCP client fed anything: each input is a sequence of events (a tag octet: even =
//! a reply whose 2-octet length follows — with bit 1 set its xid is made the client's
//! current one and with bit 2 its chaddr ours, so the fuzzer reaches every state; bit 3
//! hands it over as a whole frame instead — odd = the clock moves on by tag² seconds and
//! the timeout runs). Nothing may panic; a lease taken is a usable address with a non-zero
//! lease; a lease is held exactly in BOUND, RENEWING and REBINDING; an address is lost
//! only if one was held; the deadline never lies in the past after a timeout.
#![no_main]

use bareweb_engine::dhcp::client::usable;
use bareweb_engine::dhcp::{frame, Change, Client, State, Timing};
use bareweb_engine::wire::EthernetAddress;
use libfuzzer_sys::fuzz_target;

const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 7]);

fuzz_target!(|data: &[u8]| {
    let mut c = Client::new(MAC, 0x1234_5678, Timing::default());
    let mut now = 0u64;
    let mut rest = data;
    let mut buf = [0u8; frame::FRAME_LEN];
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        let held = c.lease().is_some();
        let a = if tag % 2 == 0 {
            if rest.len() < 2 {
                break;
            }
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            let mut msg = rest[2..2 + len].to_vec();
            rest = &rest[2 + len..];
            if tag & 8 != 0 {
                match c.on_frame(&msg, now) {
                    Some(a) => a,
                    None => continue,
                }
            } else {
                if tag & 2 != 0 && msg.len() >= 8 {
                    msg[4..8].copy_from_slice(&c.xid().to_be_bytes());
                }
                if tag & 4 != 0 && msg.len() >= 34 {
                    msg[28..34].copy_from_slice(&MAC.0);
                }
                c.on_reply(&msg, EthernetAddress([2, 0, 0, 0, 0, 1]), now)
            }
        } else {
            now = now.saturating_add(u64::from(tag) * u64::from(tag) * 1_000_000_000);
            let a = c.on_timeout(now);
            assert!(c.deadline() >= now, "a deadline in the past");
            a
        };
        if let Some(t) = a.send {
            assert_eq!(c.frame(&t, &mut buf), frame::FRAME_LEN);
        }
        match a.change {
            Some(Change::Acquired(l)) | Some(Change::Renewed(l)) => {
                assert!(usable(l.address, l.prefix_len), "{l:?}");
                assert!(l.lease_s > 0 && l.t1_s <= l.t2_s && l.t2_s <= l.lease_s, "{l:?}");
            }
            Some(Change::Lost(..)) => assert!(held, "lost an address never held"),
            None => {}
        }
        let bound = matches!(c.state(), State::Bound | State::Renewing | State::Rebinding);
        assert_eq!(c.lease().is_some(), bound);
    }
});
