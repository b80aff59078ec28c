//! The driver against `drivers::fake`'s virtio-blk device: bring-up, reads and writes
//! byte-exact, bounds, flush, and answers no honest device gives.

use super::super::fake::{FakeHal, FakeVirtio};
use super::*;

const SECTORS: u64 = 64;

fn up(offered: u64) -> VirtioBlk<FakeVirtio> {
    VirtioBlk::new::<FakeHal>(FakeVirtio::blk(SECTORS, offered, 256)).unwrap()
}

/// A wait that lets the device serve against `disk`, for at most a few looks.
fn serving(disk: &mut [u8]) -> impl FnMut(&mut FakeVirtio) -> bool + '_ {
    let mut looks = 0;
    move |dev| {
        dev.serve_blk(disk);
        looks += 1;
        looks < 4
    }
}

#[test]
fn brought_up_with_its_capacity_and_features() {
    let mut blk = up(F_FLUSH);
    assert_eq!(blk.capacity(), SECTORS * 512);
    assert!(!blk.read_only());
    let dev = &mut blk.transport;
    assert_eq!(
        dev.status,
        S_ACKNOWLEDGE | S_DRIVER | S_FEATURES_OK | S_DRIVER_OK
    );
    assert_eq!(dev.accepted, F_FLUSH | virtio::F_VERSION_1);
    assert_eq!(
        dev.queues.iter().map(|q| (q.0, q.1)).collect::<Vec<_>>(),
        [(0, 8)]
    );
    // A queue too small for a request's three descriptors is refused.
    let small = VirtioBlk::new::<FakeHal>(FakeVirtio::blk(SECTORS, 0, 2));
    assert!(matches!(small, Err(BlkError::Device(_))));
}

#[test]
fn writes_then_reads_byte_exact_and_flushes() {
    let mut blk = up(F_FLUSH);
    let mut disk = vec![0u8; SECTORS as usize * 512];
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    blk.write(8, &data, serving(&mut disk)).unwrap();
    assert_eq!(&disk[8 * 512..8 * 512 + 4096], &data[..]);
    let mut back = vec![0u8; 4096];
    blk.read(8, &mut back, serving(&mut disk)).unwrap();
    assert_eq!(back, data);
    // The last sector, and a flush the device counts.
    blk.write(SECTORS - 1, &[0xAB; 512], serving(&mut disk))
        .unwrap();
    let mut flushes = 0;
    blk.flush(|dev| {
        flushes += dev.serve_blk(&mut disk).1;
        true
    })
    .unwrap();
    assert_eq!(flushes, 1);
    assert_eq!(disk[disk.len() - 1], 0xAB);
    // Without FLUSH offered, flush asks nothing of the device.
    let mut plain = up(0);
    plain.flush(|_| panic!("no request expected")).unwrap();
}

#[test]
fn requests_out_of_bounds_or_on_a_read_only_disk_are_refused() {
    let mut blk = up(0);
    let mut disk = vec![0u8; SECTORS as usize * 512];
    let mut buf = vec![0u8; 1024];
    assert_eq!(
        blk.read(SECTORS - 1, &mut buf, serving(&mut disk)),
        Err(BlkError::Range)
    );
    assert_eq!(
        blk.read(u64::MAX, &mut buf[..512], serving(&mut disk)),
        Err(BlkError::Range)
    );
    assert_eq!(
        blk.read(0, &mut buf[..100], serving(&mut disk)),
        Err(BlkError::Range)
    );
    assert_eq!(
        blk.read(0, &mut [], serving(&mut disk)),
        Err(BlkError::Range)
    );
    let big = vec![0u8; MAX_IO + 512];
    assert_eq!(blk.write(0, &big, serving(&mut disk)), Err(BlkError::Range));
    let mut ro = up(F_RO);
    assert!(ro.read_only());
    assert_eq!(
        ro.write(0, &[0; 512], serving(&mut disk)),
        Err(BlkError::ReadOnly)
    );
    ro.read(0, &mut buf[..512], serving(&mut disk)).unwrap();
}

#[test]
fn a_device_that_errs_lies_or_never_answers() {
    let mut disk = vec![0u8; SECTORS as usize * 512];
    // An I/O error status.
    let mut blk = up(0);
    let st = blk.write(0, &[1; 512], |dev| {
        let ring = dev.ring(0);
        if let Some((head, bufs)) = ring.pop_avail() {
            FakeHal::write(bufs[bufs.len() - 1].addr, &[1]);
            ring.push_used(head as u32, 1);
        }
        true
    });
    assert_eq!(st, Err(BlkError::Status(1)));
    // Another request's id: a lie after which the disk takes nothing more (ours may still
    // be the device's).
    let st = blk.write(0, &[1; 512], |dev| {
        let ring = dev.ring(0);
        if let Some((head, _)) = ring.pop_avail() {
            ring.push_used(head as u32 + 5, 1);
        }
        true
    });
    assert_eq!(st, Err(BlkError::Lied));
    let mut buf = [0u8; 512];
    assert_eq!(
        blk.read(0, &mut buf, serving(&mut disk)),
        Err(BlkError::Stopped)
    );
    // The device was reset when it stopped (the fake completes resets at once, so the
    // memory went back to the heap).
    assert_eq!(blk.transport.status, 0);
    let mut blk = up(0);
    let st = blk.read(0, &mut buf, |dev| {
        let ring = dev.ring(0);
        if let Some((head, bufs)) = ring.pop_avail() {
            FakeHal::write(bufs[2].addr, &[0]);
            ring.push_used(head as u32, 100);
        }
        true
    });
    assert_eq!(st, Err(BlkError::Lied));
    // Our request came back: its buffers are ours, the disk goes on.
    blk.read(0, &mut buf, serving(&mut disk)).unwrap();
    // A failed read reporting only its status byte: the status, not a lie.
    let st = blk.read(0, &mut buf, |dev| {
        let ring = dev.ring(0);
        if let Some((head, bufs)) = ring.pop_avail() {
            FakeHal::write(bufs[2].addr, &[1]);
            ring.push_used(head as u32, 1);
        }
        true
    });
    assert_eq!(st, Err(BlkError::Status(1)));
    // A used entry with the status byte never written.
    let mut blk = up(0);
    let st = blk.read(0, &mut buf, |dev| {
        let ring = dev.ring(0);
        if let Some((head, _)) = ring.pop_avail() {
            ring.push_used(head as u32, 513);
        }
        true
    });
    assert_eq!(st, Err(BlkError::Lied));
    blk.write(0, &[3; 512], serving(&mut disk)).unwrap();
    // No answer within the wait: a timeout, and the disk takes nothing more (its buffer
    // may still be written by the device).
    let mut blk = up(0);
    let st = blk.write(0, &[2; 512], |_| false);
    assert_eq!(st, Err(BlkError::Timeout));
    assert_eq!(
        blk.read(0, &mut buf, serving(&mut disk)),
        Err(BlkError::Stopped)
    );
    assert_eq!(
        blk.write(0, &[2; 512], serving(&mut disk)),
        Err(BlkError::Stopped)
    );
}
