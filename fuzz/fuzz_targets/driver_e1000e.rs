//! The e1000e (82574) driver against a device that lies: extended descriptors (a
//! write-back overwrites the buffer address), one or two queue pairs; the script is
//! `lying/e1000.rs`'s. The driver never panics, never gives the device memory that is not
//! its own, never lends a frame longer than its buffer or a buffer twice, and afterwards
//! each queue still receives an honest frame and sends one.
#![no_main]

#[path = "lying/mod.rs"]
mod lying;

use bareweb_kernel::drivers::e1000e::E1000e;
use bareweb_kernel::drivers::fake::FakeHal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut s = lying::Script(data);
    let pairs = 1 + (s.u8() & 1) as usize;
    let mut dev = lying::e1000::device([2, 0, 0, 0, 0, 3]);
    let nics = dev.bring_up(|m| E1000e::<FakeHal>::bring_up(m, pairs));
    lying::e1000::play(&mut s, &mut dev, nics.unwrap(), false);
});
