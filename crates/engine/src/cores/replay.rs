//! Deferred frames: a frame built away from the device (in an HTTP core's DLIST slot, in
//! a host runner's transmit batch) and sent on the device later by another piece of code.
//! [`replay`] is that later send, the one copy of it: the head is copied into the
//! device's slot and the body is posted as the same borrowed slice of the site image, so
//! the body is never copied, whoever built the frame.

use crate::nic::{Tso, TxRing};

/// Why a deferred frame did not reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayError {
    /// The device lent no slot: nothing was taken; the frame (and those after it) wait.
    NoSlot,
    /// The device took the head but refused the frame (its descriptors were full, or it
    /// cannot segment a frame with a segmentation request): the frame is lost, and TCP
    /// retransmits it.
    Refused,
}

/// Sends a frame built elsewhere on `tx`: `head` copied into `tx`'s next slot (cut to the
/// slot's length), `body` posted as the same slice, with its segmentation request if it
/// has one. Does not flush.
pub fn replay<T: TxRing + ?Sized>(
    tx: &mut T,
    head: &[u8],
    body: &'static [u8],
    tso: Option<Tso>,
) -> Result<(), ReplayError> {
    let slot = tx.slot().ok_or(ReplayError::NoSlot)?;
    let len = head.len().min(slot.len());
    slot[..len].copy_from_slice(&head[..len]);
    let posted = match tso {
        Some(tso) => tx.post_tso(len, body, tso),
        None => tx.post(len, body),
    };
    posted.map_err(|_| ReplayError::Refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeQueues;
    use crate::nic::TxFull;

    #[test]
    fn head_is_copied_and_body_rides_along() {
        static BODY: [u8; 5] = *b"world";
        let mut tx = FakeQueues::default();
        assert_eq!(replay(&mut tx, b"hello ", &BODY, None), Ok(()));
        assert_eq!(replay(&mut tx, b"", &[], None), Ok(()));
        assert_eq!(tx.outbox, vec![b"hello world".to_vec(), vec![]]);
    }

    /// A transmit ring with one slot that refuses every post.
    struct Refusing([u8; 8], bool);

    impl TxRing for Refusing {
        fn slot(&mut self) -> Option<&mut [u8]> {
            self.1.then_some(&mut self.0[..])
        }
        fn post(&mut self, _: usize, _: &'static [u8]) -> Result<(), TxFull> {
            Err(TxFull)
        }
        fn flush(&mut self) {}
    }

    #[test]
    fn no_slot_and_refusal_are_told_apart() {
        let mut tx = Refusing([0; 8], false);
        assert_eq!(replay(&mut tx, b"abc", &[], None), Err(ReplayError::NoSlot));
        tx.1 = true;
        assert_eq!(
            replay(&mut tx, b"abcdefghij", &[], None),
            Err(ReplayError::Refused)
        );
        assert_eq!(&tx.0, b"abcdefgh", "the head is cut to the slot");
        let tso = Tso {
            mss: 1460,
            l4_offset: 34,
            header_len: 54,
        };
        // A device without the offload refuses a segmentation request (the default).
        assert_eq!(
            replay(&mut tx, b"x", &[], Some(tso)),
            Err(ReplayError::Refused)
        );
    }
}
