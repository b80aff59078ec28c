//! Ring tests: fixed cases, a property test against a `VecDeque` model, and a two-thread
//! run that checks order and content under real concurrency.

use std::collections::VecDeque;

use proptest::prelude::*;

use super::*;

#[test]
fn capacity_rounds_up_and_fills_exactly() {
    let (mut p, mut c) = channel::<u32>(3);
    assert_eq!(p.capacity(), 4);
    for i in 0..4 {
        assert!(p.push(i).is_ok());
    }
    assert_eq!(p.push(9), Err(9), "full ring gives the value back");
    assert_eq!(p.high_water(), 4);
    assert_eq!(c.take(), Some(0));
    assert!(p.push(4).is_ok(), "one released slot is reusable");
    assert_eq!(
        (1..5).map(|_| c.take().unwrap()).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_eq!(c.take(), None);
    assert!(!c.pop());
}

#[test]
fn commit_without_slot_does_nothing() {
    let (mut p, mut c) = channel::<u8>(2);
    assert!(!p.commit());
    assert_eq!(c.available(), 0);
    *p.slot().unwrap() = 7;
    assert!(p.commit());
    assert!(!p.commit(), "a slot is committed once");
    assert_eq!(c.peek(0), None, "not counted by available yet");
    assert_eq!(c.available(), 1);
    assert_eq!(c.peek(0), Some(&7));
    assert_eq!(c.peek(1), None);
}

#[test]
fn slot_is_reused_in_place() {
    // Slots keep their contents: a producer writing a prefix sees old bytes after it.
    let (mut p, mut c) = channel::<[u8; 4]>(2);
    *p.slot().unwrap() = [1, 2, 3, 4];
    p.commit();
    *p.slot().unwrap() = [5, 6, 7, 8];
    p.commit();
    assert!(c.pop() && c.pop());
    let s = p.slot().unwrap();
    assert_eq!(*s, [1, 2, 3, 4]);
    s[0] = 9;
    p.commit();
    c.available();
    assert_eq!(c.peek(0), Some(&[9, 2, 3, 4]));
}

#[test]
fn gauge_sees_length_and_high_water() {
    let (mut p, mut c) = channel::<u64>(8);
    let g = c.gauge();
    for i in 0..5 {
        p.push(i).unwrap();
    }
    assert_eq!(g.len(), 5);
    for _ in 0..3 {
        c.pop();
    }
    assert_eq!(g.len(), 2);
    assert_eq!(g.high_water(), 5);
    assert_eq!(g.capacity(), 8);
}

#[derive(Debug, Clone)]
enum Op {
    Push(u16),
    Pop,
    PeekAt(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<u16>().prop_map(Op::Push),
        Just(Op::Pop),
        (0usize..10).prop_map(Op::PeekAt),
    ]
}

proptest! {
    /// Any sequence of operations behaves exactly like a bounded `VecDeque`.
    #[test]
    fn behaves_like_a_bounded_deque(cap in 1usize..9, ops in proptest::collection::vec(op(), 0..200)) {
        let (mut p, mut c) = channel::<u16>(cap);
        let cap = p.capacity();
        let mut model: VecDeque<u16> = VecDeque::new();
        let mut high = 0;
        for o in ops {
            match o {
                Op::Push(v) => {
                    let r = p.push(v);
                    if model.len() < cap {
                        prop_assert_eq!(r, Ok(()));
                        model.push_back(v);
                    } else {
                        prop_assert_eq!(r, Err(v));
                    }
                }
                Op::Pop => prop_assert_eq!(c.take(), model.pop_front()),
                Op::PeekAt(i) => {
                    c.available();
                    prop_assert_eq!(c.peek(i).copied(), model.get(i).copied());
                }
            }
            high = high.max(model.len());
            prop_assert_eq!(p.len(), model.len());
            prop_assert_eq!(c.available(), model.len());
            prop_assert_eq!(p.high_water(), high);
        }
    }
}

#[test]
fn two_threads_keep_order_and_content() {
    const N: u64 = 200_000;
    let (mut p, mut c) = channel::<[u64; 4]>(64);
    let producer = std::thread::spawn(move || {
        let mut i = 0;
        while i < N {
            if let Some(s) = p.slot() {
                *s = [i, i ^ 0x5555, i.wrapping_mul(3), !i];
                p.commit();
                i += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        p.high_water()
    });
    let mut next = 0;
    while next < N {
        c.available();
        match c.peek(0) {
            Some(v) => {
                assert_eq!(*v, [next, next ^ 0x5555, next.wrapping_mul(3), !next]);
                c.pop();
                next += 1;
            }
            None => std::hint::spin_loop(),
        }
    }
    let high = producer.join().unwrap();
    assert!((1..=64).contains(&high));
    assert_eq!(c.available(), 0);
}
