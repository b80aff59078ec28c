//! The e1000 (82540EM) driver against a device that lies (drivers::fake's register file
//! behind FakeHal, legacy descriptors): see `lying/e1000.rs` for the script. The driver
//! never panics, never gives the device memory that is not its own, never lends a frame
//! longer than its buffer or a buffer twice, and afterwards still receives an honest
//! frame and sends one.
#![no_main]

#[path = "lying/mod.rs"]
mod lying;

use bareweb_kernel::drivers::e1000::{Regs, E1000};
use bareweb_kernel::drivers::fake::FakeHal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut s = lying::Script(data);
    let mut dev = lying::e1000::device([2, 0, 0, 0, 0, 2]);
    // A thread plays the reset; a NoReset (it had not run yet) is tried again.
    let nic = dev.bring_up(|m| E1000::<FakeHal>::bring_up(Regs::new(m).unwrap()));
    lying::e1000::play(&mut s, &mut dev, vec![nic.unwrap()], false);
});
