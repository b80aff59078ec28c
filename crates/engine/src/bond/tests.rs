use super::*;

fn macs(n: usize) -> Vec<EthernetAddress> {
    (0..n)
        .map(|k| EthernetAddress([2, 0, 0, 0, 0, 0x10 + k as u8]))
        .collect()
}

#[test]
fn a_set_needs_distinct_macs_and_two_nics_to_bond() {
    assert_eq!(
        Bond::new(Mode::Spread, Policy::PerClient, &macs(1), 100, 1).err(),
        Some(BondError::NeedsTwo(Mode::Spread))
    );
    assert_eq!(
        Bond::new(Mode::Off, Policy::PerClient, &[], 100, 1).err(),
        Some(BondError::Count(0))
    );
    assert_eq!(
        Bond::new(Mode::Split, Policy::PerClient, &macs(5), 100, 1).err(),
        Some(BondError::Count(5))
    );
    let m = macs(1)[0];
    assert_eq!(
        Bond::new(Mode::Split, Policy::PerClient, &[m, m], 100, 1).err(),
        Some(BondError::SameMac(m))
    );
    // `off` with two NICs given uses the first only.
    let b = Bond::new(Mode::Off, Policy::PerClient, &macs(2), 100, 1).unwrap();
    assert_eq!(b.count(), 1);
    assert_eq!(b.senders(b.links()), 0b1);
    let msg = BondError::NeedsTwo(Mode::Split).to_string();
    assert!(msg.contains("--bond split needs two NICs"), "{msg}");
}

#[test]
fn the_word_round_trips_and_senders_follow_the_mode() {
    let l = Links {
        receive: 2,
        up: 0b0111,
        announce: 200,
        epoch: 255,
    };
    assert_eq!(Links::unpack(l.pack()), l);
    assert_eq!(senders(Mode::Spread, 3, l), 0b111);
    assert_eq!(senders(Mode::Split, 3, l), 0b011);
    assert_eq!(senders(Mode::Off, 3, l), 0b100);
    // Bits past the set never send.
    let l = Links { up: 0xFF, ..l };
    assert_eq!(senders(Mode::Spread, 3, l), 0b111);
    assert_eq!(all(0), 0);
    assert_eq!(all(8), 0xFF);
}

#[test]
fn counts_are_summed_over_cores_and_rendered() {
    let b = Bond::new(Mode::Spread, Policy::Size, &macs(2), 50, 2).unwrap();
    let mut c = [NicCounts::default(); 2];
    c[1].tx_frames = 3;
    c[1].tx_bytes = 4000;
    c[1].conns = 9; // not this part's: ignored
    b.publish_counts(0, Part::Tx, &c);
    b.publish_counts(1, Part::Tx, &c);
    c[0].conns = 2;
    c[0].assigned = 5;
    b.publish_counts(1, Part::Server, &c);
    b.publish_counts(7, Part::Server, &c); // no such core: ignored
    let n1 = b.counts(1);
    assert_eq!((n1.tx_frames, n1.tx_bytes, n1.conns), (6, 8000, 9));
    let n0 = b.counts(0);
    assert_eq!((n0.conns, n0.assigned, n0.tx_frames), (2, 5, 0));
    let mut m = Monitor::new(2);
    m.observe(0b10);
    b.count_events(&monitor::Report {
        down: 0b01,
        elected: Some((0, 1)),
        ..Default::default()
    });
    b.publish(m.links());
    let mut s = String::new();
    b.write_json(&mut s).unwrap();
    assert!(s.starts_with(
        "{\"mode\":\"spread\",\"policy\":\"size\",\"monitor_ms\":50,\"receive\":1,\"elections\":1,\"nics\":["
    ), "{s}");
    assert!(s.contains("{\"nic\":0,\"mac\":\"02:00:00:00:00:10\",\"link\":\"down\",\"role\":\"idle\",\"link_downs\":1,\"link_ups\":0,\"tx_frames\":0"), "{s}");
    assert!(
        s.contains(
            "\"nic\":1,\"mac\":\"02:00:00:00:00:11\",\"link\":\"up\",\"role\":\"receive+send\""
        ),
        "{s}"
    );
    assert!(s.ends_with("\"garps\":0}]}"), "{s}");
}
