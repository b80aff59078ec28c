//! ACME's HTTP-01 answers (RFC 8555 §8.3) as every core serves them: the key
//! authorization at `/.well-known/acme-challenge/TOKEN`, on plain HTTP and HTTPS, to any
//! client (the CA's validators), while the platform's ACME client has it published.
//!
//! The table is written by one thread (the ACME client's) and read by every core, as a
//! sequence lock over atomic words like the IPv6 link's table (`iface::share6`): no lock,
//! no `unsafe`, no torn read (a reader that overlaps a write reads again, a few times at
//! most, then leaves the request to the site). A CA does not retry a failed validation,
//! so the table must not change while its answer is checked: the ACME client publishes
//! an answer before it asks for validation and withdraws it only after. A request costs
//! one load while nothing is published, and a prefix comparison unless it is for this
//! path. One thread writes (`publish` and `withdraw_all` are the ACME client's alone).

use core::sync::atomic::{fence, AtomicU64, Ordering};

/// The answers' path prefix.
pub const PREFIX: &[u8] = b"/.well-known/acme-challenge/";
/// Answers published at once.
pub const SLOTS: usize = 4;
/// The longest token kept (the ACME client refuses longer ones: 256).
pub const MAX_TOKEN: usize = 256;
/// The longest key authorization kept: a token, a dot, a 43-character thumbprint.
pub const MAX_ANSWER: usize = MAX_TOKEN + 1 + 43;

/// Words of one slot: a word of lengths, then the token's and the answer's bytes.
const SLOT_WORDS: usize = 1 + (MAX_TOKEN + MAX_ANSWER).div_ceil(8);
/// Tries of a reader overlapping writes before it gives up for this request.
const READ_TRIES: usize = 8;

/// Why an answer was not published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishError {
    /// Every slot holds an answer.
    Full,
    /// The token is empty, too long or not base64url, or the answer too long.
    Refused,
}

/// The token a request target asks for: the path after [`PREFIX`], base64url only (a
/// query ignored); `None` for any other target.
pub fn token_of(target: &[u8]) -> Option<&[u8]> {
    let path = target.split(|&b| b == b'?').next()?;
    token_of_bytes(path.strip_prefix(PREFIX)?)
}

/// The published answers.
pub struct Http01 {
    seq: AtomicU64,
    /// How many slots are in use (so an empty table costs readers one load).
    used: AtomicU64,
    words: [AtomicU64; SLOTS * SLOT_WORDS],
}

impl Default for Http01 {
    fn default() -> Self {
        Self::new()
    }
}

impl Http01 {
    /// An empty table.
    pub const fn new() -> Http01 {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        Http01 {
            seq: AtomicU64::new(0),
            used: AtomicU64::new(0),
            words: [ZERO; SLOTS * SLOT_WORDS],
        }
    }

    fn slot(&self, i: usize) -> &[AtomicU64] {
        &self.words[i * SLOT_WORDS..(i + 1) * SLOT_WORDS]
    }

    /// Runs `write` between the sequence's odd and even stores. One writer only.
    fn write(&self, write: impl FnOnce()) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        write();
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Serves `answer` for `token` (replacing one for the same token). Called by the one
    /// thread that publishes.
    pub fn publish(&self, token: &str, answer: &str) -> Result<(), PublishError> {
        if token_of_bytes(token.as_bytes()).is_none() || answer.len() > MAX_ANSWER {
            return Err(PublishError::Refused);
        }
        let mut buf = [0u8; 8 * SLOT_WORDS];
        // The same token's slot (replaced), else a free one. The one writer reads its own
        // writes: no sequence check.
        let i = self
            .find(token.as_bytes(), &mut buf)
            .map(|(i, _, _)| i)
            .or_else(|| (0..SLOTS).find(|&k| self.slot(k)[0].load(Ordering::Relaxed) == 0))
            .ok_or(PublishError::Full)?;
        buf.fill(0);
        buf[..token.len()].copy_from_slice(token.as_bytes());
        buf[token.len()..token.len() + answer.len()].copy_from_slice(answer.as_bytes());
        let lens_word = ((token.len() as u64) << 16) | answer.len() as u64;
        self.write(|| {
            let slot = self.slot(i);
            for (w, chunk) in slot[1..].iter().zip(buf.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(chunk);
                w.store(u64::from_le_bytes(b), Ordering::Relaxed);
            }
            slot[0].store(lens_word, Ordering::Relaxed);
        });
        self.used.store(self.count() as u64, Ordering::Release);
        Ok(())
    }

    fn count(&self) -> usize {
        (0..SLOTS)
            .filter(|&i| self.slot(i)[0].load(Ordering::Relaxed) != 0)
            .count()
    }

    /// Serves nothing any more.
    pub fn withdraw_all(&self) {
        self.write(|| {
            for i in 0..SLOTS {
                self.slot(i)[0].store(0, Ordering::Relaxed);
            }
        });
        self.used.store(0, Ordering::Release);
    }

    /// Copies slot `i`'s bytes (token then answer) into `buf` without the sequence check;
    /// returns the token's length and theirs, `None` for an empty slot (or lengths a torn
    /// read made up).
    fn read_slot(&self, i: usize, buf: &mut [u8; 8 * SLOT_WORDS]) -> Option<(usize, usize)> {
        let slot = self.slot(i);
        let lens = slot[0].load(Ordering::Relaxed);
        let (t, a) = ((lens >> 16) as usize & 0xFFFF, lens as usize & 0xFFFF);
        if lens == 0 || t > MAX_TOKEN || a > MAX_ANSWER {
            return None;
        }
        for (w, chunk) in slot[1..].iter().zip(buf.chunks_exact_mut(8)) {
            chunk.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        Some((t, t + a))
    }

    /// The slot holding `token`, its bytes copied into `buf`: the slot, the token's
    /// length and the bytes' (without the sequence check).
    fn find(&self, token: &[u8], buf: &mut [u8; 8 * SLOT_WORDS]) -> Option<(usize, usize, usize)> {
        (0..SLOTS).find_map(|i| {
            let (t, n) = self.read_slot(i, buf)?;
            (&buf[..t] == token).then_some((i, t, n))
        })
    }

    /// Whether anything is published (one load: the request path's cost when not).
    pub fn any(&self) -> bool {
        self.used.load(Ordering::Acquire) != 0
    }

    /// The answer for `token` copied into `out`: its length, or `None` if none is
    /// published (or writes kept overlapping the read).
    pub fn answer(&self, token: &[u8], out: &mut [u8]) -> Option<usize> {
        if !self.any() {
            return None;
        }
        let mut buf = [0u8; 8 * SLOT_WORDS];
        for _ in 0..READ_TRIES {
            let s = self.seq.load(Ordering::Acquire);
            if s % 2 == 1 {
                core::hint::spin_loop();
                continue;
            }
            let found = self.find(token, &mut buf);
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) != s {
                continue;
            }
            let (_, t, n) = found?;
            let answer = &buf[t..n];
            out.get_mut(..answer.len())?.copy_from_slice(answer);
            return Some(answer.len());
        }
        None
    }
}

/// `t` if it is a token: base64url, 1 to [`MAX_TOKEN`] characters.
fn token_of_bytes(t: &[u8]) -> Option<&[u8]> {
    let ok = !t.is_empty()
        && t.len() <= MAX_TOKEN
        && t.iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    ok.then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "vqjo61Y5ozTrXwYkiYrsr2q90SutyD_H3S3bGVaGYjw";

    #[test]
    fn targets() {
        let t = format!("/.well-known/acme-challenge/{TOKEN}");
        assert_eq!(token_of(t.as_bytes()), Some(TOKEN.as_bytes()));
        assert_eq!(
            token_of(format!("{t}?x=1").as_bytes()),
            Some(TOKEN.as_bytes())
        );
        for bad in [
            "/.well-known/acme-challenge/",
            "/.well-known/acme-challenge/../etc",
            "/.well-known/acme-challenge/a/b",
            "/.well-known/acme-challenge/a.b",
            "/index.html",
        ] {
            assert_eq!(token_of(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn published_answered_replaced_withdrawn() {
        let t = Http01::new();
        let mut out = [0u8; 512];
        assert!(!t.any());
        assert_eq!(t.answer(TOKEN.as_bytes(), &mut out), None);
        let ka = format!("{TOKEN}.6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM");
        t.publish(TOKEN, &ka).unwrap();
        assert!(t.any());
        let n = t.answer(TOKEN.as_bytes(), &mut out).unwrap();
        assert_eq!(&out[..n], ka.as_bytes());
        assert_eq!(t.answer(b"other", &mut out), None);
        // The same token again replaces; others fill the slots, a fifth is refused.
        t.publish(TOKEN, "second").unwrap();
        let n = t.answer(TOKEN.as_bytes(), &mut out).unwrap();
        assert_eq!(&out[..n], b"second");
        for k in 1..SLOTS {
            t.publish(&format!("tok{k}"), &format!("ans{k}")).unwrap();
        }
        assert_eq!(t.publish("tok9", "x"), Err(PublishError::Full));
        assert_eq!(t.publish("bad/token", "x"), Err(PublishError::Refused));
        assert_eq!(
            t.publish("t", &"a".repeat(MAX_ANSWER + 1)),
            Err(PublishError::Refused)
        );
        let long = "a".repeat(MAX_TOKEN);
        t.withdraw_all();
        assert!(!t.any());
        t.publish(&long, &"b".repeat(MAX_ANSWER)).unwrap();
        let n = t.answer(long.as_bytes(), &mut out).unwrap();
        assert_eq!(&out[..n], "b".repeat(MAX_ANSWER).as_bytes());
        assert_eq!(t.answer(TOKEN.as_bytes(), &mut out), None);
        // An output too small: no answer rather than a cut one.
        assert_eq!(t.answer(long.as_bytes(), &mut out[..10]), None);
    }

    #[test]
    fn readers_on_other_threads_never_see_a_torn_answer() {
        use std::sync::atomic::AtomicBool;
        static TABLE: Http01 = Http01::new();
        static STOP: AtomicBool = AtomicBool::new(false);
        let answers = ["a".repeat(200), "b".repeat(7), "c".repeat(MAX_ANSWER)];
        let readers: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut out = [0u8; 512];
                    let mut seen = 0;
                    while !STOP.load(Ordering::Relaxed) {
                        if let Some(n) = TABLE.answer(b"tok", &mut out) {
                            let first = out[0];
                            assert!(out[..n].iter().all(|&b| b == first), "torn");
                            assert!(matches!(
                                (first, n),
                                (b'a', 200) | (b'b', 7) | (b'c', MAX_ANSWER)
                            ));
                            seen += 1;
                        }
                    }
                    seen
                })
            })
            .collect();
        for k in 0..20_000 {
            TABLE.publish("tok", &answers[k % 3]).unwrap();
        }
        STOP.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    }
}

/// Where the platform's ACME client stands, for the stats page and `/metrics` (the
/// console has the words, failures' reasons included): single words the client stores
/// and the pages load, each on its own (a page may show a phase one step older than the
/// times beside it).
#[derive(Debug, Default)]
pub struct Issuance {
    phase: AtomicU64,
    not_after: AtomicU64,
    next: AtomicU64,
    failures: AtomicU64,
    installed: AtomicU64,
}

/// What the pages show of [`Issuance`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssuanceNow {
    /// What the client is doing ([`PHASES`]).
    pub phase: &'static str,
    /// The certificate served: its notAfter (Unix seconds; 0: none yet).
    pub not_after: u64,
    /// The next attempt (renewal or retry; Unix seconds; 0: one runs now).
    pub next: u64,
    /// Failures since the last certificate.
    pub failures: u64,
    /// Certificates installed since start (a kept one put in service counts).
    pub installed: u64,
}

/// The order's phases as the client names them (`bareweb_acme::order::Status::phase`);
/// another name shows as the first.
pub const PHASES: [&str; 10] = [
    "idle",
    "reading the directory",
    "registering the account",
    "placing the order",
    "answering the challenges",
    "waiting for validation",
    "waiting for the order to be ready",
    "finalizing",
    "waiting for issuance",
    "downloading the certificate",
];

impl Issuance {
    /// Nothing yet.
    pub const fn new() -> Issuance {
        Issuance {
            phase: AtomicU64::new(0),
            not_after: AtomicU64::new(0),
            next: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            installed: AtomicU64::new(0),
        }
    }

    /// The client's state now (the client alone calls this).
    pub fn publish(&self, phase: &str, not_after: u64, next: u64, failures: u64) {
        let i = PHASES.iter().position(|p| *p == phase).unwrap_or(0);
        self.phase.store(i as u64, Ordering::Relaxed);
        self.not_after.store(not_after, Ordering::Relaxed);
        self.next.store(next, Ordering::Relaxed);
        self.failures.store(failures, Ordering::Relaxed);
    }

    /// A certificate was put in service.
    pub fn installed(&self) {
        self.installed.fetch_add(1, Ordering::Relaxed);
    }

    /// What the pages show.
    pub fn now(&self) -> IssuanceNow {
        let phase = self.phase.load(Ordering::Relaxed) as usize;
        IssuanceNow {
            phase: PHASES.get(phase).copied().unwrap_or(PHASES[0]),
            not_after: self.not_after.load(Ordering::Relaxed),
            next: self.next.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            installed: self.installed.load(Ordering::Relaxed),
        }
    }
}
