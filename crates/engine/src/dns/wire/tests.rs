use super::*;
use crate::capture_tests::frames;

/// `dnsmasq.pcap`: dnsmasq 2.89 in a namespace (`--host-record=acme.test,10.53.0.80,
/// 2001:db8:53::80 --host-record=v4only.acme.test,10.53.0.81 --cname=www.acme.test,
/// acme.test --local=/acme.test/ --local-ttl=300`) asked by `dig +noedns +noad` for
/// www.acme.test A and AAAA, nothere.acme.test A and v4only.acme.test AAAA, recorded
/// with `tcpdump -i VETH udp port 53`.
const PCAP: &[u8] = include_bytes!("../../../testdata/dns/dnsmasq.pcap");

/// The UDP payloads of the capture: (from port 53, payload).
fn payloads() -> Vec<(bool, &'static [u8])> {
    frames(PCAP)
        .into_iter()
        .map(|f| {
            let ip = &f[14..];
            let udp = &ip[(ip[0] & 0xF) as usize * 4..];
            let from_server = u16::from_be_bytes([udp[0], udp[1]]) == PORT;
            (from_server, &udp[8..])
        })
        .collect()
}

fn name(s: &str) -> Name {
    Name::new(s).unwrap()
}

fn id_of(m: &[u8]) -> u16 {
    u16::from_be_bytes([m[0], m[1]])
}

fn v4(a: [u8; 4]) -> Ipv6Address {
    Ipv6Address(mapped(a))
}

const V6: Ipv6Address = Ipv6Address([
    0x20, 0x01, 0x0d, 0xb8, 0, 0x53, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80,
]);

#[test]
fn names_are_checked_and_lower_cased() {
    assert_eq!(name("WWW.Example.ORG.").as_str(), "www.example.org");
    assert_eq!(
        name("_acme-challenge.a-b.example").as_str(),
        "_acme-challenge.a-b.example"
    );
    assert_eq!(Name::new(""), Err(NameError::Length));
    assert_eq!(Name::new("."), Err(NameError::Length));
    assert_eq!(Name::new("a..b"), Err(NameError::Length));
    assert_eq!(Name::new(&"a".repeat(64)), Err(NameError::Label));
    assert!(Name::new(&"a".repeat(63)).is_ok());
    let long = vec!["a".repeat(63); 4].join(".");
    assert_eq!(long.len(), 255);
    assert_eq!(Name::new(&long), Err(NameError::Length));
    assert_eq!(Name::new(&long[..253]).map(|n| n.as_str().len()), Ok(253));
    assert_eq!(Name::new("a b.example"), Err(NameError::Character));
    assert_eq!(Name::new("é.example"), Err(NameError::Character));
}

#[test]
fn queries_are_digs_bytes() {
    // dig's queries (+noedns +noad) are what write_query writes for the same ID.
    let queries: Vec<_> = payloads()
        .into_iter()
        .filter(|p| !p.0)
        .map(|p| p.1)
        .collect();
    let asked = [
        ("www.acme.test", Type::A),
        ("www.acme.test", Type::Aaaa),
        ("nothere.acme.test", Type::A),
        ("v4only.acme.test", Type::Aaaa),
    ];
    assert_eq!(queries.len(), asked.len());
    for (q, (n, t)) in queries.iter().zip(asked) {
        let mut buf = [0u8; MAX_MESSAGE];
        let len = write_query(id_of(q), &name(n), t, &mut buf).unwrap();
        assert_eq!(&buf[..len], *q, "{n} {t:?}");
    }
    let mut short = [0u8; 20];
    assert_eq!(
        write_query(1, &name("www.acme.test"), Type::A, &mut short),
        None
    );
}

#[test]
fn dnsmasqs_answers() {
    let answers: Vec<_> = payloads()
        .into_iter()
        .filter(|p| p.0)
        .map(|p| p.1)
        .collect();
    assert_eq!(answers.len(), 4);
    let www = name("www.acme.test");
    // Through the CNAME to acme.test, TTL 300.
    let a = read_response(answers[0], id_of(answers[0]), &www, Type::A).unwrap();
    assert_eq!(a.addresses(), &[v4([10, 53, 0, 80])]);
    assert_eq!(a.ttl, 300);
    let aaaa = read_response(answers[1], id_of(answers[1]), &www, Type::Aaaa).unwrap();
    assert_eq!(aaaa.addresses(), &[V6]);
    // NXDOMAIN and NODATA, with no SOA from dnsmasq: not to be cached.
    let no = name("nothere.acme.test");
    assert_eq!(
        read_response(answers[2], id_of(answers[2]), &no, Type::A),
        Err(Error::NoAddress { ttl: 0 })
    );
    let v4only = name("v4only.acme.test");
    assert_eq!(
        read_response(answers[3], id_of(answers[3]), &v4only, Type::Aaaa),
        Err(Error::NoAddress { ttl: 0 })
    );
    // Another ID, another name, another type: not ours.
    let m = answers[0];
    assert_eq!(
        read_response(m, id_of(m) ^ 1, &www, Type::A),
        Err(Error::NotOurs)
    );
    assert_eq!(
        read_response(m, id_of(m), &name("acme.test"), Type::A),
        Err(Error::NotOurs)
    );
    assert_eq!(
        read_response(m, id_of(m), &www, Type::Aaaa),
        Err(Error::NotOurs)
    );
    // The query itself (QR clear) is not an answer.
    let q = payloads()[0].1;
    assert_eq!(
        read_response(q, id_of(q), &www, Type::A),
        Err(Error::NotOurs)
    );
}

#[test]
fn every_cut_of_a_real_answer_is_refused_without_panic() {
    // Each answer against its own question, so the cuts reach past the question.
    let asked = [
        ("www.acme.test", Type::A),
        ("www.acme.test", Type::Aaaa),
        ("nothere.acme.test", Type::A),
        ("v4only.acme.test", Type::Aaaa),
    ];
    let answers: Vec<_> = payloads()
        .into_iter()
        .filter(|p| p.0)
        .map(|p| p.1)
        .collect();
    for (m, (n, t)) in answers.iter().zip(asked) {
        assert!(read_response(m, id_of(m), &name(n), t) != Err(Error::NotOurs));
        for len in 0..m.len() {
            let r = read_response(&m[..len], id_of(m), &name(n), t);
            assert!(r.is_err(), "{n} {t:?} cut at {len}");
            // Before the question ends nothing can be told: not ours, not an end.
            if len < 12 + n.len() + 2 + 4 {
                assert_eq!(r, Err(Error::NotOurs), "{n} {t:?} cut at {len}");
            }
        }
    }
}

#[test]
fn a_label_with_a_dot_is_no_name_and_pointers_stay_out_of_the_header() {
    // One label "www.example" owning an address: not the two-label name asked.
    let m = Msg::new(OK, 1, 0).record(b"\x0bwww.example\x00", 1, 60, &[6, 6, 6, 6]);
    assert_eq!(m.read(), Err(Error::NoAddress { ttl: 0 }));
    // A pointer into the header.
    let m = Msg::new(OK, 1, 0).record(&[0xC0, 4], 1, 60, &[6, 6, 6, 6]);
    assert_eq!(m.read(), Err(Error::Malformed));
}

/// A response to `id`'s question for www.example A, with these flags and records.
struct Msg(Vec<u8>);

impl Msg {
    fn new(flags: u16, an: u16, ns: u16) -> Msg {
        let mut m = Vec::new();
        m.extend_from_slice(&7u16.to_be_bytes());
        m.extend_from_slice(&flags.to_be_bytes());
        for c in [1, an, ns, 0] {
            m.extend_from_slice(&c.to_be_bytes());
        }
        // The question at offset 12: www.example A IN.
        m.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
        Msg(m)
    }

    /// A record owned by the name at `owner` (wire bytes), with raw data.
    fn record(mut self, owner: &[u8], rtype: u16, ttl: u32, data: &[u8]) -> Msg {
        self.0.extend_from_slice(owner);
        self.0.extend_from_slice(&rtype.to_be_bytes());
        self.0.extend_from_slice(&1u16.to_be_bytes());
        self.0.extend_from_slice(&ttl.to_be_bytes());
        self.0.extend_from_slice(&(data.len() as u16).to_be_bytes());
        self.0.extend_from_slice(data);
        self
    }

    fn read(&self) -> Result<Answer, Error> {
        read_response(&self.0, 7, &name("www.example"), Type::A)
    }
}

/// A pointer to the question's name.
const QNAME: &[u8] = &[0xC0, 12];
const OK: u16 = 0x8180;

#[test]
fn flags_and_rcodes() {
    let a = Msg::new(OK, 1, 0).record(QNAME, 1, 60, &[192, 0, 2, 1]);
    assert_eq!(a.read().unwrap().addresses(), &[v4([192, 0, 2, 1])]);
    assert_eq!(Msg::new(OK | 0x0200, 0, 0).read(), Err(Error::Truncated));
    assert_eq!(Msg::new(0x8182, 0, 0).read(), Err(Error::Server(2)));
    assert_eq!(Msg::new(0x8185, 0, 0).read(), Err(Error::Server(5)));
    // Another opcode (NOTIFY): not an answer to us.
    assert_eq!(Msg::new(0xA180, 0, 0).read(), Err(Error::NotOurs));
    // Two questions: not ours.
    let mut two = Msg::new(OK, 0, 0);
    two.0[5] = 2;
    assert_eq!(two.read(), Err(Error::NotOurs));
}

#[test]
fn only_the_names_chain_gives_addresses() {
    // An address for another name is not ours to take.
    let other = Msg::new(OK, 1, 0).record(b"\x04evil\x07example\x00", 1, 60, &[6, 6, 6, 6]);
    assert_eq!(other.read(), Err(Error::NoAddress { ttl: 0 }));
    // CNAME www -> cdn (written after the question), the address of cdn: taken, in any
    // order, with the least TTL.
    let cdn_at = 12 + 17 + 12; // after the question and the CNAME's fixed part
    let m = Msg::new(OK, 2, 0)
        .record(&[0xC0, cdn_at as u8 + 3], 1, 30, &[198, 51, 100, 7])
        .record(QNAME, 5, 100, b"\x03cdn\x07example\x00");
    // The A record's owner points into the CNAME's data, which comes after it: a forward
    // pointer, refused.
    assert_eq!(m.read(), Err(Error::Malformed));
    let m = Msg::new(OK, 2, 0)
        .record(QNAME, 5, 100, b"\x03cdn\x07example\x00")
        .record(&[0xC0, cdn_at as u8], 1, 30, &[198, 51, 100, 7]);
    let a = m.read().unwrap();
    assert_eq!(a.addresses(), &[v4([198, 51, 100, 7])]);
    assert_eq!(a.ttl, 30);
    // A chain that loops back on itself ends at the bound.
    let m = Msg::new(OK, 2, 0)
        .record(QNAME, 5, 100, b"\x03cdn\x07example\x00")
        .record(&[0xC0, cdn_at as u8], 5, 100, b"\x03www\x07example\x00");
    assert_eq!(m.read(), Err(Error::Malformed));
}

#[test]
fn addresses_are_bounded_and_unique_and_ttls_sane() {
    let mut m = Msg::new(OK, 6, 0);
    for i in [1, 2, 2, 3, 4, 5] {
        m = m.record(QNAME, 1, 60 + i as u32, &[192, 0, 2, i]);
    }
    let a = m.read().unwrap();
    assert_eq!(a.count, MAX_ADDRS);
    assert_eq!(a.addresses()[1], v4([192, 0, 2, 2]));
    assert_eq!(a.addresses()[2], v4([192, 0, 2, 3]));
    assert_eq!(a.ttl, 61);
    // A TTL with the top bit set is 0 (RFC 2181 §8).
    let m = Msg::new(OK, 1, 0).record(QNAME, 1, 0x8000_0000, &[192, 0, 2, 1]);
    assert_eq!(m.read().unwrap().ttl, 0);
    // An A record of the wrong length.
    let m = Msg::new(OK, 1, 0).record(QNAME, 1, 60, &[192, 0, 2, 1, 0]);
    assert_eq!(m.read(), Err(Error::Malformed));
    // Another class (CH) is skipped.
    let mut m = Msg::new(OK, 1, 0).record(QNAME, 1, 60, &[192, 0, 2, 1]);
    let class_at = m.0.len() - 4 - 2 - 4 - 2;
    m.0[class_at + 1] = 3;
    assert_eq!(m.read(), Err(Error::NoAddress { ttl: 0 }));
}

#[test]
fn negative_ttl_is_the_soas() {
    // NXDOMAIN with example's SOA: TTL 900, MINIMUM 60 -> 60.
    let mut soa = Vec::new();
    soa.extend_from_slice(b"\x02ns\x07example\x00\x0ahostmaster\xC0\x10");
    for v in [1u32, 7200, 900, 1_209_600, 60] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    let m = Msg::new(0x8183, 0, 1).record(&[0xC0, 16], 6, 900, &soa);
    assert_eq!(m.read(), Err(Error::NoAddress { ttl: 60 }));
    // The SOA record's own TTL when it is the lesser (RFC 2308 §5).
    let m = Msg::new(0x8183, 0, 1).record(&[0xC0, 16], 6, 30, &soa);
    assert_eq!(m.read(), Err(Error::NoAddress { ttl: 30 }));
    // SOA data of the wrong length.
    let m = Msg::new(0x8183, 0, 1).record(&[0xC0, 16], 6, 900, &soa[..soa.len() - 1]);
    assert_eq!(m.read(), Err(Error::Malformed));
}

#[test]
fn hostile_names() {
    // A pointer to itself, a pointer forward, a label running off the end, a reserved
    // label type, a name longer than 255 octets made of pointers.
    for owner in [&[0xC0u8, 29][..], &[0xC0, 200], &[0x3F, b'a'], &[0x80, 1]] {
        let m = Msg::new(OK, 1, 0).record(owner, 1, 60, &[1, 2, 3, 4]);
        assert_eq!(m.read(), Err(Error::Malformed), "{owner:?}");
    }
    // A TXT record whose data is labels of 63 octets, each followed by a pointer to the
    // one before; an A record owned by the last: a name past 255 octets.
    let mut m = Msg::new(OK, 2, 0);
    let data_at = m.0.len() + 2 + 10;
    let mut data = Vec::new();
    let mut prev: Option<usize> = None;
    for _ in 0..6 {
        let at = data_at + data.len();
        data.push(63);
        data.extend_from_slice(&[b'a'; 63]);
        match prev {
            Some(p) => data.extend_from_slice(&[0xC0 | (p >> 8) as u8, p as u8]),
            None => data.push(0),
        }
        prev = Some(at);
    }
    let last = prev.unwrap();
    m = m.record(QNAME, 16, 60, &data);
    let m = m.record(&[0xC0 | (last >> 8) as u8, last as u8], 1, 60, &[1; 4]);
    assert_eq!(m.read(), Err(Error::Malformed));
    // Its first label alone is a fine name (the same shape, one link).
    let mut ok = Msg::new(OK, 2, 0);
    let mut data = vec![63];
    data.extend_from_slice(&[b'a'; 63]);
    data.push(0);
    ok = ok.record(QNAME, 16, 60, &data);
    let ok = ok.record(&[0xC0, data_at as u8], 1, 60, &[1; 4]);
    assert_eq!(ok.read(), Err(Error::NoAddress { ttl: 0 }));
}
