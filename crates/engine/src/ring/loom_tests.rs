//! Loom model of the ring: every interleaving of one producer and one consumer thread
//! (bounded by loom's preemption bound) must deliver each value once, in order, with the
//! slot contents the producer wrote, and loom must see no data race on a slot.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p bareweb-engine --lib ring::loom_tests`
//! (`cargo xtask test` does, in its own target directory).

use loom::thread;

use super::*;

/// Two slots, three values: the producer must wrap and wait for the consumer's release.
#[test]
fn values_arrive_once_in_order_across_wrap() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let (mut p, mut c) = channel::<[usize; 2]>(2);
        let t = thread::spawn(move || {
            let mut i = 0;
            while i < 3 {
                let wrote = p.with_slot(|s| *s = [i, i + 100]).is_some();
                if wrote {
                    assert!(p.commit());
                    i += 1;
                } else {
                    thread::yield_now();
                }
            }
        });
        let mut next = 0;
        while next < 3 {
            match c.with_front(|s| *s) {
                Some(v) => {
                    assert_eq!(v, [next, next + 100]);
                    assert!(c.pop());
                    next += 1;
                }
                None => thread::yield_now(),
            }
        }
        t.join().unwrap();
        assert!(c.with_front(|_| ()).is_none());
    });
}

/// `take` writes the slot on the consumer side; the producer's next write of that slot
/// must still be ordered after it.
#[test]
fn take_then_reuse_is_race_free() {
    loom::model(|| {
        let (mut p, mut c) = channel::<usize>(2);
        let t = thread::spawn(move || {
            let mut sent = 0;
            while sent < 3 {
                if p.push(sent + 1).is_ok() {
                    sent += 1;
                } else {
                    thread::yield_now();
                }
            }
        });
        let mut got = 0;
        while got < 3 {
            match c.take() {
                Some(v) => {
                    assert_eq!(v, got + 1);
                    got += 1;
                }
                None => thread::yield_now(),
            }
        }
        t.join().unwrap();
    });
}

/// The doze protocol loses no wake-up: the sleeper announces, re-checks the ring and
/// "sleeps" (ends) only when it is empty; the producer pushes and nudges. In every
/// interleaving either the sleeper saw the value or the bell rang.
#[test]
fn doze_loses_no_wakeup() {
    use loom::sync::atomic::AtomicBool;

    loom::model(|| {
        let rung = Arc::new(AtomicBool::new(false));
        let r = rung.clone();
        let doze = Doze::new(alloc::boxed::Box::new(move || {
            r.store(true, Ordering::SeqCst)
        }));
        let (mut p, mut c) = channel::<usize>(2);
        let nudger = doze.clone();
        let t = thread::spawn(move || {
            assert!(p.push(7).is_ok());
            nudger.nudge();
        });
        doze.announce();
        let saw = c.with_front(|v| *v).is_some();
        if saw {
            doze.awake();
        }
        t.join().unwrap();
        assert!(
            saw || rung.load(Ordering::SeqCst),
            "the sleeper would miss the value"
        );
    });
}
