//! The record layer after the handshake, ours: once rustls has finished the handshake, the
//! connection's traffic keys are taken from it (`dangerous_into_kernel_connection`, the API
//! rustls offers for kTLS) and [`Records`] seals and opens every later record itself, in the
//! caller's buffers: a response's plaintext is read where it lies (the head, a slice of the
//! site image) and encrypted straight into the output, with no copy through rustls's own
//! record buffer and no allocation per record. rustls keeps the key schedule: a KeyUpdate
//! (TLS 1.3, RFC 8446 §4.6.3) asks its `KernelConnection` for the next secret.
//!
//! What a peer may send after the handshake, and what it gets:
//! - application data: to the caller;
//! - close_notify: the peer is done, what follows it is ignored;
//! - another alert: fatal ones end the connection; warnings (TLS 1.2, and TLS 1.3's
//!   user_canceled) are ignored, four at most, as rustls and BoringSSL allow;
//! - TLS 1.3 KeyUpdate: the receive key moves on; one asking for ours is answered at once by
//!   a KeyUpdate of our own, then our key moves on (once per application data we send:
//!   requests before it share the answer); 32 at most with no application data between
//!   (BoringSSL's `kMaxKeyUpdates`, rustls's allowance); a request_update other than 0 or
//!   1 is illegal_parameter;
//! - TLS 1.2 ClientHello (renegotiation): a no_renegotiation warning the first time, fatal
//!   the second (as rustls);
//! - anything else (a change_cipher_spec, a record of another type, a handshake message
//!   split across records, a record that does not open, one longer than the protocol
//!   allows): the fatal alert that says why (unexpected_message, decode_error,
//!   bad_record_mac, record_overflow), sealed, and the connection fails.
//!
//! Records are sealed under the sequence number rustls reached; after 2^24 AES-GCM records
//! under one key TLS 1.3 updates its key (below AES-GCM's confidentiality limit, RFC 8446
//! §5.5) and TLS 1.2 refuses to seal more (the caller closes); ChaCha20-Poly1305 has no
//! limit that counts.
//!
//! Application data is *reserved* ([`Records::reserve`]: a sequence number) and sealed
//! when it is sent, as often as it is sent ([`Records::seal_reserved`]: the same bytes each
//! time), so the engine keeps no ciphertext for a retransmission; a transmit key stays
//! while records reserved under it may be sent again ([`Records::release_before`]).

use rustls::kernel::KernelConnection;
use rustls::server::ServerConnectionData;
use rustls::{AlertDescription, ContentType, Error, ExtractedSecrets, PeerMisbehaved};

use super::{SealError, MAX_RECORD_PLAINTEXT, RECORD_OVERHEAD};
use crate::provider::aead::{Alg, RangeMac, RecordKey, GCM_EXPLICIT_NONCE_LEN, TAG_LEN};

/// AES-GCM records sealed under one key before TLS 1.3 updates it (TLS 1.2 stops).
pub(super) const SEQ_LIMIT: u64 = 1 << 24;
/// KeyUpdates taken with no application data between.
const KEY_UPDATES: u8 = 32;
/// Warning alerts taken per connection.
const WARNINGS: u8 = 4;
/// Renegotiation requests answered with a warning (TLS 1.2); the next is fatal.
const RENEGOTIATIONS: u8 = 1;

/// Content types (RFC 8446 §5.1).
pub const CT_ALERT: u8 = 21;
/// Handshake.
pub const CT_HANDSHAKE: u8 = 22;
/// Application data.
pub const CT_APP_DATA: u8 = 23;
const HS_CLIENT_HELLO: u8 = 1;
const HS_KEY_UPDATE: u8 = 24;

/// A fatal error, and the alert that tells the peer (none when the peer's alert ended it).
pub(super) type Failure = (Error, Option<AlertDescription>);

/// One direction's key and sequence number.
struct Dir {
    key: RecordKey,
    seq: u64,
}

/// A record reserved by [`TlsConn::reserve`](super::TlsConn::reserve): its sequence number, the key's epoch and its
/// length on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    /// The record's sequence number under its key.
    pub seq: u64,
    /// The transmit key's epoch (TLS 1.3 KeyUpdates).
    pub epoch: u32,
    /// The sealed record's length (header included).
    pub wire: u32,
}

/// What [`Records::open`] found in the input.
#[derive(Debug, Default)]
pub(super) struct Opened {
    /// Input bytes used (whole records).
    pub used: usize,
    /// The peer sent close_notify.
    pub peer_closed: bool,
}

/// An established connection's record layer (the module doc).
pub(super) struct Records {
    kernel: KernelConnection<ServerConnectionData>,
    tls13: bool,
    tx: Dir,
    /// The transmit key's epoch (0 at the handshake's end, one more per update).
    epoch: u32,
    /// Earlier transmit keys still wanted for records reserved under them and not yet
    /// acknowledged (a retransmission re-seals them): (epoch, key), oldest first, until
    /// [`Records::release_before`] drops them. A key no record was reserved under is not
    /// kept, and a KeyUpdate is answered once per application data sent (below), so this
    /// holds at most one key per epoch of records in flight.
    old_tx: alloc::vec::Vec<(u32, RecordKey)>,
    /// A record was reserved under the current transmit key.
    tx_used: bool,
    /// Our KeyUpdate answered the peer's since we last sent application data: a request
    /// before the next is answered by that one (RFC 8446 §4.6.3 asks for one before our
    /// next application data; rustls answers so too).
    update_answered: bool,
    rx: Dir,
    key_updates: u8,
    warnings: u8,
    renegotiations: u8,
    /// The peer's close_notify was read: nothing after it is.
    peer_closed: bool,
}

impl Records {
    /// The record layer of a connection rustls has just completed.
    pub(super) fn new(
        secrets: ExtractedSecrets,
        kernel: KernelConnection<ServerConnectionData>,
    ) -> Result<Self, Error> {
        let tls13 = kernel.protocol_version() == rustls::ProtocolVersion::TLSv1_3;
        let (tx_seq, tx) = secrets.tx;
        let (rx_seq, rx) = secrets.rx;
        let key = |s| RecordKey::new(&s).ok_or(Error::General("no record key".into()));
        Ok(Self {
            kernel,
            tls13,
            tx: Dir {
                key: key(tx)?,
                seq: tx_seq,
            },
            epoch: 0,
            old_tx: alloc::vec::Vec::new(),
            tx_used: false,
            update_answered: false,
            rx: Dir {
                key: key(rx)?,
                seq: rx_seq,
            },
            key_updates: KEY_UPDATES,
            warnings: WARNINGS,
            renegotiations: RENEGOTIATIONS,
            peer_closed: false,
        })
    }

    /// Seals one record of content type `typ` whose plaintext is `parts` joined (at most
    /// [`MAX_RECORD_PLAINTEXT`] bytes) into `out`; the bytes written. Needs the plaintext's
    /// length + [`RECORD_OVERHEAD`].
    pub(super) fn seal(
        &mut self,
        typ: u8,
        parts: &[&[u8]],
        out: &mut [u8],
    ) -> Result<usize, SealError> {
        self.update_answered = false;
        if self.tx.seq >= self.seq_limit() {
            if !self.tls13 {
                return Err(SealError::Exhausted);
            }
            let plen: usize = parts.iter().map(|p| p.len()).sum();
            let need = sealed_len(&self.tx.key, true, 5) + sealed_len(&self.tx.key, true, plen);
            if out.len() < need {
                return Err(SealError::TooSmall(need));
            }
            // Our own KeyUpdate (update_not_requested), then the new key.
            let n = self.seal_one(CT_HANDSHAKE, &[&[HS_KEY_UPDATE, 0, 0, 1, 0]], out)?;
            self.next_tx_key()?;
            let m = self.seal_one(typ, parts, out.get_mut(n..).unwrap_or_default())?;
            return Ok(n + m);
        }
        self.seal_one(typ, parts, out)
    }

    /// Reserves the next application-data record, of `len` plaintext bytes, to be sealed
    /// (and sealed again, identically, for a retransmission) by [`Records::seal_reserved`];
    /// at the key's record limit a TLS 1.3 KeyUpdate is appended to `ctl` first (it goes
    /// on the stream before the record).
    pub(super) fn reserve(
        &mut self,
        len: usize,
        ctl: &mut alloc::vec::Vec<u8>,
    ) -> Result<Reserved, SealError> {
        if len > MAX_RECORD_PLAINTEXT {
            return Err(SealError::TooSmall(MAX_RECORD_PLAINTEXT + RECORD_OVERHEAD));
        }
        self.update_answered = false;
        if self.tx.seq >= self.seq_limit() {
            if !self.tls13 {
                return Err(SealError::Exhausted);
            }
            self.send(CT_HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1, 0], ctl)
                .map_err(|_| SealError::Exhausted)?;
            self.next_tx_key()?;
        }
        self.tx_used = true;
        let r = Reserved {
            seq: self.tx.seq,
            epoch: self.epoch,
            wire: sealed_len(&self.tx.key, self.tls13, len) as u32,
        };
        self.tx.seq += 1;
        Ok(r)
    }

    /// Seals reserved record `r` from `parts` (as many bytes as reserved) into `out`: the
    /// same bytes every time.
    pub(super) fn seal_reserved(
        &self,
        r: &Reserved,
        parts: &[&[u8]],
        out: &mut [u8],
    ) -> Result<usize, SealError> {
        let key = self.tx_key(r.epoch).ok_or(SealError::Exhausted)?;
        seal_record(key, r.seq, self.tls13, CT_APP_DATA, parts, out)
    }

    /// Seals bytes `from..from + out.len()` of reserved record `r` alone
    /// ([`seal_record_range`]).
    pub(super) fn seal_reserved_range(
        &self,
        r: &Reserved,
        parts: &[&[u8]],
        from: usize,
        out: &mut [u8],
        mac: &mut Option<RangeMac>,
        tag: &mut Option<[u8; TAG_LEN]>,
    ) -> Result<(), SealError> {
        let key = self.tx_key(r.epoch).ok_or(SealError::Exhausted)?;
        seal_record_range(
            key,
            r.seq,
            self.tls13,
            CT_APP_DATA,
            parts,
            from,
            out,
            mac,
            tag,
        )
    }

    /// The transmit key of `epoch`, while it is kept.
    fn tx_key(&self, epoch: u32) -> Option<&RecordKey> {
        if epoch == self.epoch {
            return Some(&self.tx.key);
        }
        self.old_tx
            .iter()
            .find(|(e, _)| *e == epoch)
            .map(|(_, k)| k)
    }

    /// Transmit keys of epochs before `epoch` are no longer wanted (their records are
    /// acknowledged).
    pub(super) fn release_before(&mut self, epoch: u32) {
        self.old_tx.retain(|(e, _)| *e >= epoch);
    }

    fn seal_one(&mut self, typ: u8, parts: &[&[u8]], out: &mut [u8]) -> Result<usize, SealError> {
        let n = seal_record(&self.tx.key, self.tx.seq, self.tls13, typ, parts, out)?;
        self.tx.seq += 1;
        Ok(n)
    }

    fn next_tx_key(&mut self) -> Result<(), SealError> {
        let (seq, secrets) = self
            .kernel
            .update_tx_secret()
            .map_err(|_| SealError::Exhausted)?;
        let next = Dir {
            key: RecordKey::new(&secrets).ok_or(SealError::Exhausted)?,
            seq,
        };
        let old = core::mem::replace(&mut self.tx, next);
        if core::mem::take(&mut self.tx_used) {
            self.old_tx.push((self.epoch, old.key));
        }
        self.epoch += 1;
        Ok(())
    }

    /// Records sealed under one key before it must change: AES-GCM's confidentiality
    /// limit (RFC 8446 §5.5, rounded down); ChaCha20-Poly1305 has none that counts.
    fn seq_limit(&self) -> u64 {
        if self.tx.key.alg() == Alg::ChaCha20Poly1305 {
            u64::MAX
        } else {
            SEQ_LIMIT
        }
    }

    /// Opens the whole records at the front of `input` (decrypting them in place):
    /// application data is appended to `plain`, what we send back (a KeyUpdate, a warning)
    /// to `out`. A fatal error comes with the alert to send (none when the peer's alert was
    /// the error); `used` is then meaningless (the connection is over).
    pub(super) fn open(
        &mut self,
        input: &mut [u8],
        out: &mut alloc::vec::Vec<u8>,
        plain: &mut alloc::vec::Vec<u8>,
    ) -> Result<Opened, Failure> {
        let mut r = Opened::default();
        while !self.peer_closed {
            let rest = &mut input[r.used..];
            let Some(&[typ, major, _, hi, lo]) = rest.get(..5) else {
                break;
            };
            let len = usize::from(u16::from_be_bytes([hi, lo]));
            let max = if self.tls13 {
                MAX_RECORD_PLAINTEXT + 256
            } else {
                MAX_RECORD_PLAINTEXT + 2048
            };
            if len > max {
                return Err((
                    Error::PeerSentOversizedRecord,
                    Some(AlertDescription::RecordOverflow),
                ));
            }
            if major != 3 {
                return Err(decode_error());
            }
            let Some(record) = rest.get_mut(..5 + len) else {
                break; // the rest of the record has not arrived
            };
            r.used += 5 + len;
            let (inner, data) = self.decrypt(typ, record)?;
            match inner {
                CT_APP_DATA => {
                    self.key_updates = KEY_UPDATES;
                    plain.extend_from_slice(data);
                }
                CT_ALERT => self.alert(data)?,
                CT_HANDSHAKE => {
                    let Some(head) = data.get(..4) else {
                        return Err(decode_error());
                    };
                    let mut msg = [0u8; 5];
                    msg[..4].copy_from_slice(head);
                    msg[4] = data.get(4).copied().unwrap_or(0);
                    self.handshake(msg, data.len(), out)?;
                }
                _ => return Err(unexpected()),
            }
            r.peer_closed |= self.peer_closed;
        }
        Ok(r)
    }

    /// Checks and decrypts one record in place; its inner content type and plaintext.
    fn decrypt<'a>(&mut self, typ: u8, record: &'a mut [u8]) -> Result<(u8, &'a [u8]), Failure> {
        let allowed = if self.tls13 {
            typ == CT_APP_DATA
        } else {
            matches!(typ, CT_APP_DATA | CT_ALERT | CT_HANDSHAKE)
        };
        if !allowed {
            return Err(unexpected());
        }
        let seq = self.rx.seq;
        let (inner, plain) = open_record(&self.rx.key, seq, self.tls13, record).map_err(|e| {
            let alert = match e {
                Error::PeerSentOversizedRecord => AlertDescription::RecordOverflow,
                Error::DecryptError => AlertDescription::BadRecordMac,
                _ => AlertDescription::UnexpectedMessage,
            };
            (e, Some(alert))
        })?;
        self.rx.seq = seq
            .checked_add(1)
            .ok_or((Error::DecryptError, Some(AlertDescription::BadRecordMac)))?;
        Ok((inner, plain))
    }

    fn alert(&mut self, data: &[u8]) -> Result<(), Failure> {
        let &[level, desc] = data else {
            return Err(decode_error());
        };
        let desc = AlertDescription::from(desc);
        if desc == AlertDescription::CloseNotify {
            self.peer_closed = true;
            return Ok(());
        }
        match level {
            1 => {
                if self.warnings == 0 {
                    return Err((
                        PeerMisbehaved::TooManyWarningAlertsReceived.into(),
                        Some(AlertDescription::UnexpectedMessage),
                    ));
                }
                self.warnings -= 1;
                if self.tls13 && desc != AlertDescription::UserCanceled {
                    return Err((
                        Error::AlertReceived(desc),
                        Some(AlertDescription::DecodeError),
                    ));
                }
                Ok(())
            }
            2 => Err((Error::AlertReceived(desc), None)),
            _ => Err((
                Error::AlertReceived(desc),
                Some(AlertDescription::IllegalParameter),
            )),
        }
    }

    /// One handshake message after the handshake: its first five bytes (type, length, and
    /// a KeyUpdate's one byte) and its length on the wire.
    fn handshake(
        &mut self,
        msg: [u8; 5],
        wire_len: usize,
        out: &mut alloc::vec::Vec<u8>,
    ) -> Result<(), Failure> {
        let body_len = u32::from_be_bytes([0, msg[1], msg[2], msg[3]]) as usize;
        if body_len + 4 != wire_len {
            // A message split across records or two in one: legal, but no client sends a
            // KeyUpdate or a renegotiation that way.
            return Err(unexpected());
        }
        match (self.tls13, msg[0]) {
            (true, HS_KEY_UPDATE) => {
                if self.key_updates == 0 {
                    return Err((
                        PeerMisbehaved::TooManyKeyUpdateRequests.into(),
                        Some(AlertDescription::UnexpectedMessage),
                    ));
                }
                self.key_updates -= 1;
                let requested = match (body_len, msg[4]) {
                    (1, 0) => false,
                    (1, 1) => true,
                    (1, _) => {
                        return Err((
                            Error::InvalidMessage(rustls::InvalidMessage::InvalidKeyUpdate),
                            Some(AlertDescription::IllegalParameter),
                        ))
                    }
                    _ => return Err(decode_error()),
                };
                let (seq, secrets) = self.kernel.update_rx_secret().map_err(|e| (e, None))?;
                self.rx = Dir {
                    key: RecordKey::new(&secrets).ok_or((Error::DecryptError, None))?,
                    seq,
                };
                if requested && !self.update_answered {
                    self.send(CT_HANDSHAKE, &[HS_KEY_UPDATE, 0, 0, 1, 0], out)?;
                    self.next_tx_key()
                        .map_err(|_| (Error::EncryptError, None))?;
                    self.update_answered = true;
                }
                Ok(())
            }
            (false, HS_CLIENT_HELLO) => {
                if self.renegotiations == 0 {
                    return Err((
                        PeerMisbehaved::TooManyRenegotiationRequests.into(),
                        Some(AlertDescription::NoRenegotiation),
                    ));
                }
                self.renegotiations -= 1;
                self.send(
                    CT_ALERT,
                    &[1, AlertDescription::NoRenegotiation.into()],
                    out,
                )
            }
            _ => Err(unexpected()),
        }
    }

    /// Seals a short record onto the end of `out`.
    fn send(
        &mut self,
        typ: u8,
        plain: &[u8],
        out: &mut alloc::vec::Vec<u8>,
    ) -> Result<(), Failure> {
        let at = out.len();
        out.resize(at + plain.len() + RECORD_OVERHEAD, 0);
        match self.seal_one(typ, &[plain], &mut out[at..]) {
            Ok(n) => {
                out.truncate(at + n);
                Ok(())
            }
            Err(_) => {
                out.truncate(at);
                Err((Error::EncryptError, None))
            }
        }
    }

    /// Seals a fatal alert onto `out` (best effort: the connection is ending).
    pub(super) fn fatal_alert(&mut self, desc: AlertDescription, out: &mut alloc::vec::Vec<u8>) {
        let _ = self.send(CT_ALERT, &[2, desc.into()], out);
    }

    /// Seals our close_notify into `out`.
    pub(super) fn close_notify(&mut self, out: &mut [u8]) -> Result<usize, SealError> {
        self.seal_one(CT_ALERT, &[&[1, 0]], out)
    }
}

/// Seals one record of content type `typ` (TLS 1.3: the inner type; the outer one is
/// application data) whose plaintext is `parts` joined, under `key` and sequence number
/// `seq`, into `out`; the bytes written (the plaintext's length + [`RECORD_OVERHEAD`] at
/// most). The same key, sequence number and plaintext always give the same bytes.
pub fn seal_record(
    key: &RecordKey,
    seq: u64,
    tls13: bool,
    typ: u8,
    parts: &[&[u8]],
    out: &mut [u8],
) -> Result<usize, SealError> {
    let plen: usize = parts.iter().map(|p| p.len()).sum();
    if plen > MAX_RECORD_PLAINTEXT {
        return Err(SealError::TooSmall(MAX_RECORD_PLAINTEXT + RECORD_OVERHEAD));
    }
    let explicit = if !tls13 && key.alg() != Alg::ChaCha20Poly1305 {
        GCM_EXPLICIT_NONCE_LEN
    } else {
        0
    };
    let inner = plen + usize::from(tls13);
    let len = explicit + inner + TAG_LEN;
    let Some(out) = out.get_mut(..5 + len) else {
        return Err(SealError::TooSmall(5 + len));
    };
    let nonce = key.nonce(seq);
    let (head, body) = out.split_at_mut(5);
    head.copy_from_slice(&[
        if tls13 { CT_APP_DATA } else { typ },
        3,
        3,
        (len >> 8) as u8,
        len as u8,
    ]);
    body[..explicit].copy_from_slice(&nonce[nonce.len() - explicit..]);
    let (data, tag_out) = body[explicit..].split_at_mut(inner);
    // The plaintext (and TLS 1.3's inner type) is read where it lies and encrypted into
    // `data`: no copy of it first where the cipher allows (the AES-GCM assembly).
    let typ_byte = [typ];
    let mut all: [&[u8]; 4] = [&[]; 4];
    let tag = if parts.len() < all.len() {
        all[..parts.len()].copy_from_slice(parts);
        let n = if tls13 {
            all[parts.len()] = &typ_byte;
            parts.len() + 1
        } else {
            parts.len()
        };
        if tls13 {
            key.seal_parts(&nonce, head, &all[..n], data)
        } else {
            key.seal_parts(&nonce, &tls12_aad(seq, typ, plen), &all[..n], data)
        }
    } else {
        let mut at = 0;
        for p in parts {
            data[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        if tls13 {
            data[plen] = typ;
            key.seal(&nonce, head, data)
        } else {
            key.seal(&nonce, &tls12_aad(seq, typ, plen), data)
        }
    };
    tag_out.copy_from_slice(&tag.ok_or(SealError::Exhausted)?);
    Ok(5 + len)
}

/// Seals bytes `from..from + out.len()` of the record [`seal_record`] would make (the same
/// key, sequence number, type and plaintext) into `out`, alone: a segment of a record is
/// encrypted straight into the frame that carries it, and a segment sent again costs its
/// own bytes, not the record's.
///
/// The header and explicit nonce are written as they are; the ciphertext by the cipher's
/// keystream from the range's offset (AES-GCM's counter, ChaCha20's block and byte). The
/// tag needs the whole ciphertext: `mac` carries its MAC (GHASH, Poly1305) from one range
/// to the next (started by the range holding the first ciphertext byte, advanced by each
/// range that continues where it stopped), and when a range reaches the tag with all of
/// the ciphertext absorbed the tag is made, put in `tag` for later ranges (a
/// retransmission) and `mac` is cleared. `Err(SealError::Whole)` when this range cannot
/// be made alone: AES-GCM without the assembly (a CPU without AES-NI), more than three
/// parts, or the tag is wanted before it is known; [`seal_record`] of the whole record
/// then gives the bytes (and the tag, its last [`TAG_LEN`]).
#[allow(clippy::too_many_arguments)]
pub fn seal_record_range(
    key: &RecordKey,
    seq: u64,
    tls13: bool,
    typ: u8,
    parts: &[&[u8]],
    from: usize,
    out: &mut [u8],
    mac: &mut Option<RangeMac>,
    tag: &mut Option<[u8; TAG_LEN]>,
) -> Result<(), SealError> {
    let plen: usize = parts.iter().map(|p| p.len()).sum();
    let wire = sealed_len(key, tls13, plen);
    if plen > MAX_RECORD_PLAINTEXT || from + out.len() > wire {
        return Err(SealError::TooSmall(wire));
    }
    let to = from + out.len();
    let explicit = wire - 5 - plen - usize::from(tls13) - TAG_LEN;
    let (c0, c1) = (5 + explicit, wire - TAG_LEN);
    let nonce = key.nonce(seq);
    let len = wire - 5;
    let head = [
        if tls13 { CT_APP_DATA } else { typ },
        3,
        3,
        (len >> 8) as u8,
        len as u8,
    ];
    // Copies the bytes of `src`, which lies at record offset `at`, that the range holds.
    let mut put = |src: &[u8], at: usize| {
        let (a, b) = (from.max(at), to.min(at + src.len()));
        if a < b {
            out[a - from..b - from].copy_from_slice(&src[a - at..b - at]);
        }
    };
    put(&head, 0);
    put(&nonce[nonce.len() - explicit..], 5);
    let (a, b) = (from.max(c0), to.min(c1));
    if a < b {
        let typ_byte = [typ];
        let mut all: [&[u8]; 4] = [&[]; 4];
        if parts.len() >= all.len() {
            return Err(SealError::Whole);
        }
        all[..parts.len()].copy_from_slice(parts);
        let n = parts.len() + usize::from(tls13);
        all[parts.len()] = &typ_byte;
        let dst = &mut out[a - from..b - from];
        key.ctr_at(&nonce, &all[..n], a - c0, dst)
            .ok_or(SealError::Whole)?;
        if tag.is_none() {
            if mac.is_none() && a == c0 {
                *mac = if tls13 {
                    key.mac_start(&nonce, &head)
                } else {
                    key.mac_start(&nonce, &tls12_aad(seq, typ, plen))
                };
            }
            if let Some(g) = mac.as_mut() {
                let done = (c0 as u64 + g.absorbed()) as usize;
                if (a..b).contains(&done) {
                    key.mac_update(g, &dst[done - a..]);
                }
            }
        }
    }
    if to > c1 {
        if tag.is_none() {
            match mac.take() {
                Some(g) if c0 as u64 + g.absorbed() == c1 as u64 => {
                    *tag = key.mac_finish(&nonce, g);
                }
                g => {
                    *mac = g;
                    return Err(SealError::Whole);
                }
            }
        }
        let t = tag.ok_or(SealError::Whole)?;
        let (a, b) = (from.max(c1), to);
        out[a - from..b - from].copy_from_slice(&t[a - c1..b - c1]);
    }
    Ok(())
}

/// Opens one whole record (`record`: its header and body) under `key` and sequence number
/// `seq`, decrypting in place; its (inner, in TLS 1.3) content type and plaintext.
/// `DecryptError` when it does not open, `PeerSentOversizedRecord` when its plaintext is
/// longer than 2^14, `InappropriateMessage` for a TLS 1.3 record with no content type.
pub fn open_record<'a>(
    key: &RecordKey,
    seq: u64,
    tls13: bool,
    record: &'a mut [u8],
) -> Result<(u8, &'a [u8]), Error> {
    if record.len() < 5 {
        return Err(Error::DecryptError);
    }
    let (head, body) = record.split_at_mut(5);
    let typ = head[0];
    if tls13 {
        let Some(n) = body.len().checked_sub(TAG_LEN) else {
            return Err(Error::DecryptError);
        };
        let (data, tag) = body.split_at_mut(n);
        if !key.open(&key.nonce(seq), head, data, tag) {
            return Err(Error::DecryptError);
        }
        // TLSInnerPlaintext: content, the type, zero padding (RFC 8446 §5.2).
        let Some(end) = data.iter().rposition(|&b| b != 0) else {
            return Err(unexpected().0);
        };
        if end > MAX_RECORD_PLAINTEXT {
            return Err(Error::PeerSentOversizedRecord);
        }
        return Ok((data[end], &data[..end]));
    }
    let explicit = if key.alg() != Alg::ChaCha20Poly1305 {
        GCM_EXPLICIT_NONCE_LEN
    } else {
        0
    };
    let Some(n) = body.len().checked_sub(explicit + TAG_LEN) else {
        return Err(Error::DecryptError);
    };
    if n > MAX_RECORD_PLAINTEXT {
        return Err(Error::PeerSentOversizedRecord);
    }
    let (nonce_part, rest) = body.split_at_mut(explicit);
    let nonce = match <&[u8; GCM_EXPLICIT_NONCE_LEN]>::try_from(&*nonce_part) {
        Ok(e) => key.nonce_explicit(e),
        Err(_) => key.nonce(seq),
    };
    let (data, tag) = rest.split_at_mut(n);
    if !key.open(&nonce, &tls12_aad(seq, typ, n), data, tag) {
        return Err(Error::DecryptError);
    }
    Ok((typ, data))
}

/// The length of a sealed application-data record of `len` plaintext bytes under `key`.
fn sealed_len(key: &RecordKey, tls13: bool, len: usize) -> usize {
    let explicit = if !tls13 && key.alg() != Alg::ChaCha20Poly1305 {
        GCM_EXPLICIT_NONCE_LEN
    } else {
        0
    };
    5 + explicit + len + usize::from(tls13) + TAG_LEN
}

/// TLS 1.2's additional data: the sequence number and the plaintext's header (RFC 5246
/// §6.2.3.3).
fn tls12_aad(seq: u64, typ: u8, len: usize) -> [u8; 13] {
    let mut a = [0u8; 13];
    a[..8].copy_from_slice(&seq.to_be_bytes());
    a[8] = typ;
    a[9] = 3;
    a[10] = 3;
    a[11..].copy_from_slice(&(len as u16).to_be_bytes());
    a
}

fn unexpected() -> Failure {
    (
        Error::InappropriateMessage {
            expect_types: alloc::vec![ContentType::ApplicationData],
            got_type: ContentType::Unknown(0),
        },
        Some(AlertDescription::UnexpectedMessage),
    )
}

fn decode_error() -> Failure {
    (
        Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        Some(AlertDescription::DecodeError),
    )
}

#[cfg(test)]
mod tests;
