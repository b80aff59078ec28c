//! The listener at its own level: groups in, queries in, the clock in; reports out.

use super::*;

const S: u64 = 1_000_000_000;

fn g(n: u16) -> Ipv6Address {
    Ipv6Address::new(0xff02, 0, 0, 0, 0, 1, 0xff00, n)
}

fn v2(r: Option<Report>) -> std::vec::Vec<(RecordType, Ipv6Address)> {
    match r {
        Some(Report::V2(r)) => r.as_slice().to_vec(),
        other => panic!("not an MLDv2 report: {other:?}"),
    }
}

/// Everything due up to `until`, in order, with the time each went.
fn drain(l: &mut Listener, until: u64) -> std::vec::Vec<(u64, Report)> {
    let mut out = std::vec::Vec::new();
    loop {
        let at = l.deadline();
        if at > until {
            return out;
        }
        while let Some(r) = l.poll(at) {
            out.push((at, r));
        }
        assert!(l.deadline() > at, "the deadline moves on");
    }
}

#[test]
fn a_join_is_reported_at_once_and_once_more_within_a_second() {
    let mut l = Listener::new(7);
    assert_eq!(l.deadline(), u64::MAX, "nothing to say before a group");
    l.listen(&[Some(g(1)), None], 5 * S);
    assert_eq!(l.deadline(), 5 * S);
    let sent = drain(&mut l, 100 * S);
    assert_eq!(sent.len(), ROBUSTNESS as usize);
    assert_eq!(sent[0].0, 5 * S, "at once");
    assert!(
        sent[1].0 > 5 * S && sent[1].0 < 6 * S,
        "within the interval"
    );
    for (_, r) in sent {
        assert_eq!(v2(Some(r)), [(RecordType::ChangeToExclude, g(1))]);
    }
    // The same set again changes nothing.
    l.listen(&[Some(g(1))], 200 * S);
    assert_eq!(l.deadline(), u64::MAX);
}

#[test]
fn a_new_address_joins_its_group_and_an_old_one_leaves_in_one_report() {
    let mut l = Listener::new(7);
    l.listen(&[Some(g(1)), Some(g(2))], 0);
    drain(&mut l, 10 * S);
    l.listen(&[Some(g(1)), Some(g(3))], 20 * S);
    let sent = drain(&mut l, 100 * S);
    assert_eq!(sent.len(), 2);
    for (_, r) in sent {
        assert_eq!(
            v2(Some(r)),
            [
                (RecordType::ChangeToExclude, g(3)),
                (RecordType::ChangeToInclude, g(2))
            ]
        );
    }
    assert_eq!(l.groups().collect::<std::vec::Vec<_>>(), [g(1), g(3)]);
}

#[test]
fn all_nodes_and_duplicates_are_not_reported_and_groups_are_bounded() {
    let mut l = Listener::new(7);
    let mut many = [None; 8];
    many[0] = Some(Ipv6Address::ALL_NODES);
    many[1] = Some(Ipv6Address::new(0xff01, 0, 0, 0, 0, 0, 0, 5)); // interface-local
    for (i, m) in many.iter_mut().enumerate().skip(2) {
        *m = Some(g(i as u16 % 4)); // duplicates
    }
    l.listen(&many, 0);
    let r = v2(l.poll(0));
    assert_eq!(r.len(), 4, "{r:?}");
    assert!(r.iter().all(|(_, a)| *a != Ipv6Address::ALL_NODES));
    // More distinct groups than room: the first MAX_GROUPS are kept, nothing panics.
    let lots: std::vec::Vec<_> = (0..20).map(|i| Some(g(100 + i))).collect();
    l.listen(&lots, S);
    assert_eq!(l.groups().count(), MAX_GROUPS);
    let r = v2(l.poll(S));
    assert!(r.len() <= MAX_RECORDS);
}

#[test]
fn a_general_query_is_answered_with_every_group_within_its_delay() {
    let mut l = Listener::new(99);
    l.listen(&[Some(g(1)), Some(g(2))], 0);
    drain(&mut l, 10 * S);
    l.query(Ipv6Address::UNSPECIFIED, 10_000, false, 20 * S);
    let at = l.deadline();
    assert!(
        (20 * S..30 * S).contains(&at),
        "within Maximum Response Delay"
    );
    assert_eq!(l.poll(at - 1), None, "not before its time");
    assert_eq!(
        v2(l.poll(at)),
        [
            (RecordType::ModeIsExclude, g(1)),
            (RecordType::ModeIsExclude, g(2))
        ]
    );
    assert_eq!(l.poll(at), None);
    assert_eq!(l.deadline(), u64::MAX);
}

#[test]
fn a_group_specific_query_is_answered_for_our_group_only() {
    let mut l = Listener::new(3);
    l.listen(&[Some(g(1)), Some(g(2))], 0);
    drain(&mut l, 10 * S);
    l.query(g(9), 1000, false, 20 * S);
    assert_eq!(l.deadline(), u64::MAX, "not ours: nothing to say");
    l.query(g(2), 1000, false, 20 * S);
    let sent = drain(&mut l, 30 * S);
    assert_eq!(sent.len(), 1);
    assert_eq!(v2(Some(sent[0].1)), [(RecordType::ModeIsExclude, g(2))]);
    // A second query does not push back an answer already due sooner.
    l.query(g(1), 1000, false, 40 * S);
    let first = l.deadline();
    for _ in 0..20 {
        l.query(g(1), 60_000, false, 40 * S);
        assert!(l.deadline() <= first);
    }
}

#[test]
fn after_an_mldv1_query_reports_are_mldv1_one_per_group_until_the_querier_is_gone() {
    let mut l = Listener::new(5);
    l.listen(&[Some(g(1)), Some(g(2))], 0);
    drain(&mut l, 10 * S);
    l.query(Ipv6Address::UNSPECIFIED, 1000, true, 20 * S);
    let sent = drain(&mut l, 30 * S);
    let groups: std::vec::Vec<_> = sent.iter().map(|(_, r)| *r).collect();
    assert_eq!(groups, [Report::V1(g(1)), Report::V1(g(2))]);
    // A join while the MLDv1 querier is present: MLDv1 reports, twice; a leave: nothing.
    l.listen(&[Some(g(1)), Some(g(3))], 40 * S);
    let sent: std::vec::Vec<_> = drain(&mut l, 50 * S).into_iter().map(|x| x.1).collect();
    assert_eq!(sent, [Report::V1(g(3)), Report::V1(g(3))]);
    // 260 s after the last MLDv1 query, MLDv2 again.
    l.listen(&[Some(g(1))], 20 * S + V1_PRESENT_NS);
    let sent = drain(&mut l, 400 * S);
    assert_eq!(
        v2(Some(sent[0].1)),
        [(RecordType::ChangeToInclude, g(3))],
        "{sent:?}"
    );
}
