//! The igb (82576) driver against a device that lies: advanced one-buffer descriptors (a
//! write-back overwrites the buffer address), one to four queue pairs with RSS, TCP
//! segmentation through advanced context descriptors, MSI-X causes (EICR bit k for queue
//! k) routed for some sides; the script is `lying/e1000.rs`'s, with arming and disarming.
//! The driver never panics, never gives the device memory that is not its own, never
//! lends a frame longer than its buffer or a buffer twice, never arms (halts) with a frame
//! waiting, and afterwards each queue still receives an honest frame and sends one.
#![no_main]

#[path = "lying/mod.rs"]
mod lying;

use bareweb_kernel::drivers::fake::FakeHal;
use bareweb_kernel::drivers::igb::Igb;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut s = lying::Script(data);
    // Bits 0-1: pairs less one; 2: offloads off; 3-6: MSI-X table entry k could not be
    // aimed; 7: no MSI-X at all (every side polls or wakes by timer).
    let setup = s.u8();
    let pairs = 1 + (setup & 3) as usize;
    let mut dev = lying::e1000::device([2, 0, 0, 0, 0, 4]);
    let mut nics = dev
        .bring_up(|m| Igb::<FakeHal>::bring_up(m, pairs))
        .unwrap();
    assert_eq!(nics.len(), pairs);
    for n in &mut nics {
        n.set_offload(setup & 4 == 0);
    }
    if setup & 0x80 == 0 {
        let m = dev.mmio();
        Igb::route_msix(&m, &mut nics, |k| setup >> (3 + k) & 1 == 0).unwrap();
    }
    lying::e1000::play(&mut s, &mut dev, nics, true);
});
