//! MLDv2 (RFC 3810): multicast address records of a report, read and written, and the
//! fields a version 2 query adds.

use super::*;

/// The type of an MLDv2 multicast address record (RFC 3810 §5.2.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    /// 1: current state, include these sources.
    ModeIsInclude,
    /// 2: current state, exclude these sources (a join with no sources: all of them).
    ModeIsExclude,
    /// 3: changed to include these sources (with none: a leave).
    ChangeToInclude,
    /// 4: changed to exclude these sources (with none: a join).
    ChangeToExclude,
    /// 5: allow new sources.
    AllowNewSources,
    /// 6: block old sources.
    BlockOldSources,
    /// Anything else (ignored by receivers).
    Unknown(u8),
}

impl From<u8> for RecordType {
    fn from(v: u8) -> Self {
        match v {
            1 => RecordType::ModeIsInclude,
            2 => RecordType::ModeIsExclude,
            3 => RecordType::ChangeToInclude,
            4 => RecordType::ChangeToExclude,
            5 => RecordType::AllowNewSources,
            6 => RecordType::BlockOldSources,
            other => RecordType::Unknown(other),
        }
    }
}

impl From<RecordType> for u8 {
    fn from(v: RecordType) -> u8 {
        match v {
            RecordType::ModeIsInclude => 1,
            RecordType::ModeIsExclude => 2,
            RecordType::ChangeToInclude => 3,
            RecordType::ChangeToExclude => 4,
            RecordType::AllowNewSources => 5,
            RecordType::BlockOldSources => 6,
            RecordType::Unknown(other) => other,
        }
    }
}

/// One multicast address record of an MLDv2 report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MldRecord<'a> {
    /// Record type.
    pub record_type: RecordType,
    /// The multicast address.
    pub group: Address,
    /// The source addresses, 16 octets each.
    pub sources: &'a [u8],
}

/// The records of an MLDv2 report, checked by [`MldRecords::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MldRecords<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) count: u16,
}

/// Length of an MLDv2 address record with no sources and no auxiliary data.
pub const MLD_RECORD_LEN: usize = 20;

impl<'a> MldRecords<'a> {
    /// Checks that `count` records fill `bytes` exactly, each within the buffer.
    pub fn parse(bytes: &'a [u8], count: u16) -> Result<MldRecords<'a>> {
        let mut rest = bytes;
        for _ in 0..count {
            let (_, len) = Self::record(rest)?;
            rest = &rest[len..];
        }
        if !rest.is_empty() {
            return Err(Error::Malformed);
        }
        Ok(MldRecords { bytes, count })
    }

    fn record(b: &'a [u8]) -> Result<(MldRecord<'a>, usize)> {
        let h = b.first_chunk::<4>().ok_or(Error::Truncated)?;
        let sources = 16 * usize::from(u16::from_be_bytes([h[2], h[3]]));
        let len = MLD_RECORD_LEN + sources + 4 * usize::from(h[1]);
        let body = b.get(..len).ok_or(Error::Truncated)?;
        Ok((
            MldRecord {
                record_type: RecordType::from(h[0]),
                group: Address::from_bytes(&body[4..20]),
                sources: &body[20..20 + sources],
            },
            len,
        ))
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records in order.
    pub fn iter(&self) -> impl Iterator<Item = MldRecord<'a>> + 'a {
        let mut rest = self.bytes;
        (0..self.count).map_while(move |_| {
            let (r, len) = Self::record(rest).ok()?;
            rest = &rest[len..];
            Some(r)
        })
    }
}

/// The length of an MLDv2 report [`emit_mld_report`] writes for `groups` groups.
pub const fn mld_report_len(groups: usize) -> usize {
    HEADER_LEN + groups * MLD_RECORD_LEN
}

/// The maximum response delay in milliseconds an MLDv2 query's Maximum Response Code
/// stands for (RFC 3810 §5.1.3: linear below 32768, a floating-point form above).
pub fn mld_max_resp_delay_ms(code: u16) -> u32 {
    if code < 0x8000 {
        u32::from(code)
    } else {
        let mant = u32::from(code & 0x0fff);
        let exp = u32::from((code >> 12) & 0x7);
        (mant | 0x1000) << (exp + 3)
    }
}

/// Writes an MLDv2 report of `records` (each a record type and a group, no sources) and
/// fills the checksum: what a host sends to ff02::16 from its link-local address (or
/// `::` during DAD), hop limit 1, behind [`super::ipv6::emit_router_alert`].
/// `ChangeToExclude` joins, `ChangeToInclude` leaves, `ModeIsExclude` answers a query.
///
/// # Panics
/// If the buffer is shorter than [`mld_report_len`], or there are more than 65 535
/// records.
pub fn emit_mld_report<T: AsRef<[u8]> + AsMut<[u8]>>(
    packet: &mut Packet<T>,
    src: Address,
    dst: Address,
    records: &[(RecordType, Address)],
) {
    let count = u16::try_from(records.len()).expect("at most 65535 records");
    packet.set_msg_type(Message::MldReport);
    packet.set_msg_code(0);
    packet.put(4, &[0, 0]);
    packet.put(field::MLD_RECORDS.start, &count.to_be_bytes());
    for (i, (kind, g)) in records.iter().enumerate() {
        let at = HEADER_LEN + i * MLD_RECORD_LEN;
        packet.put(at, &[(*kind).into(), 0, 0, 0]);
        packet.put(at + 4, &g.0);
    }
    packet.fill_checksum(src, dst);
}

/// Length of an MLDv1 report (RFC 2710 §3).
pub const MLDV1_REPORT_LEN: usize = 24;

/// Writes an MLDv1 report for `group` (RFC 2710 §3: sent to the group itself, hop limit
/// 1, behind the Router Alert) and fills the checksum: what a host answers an MLDv1
/// querier with (RFC 3810 §8.2.1).
///
/// # Panics
/// If the buffer is shorter than [`MLDV1_REPORT_LEN`].
pub fn emit_mld_v1_report<T: AsRef<[u8]> + AsMut<[u8]>>(
    packet: &mut Packet<T>,
    src: Address,
    group: Address,
) {
    packet.set_msg_type(Message::MldV1Report);
    packet.set_msg_code(0);
    packet.put(4, &[0; 4]);
    packet.put(field::MLD_GROUP.start, &group.0);
    packet.fill_checksum(src, group);
}

/// The fields an MLDv2 query adds to MLDv1's (RFC 3810 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MldQueryV2<'a> {
    /// S: suppress router-side processing.
    pub suppress: bool,
    /// Querier's robustness variable (0-7).
    pub qrv: u8,
    /// Querier's query interval code.
    pub qqic: u8,
    /// The sources, 16 octets each.
    pub sources: &'a [u8],
}
