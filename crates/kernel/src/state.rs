//! The bare machine's state area: the ACME client's records (`bareweb_acme::store`) in two
//! slots at the end of the virtio-blk disk, written in turn. A write goes to the slot
//! not holding the newest record and is flushed before it counts, so power lost mid-write
//! leaves the other slot's record, the previous state, readable: [`StateArea::load`]
//! takes the valid record with the higher sequence number and ignores a torn one (its
//! checksum fails).
//!
//! ```text
//! | (the rest of the disk:   | slot 0: a record   | slot 1: a record   |
//! |  a boot image's content) | SLOT_SECTORS       | SLOT_SECTORS       | end of disk
//! ```
//!
//! The area is at the disk's end so that one layout serves both of its homes: a disk of
//! exactly [`AREA_BYTES`] (`bareweb run --state-disk` makes one) and a bootable image
//! (`bareweb build --disk` reserves the area after its content). A record is written one
//! sector per request, in order: a sector is what a disk writes whole, so a power loss
//! cuts a record between sectors, never within one, and the record's checksum finds the
//! cut. The area is written only when each slot is all zeros or begins with a record's
//! magic: another disk given by mistake is refused, never written over. Every request has
//! its own bound ([`Patience`]).

use alloc::vec;
use alloc::vec::Vec;

use bareweb_acme::store::{self, State, HEADER, MAX_PAYLOAD};

use crate::drivers::virtio::Transport;
use crate::drivers::virtio_blk::{BlkError, VirtioBlk, MAX_IO, SECTOR};

/// Sectors of one slot: the largest record, rounded up to whole 64 KiB requests.
pub const SLOT_SECTORS: u64 = store::SLOT_BYTES / SECTOR as u64;
/// Bytes of the area: two slots (what `run --state-disk` makes).
pub const AREA_BYTES: u64 = store::AREA_BYTES;
const _: () = assert!(store::SLOT_BYTES >= (HEADER + MAX_PAYLOAD) as u64);
const _: () = assert!(store::SLOT_BYTES % MAX_IO as u64 == 0);

/// Why the area could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AreaError {
    /// The disk is smaller than two slots.
    TooSmall(u64),
    /// The disk failed.
    Disk(BlkError),
    /// The state does not fit a record.
    TooLarge,
    /// A slot holds something other than a record or zeroes: not a state area (another
    /// disk given by mistake), so never written.
    NotOurs,
}

/// The state area on a disk.
pub struct StateArea<T: Transport> {
    blk: VirtioBlk<T>,
    /// The area's first sector: the disk's last 2 × [`SLOT_SECTORS`].
    base: u64,
}

impl<T: Transport> StateArea<T> {
    /// The area on `blk`, which must hold two slots.
    pub fn new(blk: VirtioBlk<T>) -> Result<StateArea<T>, AreaError> {
        if blk.capacity() < AREA_BYTES {
            return Err(AreaError::TooSmall(blk.capacity()));
        }
        let base = (blk.capacity() - AREA_BYTES) / SECTOR as u64;
        Ok(StateArea { blk, base })
    }

    /// The disk's size in bytes.
    pub fn disk_bytes(&self) -> u64 {
        self.blk.capacity()
    }

    /// The area's first byte on the disk.
    pub fn offset(&self) -> u64 {
        self.base * SECTOR as u64
    }

    /// Slot `i`'s bytes, read in whole requests, each bounded afresh by `wait`.
    fn read_slot(&mut self, i: u64, wait: &mut impl Patience<T>) -> Result<Vec<u8>, AreaError> {
        let mut bytes = vec![0u8; SLOT_SECTORS as usize * SECTOR];
        let base = self.base + i * SLOT_SECTORS;
        for (k, chunk) in bytes.chunks_mut(MAX_IO).enumerate() {
            let sector = base + (k * MAX_IO / SECTOR) as u64;
            wait.begin();
            self.blk
                .read(sector, chunk, |t| wait.wait(t))
                .map_err(AreaError::Disk)?;
        }
        Ok(bytes)
    }

    /// Both slots, `None` for one that cannot be read (a bad sector); if neither reads,
    /// the disk's error. A slot neither blank nor beginning with a record is
    /// [`AreaError::NotOurs`].
    fn slots(&mut self, wait: &mut impl Patience<T>) -> Result<Slots, AreaError> {
        let slots = match (self.read_slot(0, wait), self.read_slot(1, wait)) {
            (Err(e), Err(_)) => return Err(e),
            (a, b) => [a.ok(), b.ok()],
        };
        if !slots.iter().flatten().all(|s| ours(s)) {
            return Err(AreaError::NotOurs);
        }
        Ok(slots)
    }

    /// The newest state kept, `None` on a blank area (or one whose records are both torn
    /// or damaged).
    pub fn load(&mut self, wait: impl Patience<T>) -> Result<Option<State>, AreaError> {
        Ok(self.load_record(wait)?.map(|(_, state)| state))
    }

    /// [`StateArea::load`] with the record's sequence number. An unreadable slot counts
    /// as empty here (the other's record is read).
    pub fn load_record(
        &mut self,
        mut wait: impl Patience<T>,
    ) -> Result<Option<(u64, State)>, AreaError> {
        let [a, b] = self.slots(&mut wait)?;
        let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
        Ok(store::newest(&[&a, &b]).map(|(_, seq, state)| (seq, state)))
    }

    /// Keeps `state`: written to the slot not holding the newest record, then flushed.
    /// Returns the slot written.
    pub fn save(&mut self, state: &State, wait: impl Patience<T>) -> Result<usize, AreaError> {
        self.save_record(state, wait).map(|(slot, _)| slot)
    }

    /// [`StateArea::save`], returning the slot and the record's sequence number. With one
    /// slot unreadable: over it when the other holds the newest record (a bad sector in the
    /// older slot stops nothing), else over the readable one, so a record the disk fails to
    /// read for a while is never written over while it may be the only one.
    pub fn save_record(
        &mut self,
        state: &State,
        mut wait: impl Patience<T>,
    ) -> Result<(usize, u64), AreaError> {
        let slots = self.slots(&mut wait)?;
        let unreadable = slots.iter().position(Option::is_none);
        let [a, b] = slots.map(Option::unwrap_or_default);
        let (mut slot, seq) = store::next_write([&a, &b]);
        if let Some(u) = unreadable {
            if store::newest(&[&a, &b]).is_none() {
                slot = 1 - u;
            }
        }
        let record = store::encode(state, seq).ok_or(AreaError::TooLarge)?;
        let mut bytes = record;
        bytes.resize(bytes.len().next_multiple_of(SECTOR), 0);
        let base = self.base + slot as u64 * SLOT_SECTORS;
        for (k, sector) in bytes.chunks(SECTOR).enumerate() {
            wait.begin();
            self.blk
                .write(base + k as u64, sector, |t| wait.wait(t))
                .map_err(AreaError::Disk)?;
        }
        wait.begin();
        self.blk.flush(|t| wait.wait(t)).map_err(AreaError::Disk)?;
        Ok((slot, seq))
    }
}

/// The two slots' bytes as read (`None`: unreadable).
type Slots = [Option<Vec<u8>>; 2];

/// How long the area waits for its disk: each request gets its own bound.
pub trait Patience<T> {
    /// A request is about to be submitted: its bound starts now.
    fn begin(&mut self);
    /// Called between looks at the used ring (with the transport); false gives up.
    fn wait(&mut self, t: &mut T) -> bool;
}

/// A closure is patience whose bound the closure keeps (the tests' fake devices serve
/// requests in it).
impl<T, F: FnMut(&mut T) -> bool> Patience<T> for F {
    fn begin(&mut self) {}
    fn wait(&mut self, t: &mut T) -> bool {
        self(t)
    }
}

/// Whether a slot's bytes may be ours: a record's magic at its start (a record, whole or
/// torn: its first sector is written first), or all zeros (never written).
fn ours(slot: &[u8]) -> bool {
    slot.starts_with(&store::MAGIC) || slot.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::fake::{FakeHal, FakeVirtio};
    use bareweb_acme::store::Kept;

    const F_FLUSH: u64 = 1 << 9;

    fn state(n: u8) -> State {
        State {
            account: vec![n; 121],
            certificate: (n > 1).then(|| Kept {
                chain_pem: alloc::format!("chain {n}\n").repeat(300),
                key: vec![n; 138],
            }),
        }
    }

    fn area(disk_bytes: u64) -> Result<StateArea<FakeVirtio>, AreaError> {
        let blk =
            VirtioBlk::new::<FakeHal>(FakeVirtio::blk(disk_bytes / 512, F_FLUSH, 256)).unwrap();
        StateArea::new(blk)
    }

    fn honest(disk: &mut [u8]) -> impl FnMut(&mut FakeVirtio) -> bool + '_ {
        move |dev| {
            dev.serve_blk(disk);
            true
        }
    }

    /// A device on `disk` whose reads of slot 0 fail (a bad sector: status 1), serving
    /// everything else.
    fn slot0_unreadable(disk: &mut [u8]) -> impl FnMut(&mut FakeVirtio) -> bool + '_ {
        use crate::drivers::fake::FakeHal;
        let slot0 = SLOT_SECTORS as usize * 512;
        move |dev: &mut FakeVirtio| {
            let ring = dev.ring(0);
            while let Some((head, bufs)) = ring.pop_avail() {
                let (kind, at) = crate::drivers::fake::blk_request(&bufs);
                let st = bufs[bufs.len() - 1];
                match kind {
                    0 if at < slot0 => {
                        FakeHal::write(st.addr, &[1]);
                        ring.push_used(head as u32, 1);
                    }
                    0 => {
                        FakeHal::write(bufs[1].addr, &disk[at..at + bufs[1].len as usize]);
                        FakeHal::write(st.addr, &[0]);
                        ring.push_used(head as u32, bufs[1].len + 1);
                    }
                    1 => {
                        let d = FakeHal::read(bufs[1].addr, bufs[1].len as usize);
                        disk[at..at + d.len()].copy_from_slice(&d);
                        FakeHal::write(st.addr, &[0]);
                        ring.push_used(head as u32, 1);
                    }
                    _ => {
                        FakeHal::write(st.addr, &[0]);
                        ring.push_used(head as u32, 1);
                    }
                }
            }
            true
        }
    }

    #[test]
    fn a_slot_the_disk_cannot_read_is_not_written_while_it_may_hold_the_only_record() {
        let mut disk = vec![0u8; AREA_BYTES as usize];
        let mut a = area(AREA_BYTES).unwrap();
        assert_eq!(a.save(&state(2), honest(&mut disk)).unwrap(), 0);
        // Slot 1 holds a torn record: its magic, a checksum that fails.
        let s1 = SLOT_SECTORS as usize * 512;
        disk[s1..s1 + 8].copy_from_slice(&store::MAGIC);
        disk[s1 + 20] = 0xFF;
        let slot0 = disk[..s1].to_vec();
        // Slot 0 unreadable for a while: nothing to load, and the save goes to slot 1.
        assert_eq!(a.load(slot0_unreadable(&mut disk)).unwrap(), None);
        assert_eq!(a.save(&state(3), slot0_unreadable(&mut disk)).unwrap(), 1);
        assert_eq!(
            disk[..s1],
            slot0[..],
            "the record that could not be read is kept"
        );
        // Once it reads again, a whole state is read (each slot holds one).
        let back = a.load(honest(&mut disk)).unwrap();
        assert!(back == Some(state(2)) || back == Some(state(3)), "{back:?}");
    }

    #[test]
    fn each_request_gets_its_own_bound() {
        // Patience that allows three looks per request: every request here is served at
        // the second look, so a save of many requests never gives up.
        struct Three<'a>(&'a mut [u8], u32);
        impl Patience<FakeVirtio> for Three<'_> {
            fn begin(&mut self) {
                self.1 = 3;
            }
            fn wait(&mut self, dev: &mut FakeVirtio) -> bool {
                if self.1 == 0 {
                    return false;
                }
                self.1 -= 1;
                if self.1 == 1 {
                    dev.serve_blk(self.0);
                }
                true
            }
        }
        let mut disk = vec![0u8; AREA_BYTES as usize];
        let mut a = area(AREA_BYTES).unwrap();
        // state(3)'s record spans several sectors: a request each.
        assert!(store::encode(&state(3), 1).unwrap().len() > 4 * SECTOR);
        assert_eq!(a.save(&state(3), Three(&mut disk, 0)).unwrap(), 0);
        assert_eq!(a.load(honest(&mut disk)).unwrap(), Some(state(3)));
    }

    #[test]
    fn slots_alternate_and_the_newest_is_read() {
        let mut disk = vec![0u8; AREA_BYTES as usize];
        let mut a = area(AREA_BYTES).unwrap();
        assert_eq!(
            a.load(honest(&mut disk)).unwrap(),
            None,
            "a blank disk holds nothing"
        );
        assert_eq!(a.save(&state(1), honest(&mut disk)).unwrap(), 0);
        assert_eq!(a.save(&state(2), honest(&mut disk)).unwrap(), 1);
        assert_eq!(a.save(&state(3), honest(&mut disk)).unwrap(), 0);
        // A new boot (a new driver over the same disk) reads the last.
        let mut again = area(AREA_BYTES).unwrap();
        assert_eq!(again.load(honest(&mut disk)).unwrap(), Some(state(3)));
        assert!(matches!(
            area(AREA_BYTES - 512),
            Err(AreaError::TooSmall(_))
        ));
    }

    #[test]
    fn the_area_is_the_disks_end_and_a_foreign_disk_is_never_written() {
        // A boot image's content before the area stays as it was.
        let image = 3 * 1024 * 1024;
        let mut disk = vec![0x5Au8; image + AREA_BYTES as usize];
        disk[image..].fill(0);
        let mut a = area(disk.len() as u64).unwrap();
        assert_eq!(a.offset(), image as u64);
        assert_eq!(a.save(&state(2), honest(&mut disk)).unwrap(), 0);
        assert!(disk[..image].iter().all(|&b| b == 0x5A));
        assert_eq!(&disk[image..image + 8], &store::MAGIC);
        assert_eq!(a.load(honest(&mut disk)).unwrap(), Some(state(2)));
        // A disk whose last sectors hold something else: refused, not written.
        let mut other = vec![0x5Au8; AREA_BYTES as usize];
        let before = other.clone();
        let mut b = area(AREA_BYTES).unwrap();
        assert_eq!(b.load(honest(&mut other)), Err(AreaError::NotOurs));
        assert_eq!(
            b.save(&state(3), honest(&mut other)),
            Err(AreaError::NotOurs)
        );
        assert!(other == before);
    }

    #[test]
    fn an_unreadable_older_slot_neither_hides_the_newer_nor_stops_a_write() {
        let mut disk = vec![0u8; AREA_BYTES as usize];
        let mut a = area(AREA_BYTES).unwrap();
        a.save(&state(2), honest(&mut disk)).unwrap();
        a.save(&state(3), honest(&mut disk)).unwrap();
        // Reads of slot 0 fail (a bad sector: status 1); everything else is served.
        assert_eq!(a.load(slot0_unreadable(&mut disk)).unwrap(), Some(state(3)));
        assert_eq!(a.save(&state(4), slot0_unreadable(&mut disk)).unwrap(), 0);
        assert_eq!(a.load(honest(&mut disk)).unwrap(), Some(state(4)));
    }

    #[test]
    fn power_lost_mid_write_leaves_the_previous_state() {
        let mut disk = vec![0u8; AREA_BYTES as usize];
        let mut a = area(AREA_BYTES).unwrap();
        a.save(&state(2), honest(&mut disk)).unwrap();
        a.save(&state(3), honest(&mut disk)).unwrap();
        // The next save goes to slot 0; the machine dies once the first sector of its
        // write reached the disk (reads are served, the write's first sector lands, then
        // nothing ever answers again).
        let mut dead = false;
        let mut dying = |dev: &mut FakeVirtio| {
            use crate::drivers::fake::FakeHal;
            if dead {
                return false;
            }
            let ring = dev.ring(0);
            while let Some((head, bufs)) = ring.pop_avail() {
                let (kind, at) = crate::drivers::fake::blk_request(&bufs);
                let data = bufs[1];
                if kind == 0 {
                    FakeHal::write(data.addr, &disk[at..at + data.len as usize]);
                    FakeHal::write(bufs[2].addr, &[0]);
                    ring.push_used(head as u32, data.len + 1);
                } else {
                    disk[at..at + 512].copy_from_slice(&FakeHal::read(data.addr, 512));
                    dead = true;
                    return false;
                }
            }
            true
        };
        let r = a.save(&state(4), &mut dying);
        assert_eq!(r, Err(AreaError::Disk(BlkError::Timeout)));
        // The next boot reads state 3: slot 1, untouched.
        let mut again = area(AREA_BYTES).unwrap();
        assert_eq!(again.load(honest(&mut disk)).unwrap(), Some(state(3)));
        // And writes its next state over the torn slot.
        assert_eq!(again.save(&state(5), honest(&mut disk)).unwrap(), 0);
        assert_eq!(
            area(AREA_BYTES).unwrap().load(honest(&mut disk)).unwrap(),
            Some(state(5))
        );
    }
}
