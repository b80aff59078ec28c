//! The client's state as a checksummed record, the one format both platforms keep: the
//! account key, and the certificate held with its key. The host writes the record to a
//! file under `--state` and replaces the old one by rename; the bare machine writes it to
//! the older of two slots of its disk's state area, so a write cut short by a power loss
//! leaves the other, previous, record readable ([`newest`] takes the valid record with the
//! highest sequence number).
//!
//! ```text
//! record: "BWACME\0\x01" | sequence u64 | length u32 | CRC-32 u32 | payload (length bytes)
//! payload: items of  tag u8 | length u32 | bytes   (1 account key, 2 chain PEM,
//!                                                   3 certificate key; others skipped)
//! ```
//!
//! All integers big-endian; the CRC-32 (IEEE) covers the sequence, the length and the
//! payload. A record that fails any check reads as absent, never as a state.

use alloc::string::String;
use alloc::vec::Vec;

/// A record's first eight bytes.
pub const MAGIC: [u8; 8] = *b"BWACME\x00\x01";
/// Magic, sequence, length, checksum.
pub const HEADER: usize = 24;
/// The longest payload read or written.
pub const MAX_PAYLOAD: usize = 64 * 1024;
/// Bytes of one slot of the bare machine's state area: the largest record, rounded up to
/// whole 64 KiB disk requests.
pub const SLOT_BYTES: u64 = ((HEADER + MAX_PAYLOAD).div_ceil(65_536) * 65_536) as u64;
/// Bytes of the bare machine's state area: two slots, written in turn. It lies at the end
/// of the disk (`bareweb run --state-disk` makes a disk of exactly this size; `bareweb
/// build --disk` reserves it at the end of the image).
pub const AREA_BYTES: u64 = 2 * SLOT_BYTES;

const ACCOUNT: u8 = 1;
const CHAIN: u8 = 2;
const CERT_KEY: u8 = 3;

/// What is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The account key, PKCS #8 DER.
    pub account: Vec<u8>,
    /// The certificate held, if any.
    pub certificate: Option<Kept>,
}

/// A certificate held: its chain and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The chain, PEM, leaf first.
    pub chain_pem: String,
    /// Its key, PKCS #8 DER.
    pub key: Vec<u8>,
}

/// Why a record reads as absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreError {
    /// Shorter than its header, or not our magic (an empty or foreign area).
    NotARecord,
    /// Its length runs past the area or the bound.
    Length,
    /// The checksum does not match (a torn or damaged write).
    Checksum,
    /// The payload's items do not read, or the account key is missing.
    Payload,
}

fn crc(seq: &[u8], len: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(seq);
    h.update(len);
    h.update(payload);
    h.finalize()
}

fn item(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// `state` as a record with sequence number `seq`; `None` if it exceeds
/// [`MAX_PAYLOAD`].
pub fn encode(state: &State, seq: u64) -> Option<Vec<u8>> {
    let mut payload = Vec::new();
    item(&mut payload, ACCOUNT, &state.account);
    if let Some(k) = &state.certificate {
        item(&mut payload, CHAIN, k.chain_pem.as_bytes());
        item(&mut payload, CERT_KEY, &k.key);
    }
    if payload.len() > MAX_PAYLOAD {
        return None;
    }
    let seq = seq.to_be_bytes();
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&seq);
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc(&seq, &len, &payload).to_be_bytes());
    out.extend_from_slice(&payload);
    Some(out)
}

/// The `N` bytes at `at` of `b` (the caller checked they are there), for a big-endian
/// integer.
fn be<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

/// The record at the start of `area` (trailing bytes ignored): its sequence number and
/// state.
pub fn decode(area: &[u8]) -> Result<(u64, State), StoreError> {
    if area.len() < HEADER || area[..8] != MAGIC {
        return Err(StoreError::NotARecord);
    }
    let seq = u64::from_be_bytes(be(area, 8));
    let len = u32::from_be_bytes(be(area, 16)) as usize;
    if len > MAX_PAYLOAD || HEADER + len > area.len() {
        return Err(StoreError::Length);
    }
    // Sequence numbers count writes from 1: one past 2^63 is a forgery, whose successor
    // could not be written as the newer.
    if seq > i64::MAX as u64 {
        return Err(StoreError::Payload);
    }
    let sum = u32::from_be_bytes(be(area, 20));
    let payload = &area[HEADER..HEADER + len];
    if crc(&area[8..16], &area[16..20], payload) != sum {
        return Err(StoreError::Checksum);
    }
    let mut account = None;
    let mut chain = None;
    let mut key = None;
    let mut rest = payload;
    while !rest.is_empty() {
        if rest.len() < 5 {
            return Err(StoreError::Payload);
        }
        let tag = rest[0];
        let n = u32::from_be_bytes(be(rest, 1)) as usize;
        let bytes = rest.get(5..5 + n).ok_or(StoreError::Payload)?;
        match tag {
            ACCOUNT => account = Some(bytes.to_vec()),
            CHAIN => {
                chain = Some(String::from(
                    core::str::from_utf8(bytes).map_err(|_| StoreError::Payload)?,
                ))
            }
            CERT_KEY => key = Some(bytes.to_vec()),
            _ => {}
        }
        rest = &rest[5 + n..];
    }
    let certificate = match (chain, key) {
        (Some(chain_pem), Some(key)) => Some(Kept { chain_pem, key }),
        (None, None) => None,
        _ => return Err(StoreError::Payload),
    };
    Ok((
        seq,
        State {
            account: account.ok_or(StoreError::Payload)?,
            certificate,
        },
    ))
}

/// Of the slots given, the one holding the valid record with the highest sequence number:
/// its index, sequence number and state.
pub fn newest(slots: &[&[u8]]) -> Option<(usize, u64, State)> {
    let mut best: Option<(usize, u64, State)> = None;
    for (i, s) in slots.iter().enumerate() {
        if let Ok((seq, state)) = decode(s) {
            if best.as_ref().is_none_or(|b| seq > b.1) {
                best = Some((i, seq, state));
            }
        }
    }
    best
}

/// Where the next record goes among two slots, and its sequence number: the slot not
/// holding the newest record, one past the newest's number (slot 0 and 1 when neither
/// holds one).
pub fn next_write(slots: [&[u8]; 2]) -> (usize, u64) {
    match newest(&slots) {
        Some((i, seq, _)) => (1 - i, seq + 1),
        None => (0, 1),
    }
}

#[cfg(test)]
mod tests;
