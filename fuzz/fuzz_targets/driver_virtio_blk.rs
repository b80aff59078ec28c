//! The virtio-blk driver against a device that lies (drivers::fake's FakeVirtio as a block
//! device behind FakeHal): the input is a script of driver requests (reads, writes,
//! flushes at any sector and length) and, while each waits, device actions (served
//! honestly, a used entry with any id and length, any status byte, nothing at all). The
//! driver never panics and never gives the device memory not its own (the fake checks
//! each address); a request refused before it reaches the device leaves the device
//! untouched; after a timeout (or once it said Stopped) the disk takes no request; while
//! the device has been honest, what is written reads back.
#![no_main]

#[path = "lying/mod.rs"]
mod lying;

use bareweb_kernel::drivers::fake::{FakeHal, FakeVirtio};
use bareweb_kernel::drivers::virtio_blk::{BlkError, VirtioBlk};
use libfuzzer_sys::fuzz_target;
use lying::{Script, MAX_STEPS};

const F_RO: u64 = 1 << 5;
const F_FLUSH: u64 = 1 << 9;

fuzz_target!(|data: &[u8]| {
    let mut s = Script(data);
    let f = s.u8();
    let offered = if f & 1 != 0 { F_RO } else { 0 } | if f & 2 != 0 { F_FLUSH } else { 0 };
    let sectors = u64::from(s.u8() % 32 + 1);
    let max = [4u16, 8, 256][usize::from(f >> 2) % 3];
    let Ok(mut blk) = VirtioBlk::new::<FakeHal>(FakeVirtio::blk(sectors, offered, max)) else {
        return;
    };
    let mut disk = vec![0u8; sectors as usize * 512];
    let mut honest = true;
    let mut stopped = false;
    for _ in 0..MAX_STEPS {
        if s.done() {
            break;
        }
        let op = s.u8();
        let sector = u64::from(s.u8()) % (sectors + 2);
        let len = 512 * usize::from(s.u8() % 4);
        // The device's behaviour while this request waits.
        let act = s.u8();
        let (id, used, status) = (u32::from(s.u8()), s.u32(), s.u8());
        let mut looks = 0;
        let mut lied = false;
        let wait = |dev: &mut FakeVirtio| {
            looks += 1;
            match act % 4 {
                0 | 1 => {
                    dev.serve_blk(&mut disk);
                }
                2 => {
                    let ring = dev.ring(0);
                    if let Some((head, bufs)) = ring.pop_avail() {
                        bareweb_kernel::drivers::fake::FakeHal::write(
                            bufs[bufs.len() - 1].addr,
                            &[status],
                        );
                        ring.push_used(if act & 4 != 0 { id } else { head as u32 }, used);
                        lied = true;
                    }
                }
                _ => {}
            }
            looks < 3
        };
        let pattern: Vec<u8> = (0..len).map(|i| (i as u8) ^ op).collect();
        let r = match op % 3 {
            0 => {
                let mut buf = vec![0u8; len];
                let r = blk.read(sector, &mut buf, wait);
                if r.is_ok() && honest && !lied {
                    let at = sector as usize * 512;
                    assert_eq!(&buf[..], &disk[at..at + len], "read back what the disk holds");
                }
                r
            }
            1 => blk.write(sector, &pattern, wait),
            _ => blk.flush(wait),
        };
        if lied {
            honest = false;
        }
        if stopped {
            assert!(
                matches!(r, Err(BlkError::Stopped) | Err(BlkError::Range) | Err(BlkError::ReadOnly))
                    || (op % 3 == 2 && r.is_ok()),
                "a stopped disk took a request: {r:?}"
            );
        }
        // A timeout stops the disk (as does another request's entry, which shows as a
        // lie followed by Stopped).
        if matches!(r, Err(BlkError::Timeout) | Err(BlkError::Stopped)) {
            stopped = true;
        }
    }
});
