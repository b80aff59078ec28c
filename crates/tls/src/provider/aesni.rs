//! AES-128-GCM and AES-256-GCM (NIST SP 800-38D, 96-bit IVs) with the x86-64 AES-NI and
//! PCLMULQDQ instructions, in assembly, for the host and the bare-machine kernel alike.
//!
//! Why assembly: the kernel's target (x86_64-unknown-none) is soft-float, so no crate can reach
//! these instructions there (`cpufeatures` reports none on `target_os = "none"`, and SIMD
//! intrinsics fail to compile on a soft-float target). Naked functions whose bodies are
//! legacy-SSE encodings (no VEX: the kernel enables SSE but not AVX state) assemble and run on
//! both targets. Kernel code is soft-float, so nothing else holds XMM registers there.
//!
//! What it does:
//! - key expansion by `aeskeygenassist` (no table S-box: constant time);
//! - GHASH computed as POLYVAL over byte-reversed blocks (RFC 8452 Appendix A), with the
//!   powers H^1..H^8 precomputed per key and one Montgomery reduction per 8 blocks;
//! - CTR over 8 blocks per iteration, 32-bit big-endian counter (`inc32`);
//! - sealing runs CTR then GHASH over each 1 KiB chunk while it is in L1; opening
//!   authenticates the whole ciphertext first and decrypts only if the tag matches
//!   (compared without an early exit), so unauthenticated plaintext never exists.
//!
//! The assembly is Intel syntax (Rust's default) in `naked_asm!` bodies (Rust-mangled
//! symbols: two copies of this crate in one link never clash). [`available`] reads CPUID
//! once (AES, PCLMULQDQ, SSSE3) and caches the answer; callers use the `aes-gcm` crate when it
//! says no.

use core::arch::naked_asm;
use core::sync::atomic::{AtomicU8, Ordering};

/// 16-byte-aligned blocks: the assembly uses aligned legacy-SSE memory operands on them.
#[repr(C, align(16))]
#[derive(Clone)]
struct Blocks<const N: usize>([[u8; 16]; N]);

/// An expanded AES-GCM key: round keys and the GHASH key's powers. Zeroed on drop.
#[derive(Clone)]
pub struct AesGcm {
    /// Round keys 0..=rounds (11 for AES-128, 15 for AES-256).
    rk: Blocks<15>,
    /// 10 (AES-128) or 14 (AES-256).
    rounds: u64,
    /// H^1..H^8 in POLYVAL form (`mulX_POLYVAL(ByteReverse(H))` and its powers).
    htable: Blocks<8>,
}

/// The tag length.
pub const TAG_LEN: usize = 16;
/// The nonce length (96-bit IVs only).
pub const NONCE_LEN: usize = 12;
/// The longest plaintext GCM allows with a 96-bit IV: 2^32 - 2 blocks.
const MAX_LEN: u64 = ((1 << 32) - 2) * 16;
/// Bytes per CTR-then-GHASH step when sealing: small enough to stay in L1.
const CHUNK: usize = 1024;

const UNKNOWN: u8 = 0;
const ABSENT: u8 = 1;
const PRESENT: u8 = 2;
static CPU: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether this CPU has AES-NI, PCLMULQDQ and SSSE3 (CPUID.1:ECX bits 25, 1, 9); asked once,
/// then cached (a race only asks twice).
pub fn available() -> bool {
    match CPU.load(Ordering::Relaxed) {
        PRESENT => true,
        ABSENT => false,
        _ => {
            // CPUID leaf 1 exists on every x86-64 CPU.
            let ecx = core::arch::x86_64::__cpuid(1).ecx;
            let want = (1 << 25) | (1 << 1) | (1 << 9);
            let yes = ecx & want == want;
            CPU.store(if yes { PRESENT } else { ABSENT }, Ordering::Relaxed);
            yes
        }
    }
}

/// The open failed: the tag did not match (the buffer still holds the ciphertext), or the
/// lengths were out of GCM's range.
#[derive(Debug, PartialEq, Eq)]
pub struct Error;

/// A GHASH under way ([`AesGcm::ghash_start`]): the POLYVAL state, a partial block waiting
/// for the rest of its bytes, and the lengths for the final block. Wiped on drop.
#[derive(Clone)]
pub struct Ghash {
    s: [u8; 16],
    pend: [u8; 16],
    pend_len: usize,
    aad_len: u64,
    len: u64,
}

impl Ghash {
    /// Ciphertext bytes absorbed so far.
    pub fn absorbed(&self) -> u64 {
        self.len
    }
}

impl Drop for Ghash {
    fn drop(&mut self) {
        wipe(&mut self.s);
        wipe(&mut self.pend);
    }
}

impl AesGcm {
    /// Expands a 16- or 32-byte key; `None` for another length or a CPU without the
    /// instructions ([`available`]).
    // One copy for the eight record-cipher types that call it (kernel size).
    #[inline(never)]
    pub fn new(key: &[u8]) -> Option<Self> {
        if !available() {
            return None;
        }
        let mut k = AesGcm {
            rk: Blocks([[0; 16]; 15]),
            rounds: 0,
            htable: Blocks([[0; 16]; 8]),
        };
        match key.len() {
            // SAFETY: `available` confirmed AES-NI; the key has the length each reads and
            // `rk` holds the 11 or 15 round keys each writes.
            16 => unsafe { expand128(key.as_ptr(), k.rk.0.as_mut_ptr().cast()) },
            // SAFETY: as above.
            32 => unsafe { expand256(key.as_ptr(), k.rk.0.as_mut_ptr().cast()) },
            _ => return None,
        }
        k.rounds = if key.len() == 16 { 10 } else { 14 };
        let mut h = [0u8; 16];
        k.encrypt_block(&mut h);
        // POLYVAL's key for GHASH's H: mulX_POLYVAL(ByteReverse(H)) (RFC 8452 Appendix A),
        // computed without a branch on the key.
        let x = u128::from_be_bytes(h);
        let carry = 0u128.wrapping_sub(x >> 127);
        let hp = (x << 1) ^ (carry & 0xc200_0000_0000_0000_0000_0000_0000_0001);
        k.htable.0[0] = hp.to_le_bytes();
        // SAFETY: PCLMULQDQ is present (`available`); `htable` is 16-byte aligned and holds
        // the 8 blocks the function reads (the first) and writes (the other seven).
        unsafe { powers(k.htable.0.as_mut_ptr().cast()) };
        wipe(&mut h);
        Some(k)
    }

    fn encrypt_block(&self, block: &mut [u8; 16]) {
        // SAFETY: the key exists only if `available` (AES-NI); `rk` is aligned and holds
        // `rounds + 1` round keys; `block` is 16 writable bytes.
        unsafe { aes_block(self.rk.0.as_ptr().cast(), self.rounds, block.as_mut_ptr()) }
    }

    /// XORs the keystream from counter block `ctr` into `data` (whole blocks; a partial last
    /// block goes through a padded copy) and advances `ctr`.
    fn ctr(&self, ctr: &mut [u8; 16], data: &mut [u8]) {
        let whole = data.len() / 16;
        if whole > 0 {
            // SAFETY: AES-NI and SSSE3 are present (the key exists); `rk` is aligned and
            // holds `rounds + 1` keys; `data` has `whole * 16` bytes read and written.
            unsafe {
                let p = data.as_mut_ptr();
                ctr32(
                    self.rk.0.as_ptr().cast(),
                    self.rounds,
                    ctr.as_mut_ptr(),
                    p,
                    whole as u64,
                    p,
                )
            };
        }
        let tail = &mut data[whole * 16..];
        if !tail.is_empty() {
            let mut ks = [0u8; 16];
            self.keystream(ctr, &mut ks);
            for (d, k) in tail.iter_mut().zip(ks) {
                *d ^= k;
            }
            wipe(&mut ks);
        }
    }

    /// Absorbs `data` into the POLYVAL state `s`, zero-padding a partial last block.
    fn ghash(&self, s: &mut [u8; 16], data: &[u8]) {
        let whole = data.len() / 16;
        if whole > 0 {
            // SAFETY: PCLMULQDQ and SSSE3 are present (the key exists); `htable` is aligned
            // with 8 powers; `data` has `whole * 16` readable bytes.
            unsafe {
                ghash(
                    self.htable.0.as_ptr().cast(),
                    s.as_mut_ptr(),
                    data.as_ptr(),
                    whole as u64,
                )
            };
        }
        let tail = &data[whole * 16..];
        if !tail.is_empty() {
            let mut b = [0u8; 16];
            b[..tail.len()].copy_from_slice(tail);
            // SAFETY: as above, one block in `b`.
            unsafe { ghash(self.htable.0.as_ptr().cast(), s.as_mut_ptr(), b.as_ptr(), 1) };
            wipe(&mut b);
        }
    }

    /// The counter block J0 = IV || 1 and the tag from the POLYVAL state and lengths.
    fn tag(
        &self,
        nonce: &[u8; NONCE_LEN],
        mut s: [u8; 16],
        aad_len: usize,
        len: usize,
    ) -> [u8; 16] {
        let mut lens = [0u8; 16];
        lens[..8].copy_from_slice(&(aad_len as u64 * 8).to_be_bytes());
        lens[8..].copy_from_slice(&(len as u64 * 8).to_be_bytes());
        self.ghash(&mut s, &lens);
        let mut j0 = j0(nonce);
        self.encrypt_block(&mut j0);
        let mut t = [0u8; 16];
        for i in 0..16 {
            // GHASH = ByteReverse(POLYVAL state).
            t[i] = s[15 - i] ^ j0[i];
        }
        wipe(&mut s);
        wipe(&mut j0);
        t
    }

    /// Encrypts `data` in place; returns the tag.
    // One copy for the eight record-cipher types that call it (kernel size).
    #[inline(never)]
    pub fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
    ) -> Result<[u8; 16], Error> {
        check_lengths(aad, data)?;
        let mut s = [0u8; 16];
        self.ghash(&mut s, aad);
        let mut ctr = j0(nonce);
        ctr[15] = 2;
        for chunk in data.chunks_mut(CHUNK) {
            self.ctr(&mut ctr, chunk);
            self.ghash(&mut s, chunk);
        }
        Ok(self.tag(nonce, s, aad.len(), data.len()))
    }

    /// Encrypts the concatenation of `parts` into `dst` (exactly as long), reading each part
    /// where it lies (no copy of the plaintext first); returns the tag. The same bytes and
    /// tag as [`AesGcm::seal`] of the parts joined.
    #[inline(never)]
    pub fn seal_parts(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        parts: &[&[u8]],
        dst: &mut [u8],
    ) -> Result<[u8; 16], Error> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total != dst.len() {
            return Err(Error);
        }
        check_lengths(aad, dst)?;
        self.ctr_at(nonce, parts, 0, dst)?;
        let mut g = self.ghash_start(aad);
        self.ghash_update(&mut g, dst);
        Ok(self.ghash_finish(nonce, g))
    }

    /// Encrypts bytes `at..at + dst.len()` of the message `parts` joined into `dst`: the
    /// ciphertext GCM gives those bytes (counter block `2 + at / 16`, the keystream from
    /// byte `at % 16` of it), each part read where it lies. Any range of a message can be
    /// made alone, in any order (a segment of a record, sent again); the tag needs the
    /// whole ciphertext ([`AesGcm::ghash_update`]). `Err` when the parts are shorter than
    /// the range or the message longer than GCM allows.
    #[inline(never)]
    pub fn ctr_at(
        &self,
        nonce: &[u8; NONCE_LEN],
        parts: &[&[u8]],
        at: usize,
        dst: &mut [u8],
    ) -> Result<(), Error> {
        let end = at.checked_add(dst.len()).ok_or(Error)?;
        if end as u64 > MAX_LEN || at as u64 >= MAX_LEN {
            return Err(Error);
        }
        let mut ctr = j0(nonce);
        ctr[12..].copy_from_slice(&(2 + (at / 16) as u32).to_be_bytes());
        // Keystream left over from a block the range or a part starts or ends inside, and
        // how much of it is used.
        let mut ks = [0u8; 16];
        let mut used = 16;
        if !at.is_multiple_of(16) {
            self.keystream(&mut ctr, &mut ks);
            used = at % 16;
        }
        let mut w = 0;
        for part in super::aead::parts_in(parts, at, dst.len()) {
            let out = &mut dst[w..w + part.len()];
            w += part.len();
            let mut i = 0;
            while used < 16 && i < part.len() {
                out[i] = part[i] ^ ks[used];
                used += 1;
                i += 1;
            }
            let whole = (part.len() - i) / 16;
            if whole > 0 {
                // SAFETY: AES-NI and SSSE3 are present (the key exists); `rk` is aligned
                // and holds `rounds + 1` keys; `whole * 16` bytes are read from the part
                // and written to `out`, two distinct slices (one borrowed, one mutable).
                unsafe {
                    ctr32(
                        self.rk.0.as_ptr().cast(),
                        self.rounds,
                        ctr.as_mut_ptr(),
                        out[i..].as_mut_ptr(),
                        whole as u64,
                        part[i..].as_ptr(),
                    )
                };
                i += whole * 16;
            }
            if i < part.len() {
                // A block this part ends inside: its keystream, the rest kept for the next.
                self.keystream(&mut ctr, &mut ks);
                used = 0;
                while i < part.len() {
                    out[i] = part[i] ^ ks[used];
                    used += 1;
                    i += 1;
                }
            }
        }
        wipe(&mut ks);
        if w != dst.len() {
            return Err(Error);
        }
        Ok(())
    }

    /// The keystream block of counter block `ctr` into `ks`; `ctr` moves on.
    fn keystream(&self, ctr: &mut [u8; 16], ks: &mut [u8; 16]) {
        *ks = [0u8; 16];
        // SAFETY: AES-NI and SSSE3 are present (the key exists); `rk` is aligned and holds
        // `rounds + 1` keys; one block in `ks`, in place.
        unsafe {
            let p = ks.as_mut_ptr();
            ctr32(
                self.rk.0.as_ptr().cast(),
                self.rounds,
                ctr.as_mut_ptr(),
                p,
                1,
                p,
            )
        };
    }

    /// A GHASH over `aad` (zero-padded), to which the ciphertext is then given in pieces of
    /// any length ([`AesGcm::ghash_update`]) and the tag taken ([`AesGcm::ghash_finish`]).
    pub fn ghash_start(&self, aad: &[u8]) -> Ghash {
        let mut g = Ghash {
            s: [0; 16],
            pend: [0; 16],
            pend_len: 0,
            aad_len: aad.len() as u64,
            len: 0,
        };
        self.ghash(&mut g.s, aad);
        g
    }

    /// Absorbs the next `data` bytes of the ciphertext (a piece of any length: a partial
    /// block waits in `g` for the rest of it).
    pub fn ghash_update(&self, g: &mut Ghash, mut data: &[u8]) {
        g.len += data.len() as u64;
        if g.pend_len > 0 {
            let n = (16 - g.pend_len).min(data.len());
            g.pend[g.pend_len..g.pend_len + n].copy_from_slice(&data[..n]);
            g.pend_len += n;
            data = &data[n..];
            if g.pend_len < 16 {
                return;
            }
            let b = g.pend;
            self.ghash(&mut g.s, &b);
            g.pend_len = 0;
        }
        let whole = data.len() / 16 * 16;
        self.ghash(&mut g.s, &data[..whole]);
        let tail = &data[whole..];
        g.pend[..tail.len()].copy_from_slice(tail);
        g.pend_len = tail.len();
    }

    /// The tag of the message sealed under `nonce` whose ciphertext `g` has absorbed.
    pub fn ghash_finish(&self, nonce: &[u8; NONCE_LEN], mut g: Ghash) -> [u8; 16] {
        if g.pend_len > 0 {
            let (b, n) = (g.pend, g.pend_len);
            self.ghash(&mut g.s, &b[..n]);
        }
        self.tag(nonce, g.s, g.aad_len as usize, g.len as usize)
    }

    /// Checks `tag` over `aad` and the ciphertext `data`, then decrypts `data` in place; on a
    /// mismatch `data` is left as it was (ciphertext) and the result is `Err`.
    // One copy for the eight record-cipher types that call it (kernel size).
    #[inline(never)]
    pub fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        data: &mut [u8],
        tag: &[u8],
    ) -> Result<(), Error> {
        check_lengths(aad, data)?;
        if tag.len() != TAG_LEN {
            return Err(Error);
        }
        let mut s = [0u8; 16];
        self.ghash(&mut s, aad);
        self.ghash(&mut s, data);
        let want = self.tag(nonce, s, aad.len(), data.len());
        let mut diff = 0u8;
        for (a, b) in want.iter().zip(tag) {
            diff |= a ^ b;
        }
        if core::hint::black_box(diff) != 0 {
            return Err(Error);
        }
        let mut ctr = j0(nonce);
        ctr[15] = 2;
        self.ctr(&mut ctr, data);
        Ok(())
    }
}

fn check_lengths(aad: &[u8], data: &[u8]) -> Result<(), Error> {
    if data.len() as u64 > MAX_LEN || aad.len() as u64 >= 1 << 61 {
        return Err(Error);
    }
    Ok(())
}

fn j0(nonce: &[u8; NONCE_LEN]) -> [u8; 16] {
    let mut j = [0u8; 16];
    j[..NONCE_LEN].copy_from_slice(nonce);
    j[15] = 1;
    j
}

/// Overwrites key-dependent bytes so that the write is not optimised away.
fn wipe<const N: usize>(b: &mut [u8; N]) {
    for x in b.iter_mut() {
        // SAFETY: `x` is a valid, aligned `u8` place borrowed mutably.
        unsafe { core::ptr::write_volatile(x, 0) };
    }
    core::sync::atomic::compiler_fence(Ordering::SeqCst);
}

impl Drop for AesGcm {
    fn drop(&mut self) {
        for b in self.rk.0.iter_mut().chain(self.htable.0.iter_mut()) {
            wipe(b);
        }
    }
}

// The assembly. System V calling convention on both targets (`extern "sysv64"`); every XMM
// register is caller-saved there, so the bodies use any of xmm0..xmm15 freely. Labels are
// numeric (local) and avoid 0 and 1 (binary literals in Intel syntax).

/// One AES-128 key-schedule step: xmm1 = previous round key, xmm2 = `aeskeygenassist` output.
macro_rules! expand128_step {
    ($rcon:literal, $off:literal) => {
        concat!(
            "aeskeygenassist xmm2, xmm1, ",
            $rcon,
            "\n",
            "pshufd xmm2, xmm2, 0xff\n",
            "movdqa xmm3, xmm1\n",
            "pslldq xmm3, 4\n",
            "pxor xmm1, xmm3\n",
            "pslldq xmm3, 4\n",
            "pxor xmm1, xmm3\n",
            "pslldq xmm3, 4\n",
            "pxor xmm1, xmm3\n",
            "pxor xmm1, xmm2\n",
            "movdqu [rsi + ",
            $off,
            "], xmm1\n",
        )
    };
}

/// AES-128 key expansion: rdi = 16-byte key, rsi = 11 round keys out.
#[unsafe(naked)]
unsafe extern "sysv64" fn expand128(_key: *const u8, _rk: *mut u8) {
    naked_asm!(
        "movdqu xmm1, [rdi]",
        "movdqu [rsi], xmm1",
        expand128_step!("0x01", "16"),
        expand128_step!("0x02", "32"),
        expand128_step!("0x04", "48"),
        expand128_step!("0x08", "64"),
        expand128_step!("0x10", "80"),
        expand128_step!("0x20", "96"),
        expand128_step!("0x40", "112"),
        expand128_step!("0x80", "128"),
        expand128_step!("0x1b", "144"),
        expand128_step!("0x36", "160"),
        "ret",
    )
}

/// xmm1 (even round key) ^= its shifted copies and the broadcast SubWord(RotWord) ^ rcon.
macro_rules! expand256_even {
    ($rcon:literal, $off:literal) => {
        concat!(
            "aeskeygenassist xmm2, xmm3, ",
            $rcon,
            "\n",
            "pshufd xmm2, xmm2, 0xff\n",
            "movdqa xmm4, xmm1\n",
            "pslldq xmm4, 4\n",
            "pxor xmm1, xmm4\n",
            "pslldq xmm4, 4\n",
            "pxor xmm1, xmm4\n",
            "pslldq xmm4, 4\n",
            "pxor xmm1, xmm4\n",
            "pxor xmm1, xmm2\n",
            "movdqu [rsi + ",
            $off,
            "], xmm1\n",
        )
    };
}

/// xmm3 (odd round key) ^= its shifted copies and the broadcast SubWord of xmm1's last word.
macro_rules! expand256_odd {
    ($off:literal) => {
        concat!(
            "aeskeygenassist xmm2, xmm1, 0\n",
            "pshufd xmm2, xmm2, 0xaa\n",
            "movdqa xmm4, xmm3\n",
            "pslldq xmm4, 4\n",
            "pxor xmm3, xmm4\n",
            "pslldq xmm4, 4\n",
            "pxor xmm3, xmm4\n",
            "pslldq xmm4, 4\n",
            "pxor xmm3, xmm4\n",
            "pxor xmm3, xmm2\n",
            "movdqu [rsi + ",
            $off,
            "], xmm3\n",
        )
    };
}

/// AES-256 key expansion: rdi = 32-byte key, rsi = 15 round keys out.
#[unsafe(naked)]
unsafe extern "sysv64" fn expand256(_key: *const u8, _rk: *mut u8) {
    naked_asm!(
        "movdqu xmm1, [rdi]",
        "movdqu xmm3, [rdi + 16]",
        "movdqu [rsi], xmm1",
        "movdqu [rsi + 16], xmm3",
        expand256_even!("0x01", "32"),
        expand256_odd!("48"),
        expand256_even!("0x02", "64"),
        expand256_odd!("80"),
        expand256_even!("0x04", "96"),
        expand256_odd!("112"),
        expand256_even!("0x08", "128"),
        expand256_odd!("144"),
        expand256_even!("0x10", "160"),
        expand256_odd!("176"),
        expand256_even!("0x20", "192"),
        expand256_odd!("208"),
        expand256_even!("0x40", "224"),
        "ret",
    )
}

/// Encrypts one block in place: rdi = aligned round keys, rsi = rounds, rdx = block.
#[unsafe(naked)]
unsafe extern "sysv64" fn aes_block(_rk: *const u8, _rounds: u64, _block: *mut u8) {
    naked_asm!(
        "movdqu xmm0, [rdx]",
        "pxor xmm0, [rdi]",
        "lea rax, [rdi + 16]",
        "lea rcx, [rsi - 1]",
        "2:",
        "aesenc xmm0, [rax]",
        "add rax, 16",
        "dec rcx",
        "jnz 2b",
        "aesenclast xmm0, [rax]",
        "movdqu [rdx], xmm0",
        "pxor xmm0, xmm0",
        "ret",
    )
}

/// Loads the 16-byte reversal mask for `pshufb` into `$x` (clobbers rax and `$t`).
macro_rules! bswap_mask {
    ($x:literal, $t:literal) => {
        concat!(
            "mov rax, 0x08090a0b0c0d0e0f\n",
            "movq ",
            $x,
            ", rax\n",
            "mov rax, 0x0001020304050607\n",
            "movq ",
            $t,
            ", rax\n",
            "punpcklqdq ",
            $x,
            ", ",
            $t,
            "\n",
        )
    };
}

/// Counter block `$x` from the reversed counter xmm9, then increments it (xmm11 = 1).
macro_rules! next_ctr {
    ($x:literal) => {
        concat!(
            "movdqa ",
            $x,
            ", xmm9\n",
            "paddd xmm9, xmm11\n",
            "pshufb ",
            $x,
            ", xmm10\n",
        )
    };
}

/// One AES round (`$op` = aesenc / aesenclast / pxor) with xmm8 over xmm0..xmm7.
macro_rules! round8 {
    ($op:literal) => {
        concat!(
            $op,
            " xmm0, xmm8\n",
            $op,
            " xmm1, xmm8\n",
            $op,
            " xmm2, xmm8\n",
            $op,
            " xmm3, xmm8\n",
            $op,
            " xmm4, xmm8\n",
            $op,
            " xmm5, xmm8\n",
            $op,
            " xmm6, xmm8\n",
            $op,
            " xmm7, xmm8\n",
        )
    };
}

/// XORs keystream block `$x` with the source at r9 + `$off` into the destination at rcx +
/// `$off`.
macro_rules! xor_out {
    ($x:literal, $off:literal) => {
        concat!(
            "movdqu xmm8, [r9 + ",
            $off,
            "]\n",
            "pxor ",
            $x,
            ", xmm8\n",
            "movdqu [rcx + ",
            $off,
            "], ",
            $x,
            "\n",
        )
    };
}

/// CTR mode: rdi = aligned round keys, rsi = rounds, rdx = counter block (read, then
/// advanced by `blocks`; the low 32 bits big-endian, wrapping as `inc32`), rcx =
/// destination, r8 = number of whole blocks, r9 = source (the destination itself for in
/// place; else not overlapping it). Eight blocks per iteration, then one at a time.
#[unsafe(naked)]
unsafe extern "sysv64" fn ctr32(
    _rk: *const u8,
    _rounds: u64,
    _ctr: *mut u8,
    _dst: *mut u8,
    _blocks: u64,
    _src: *const u8,
) {
    naked_asm!(
        bswap_mask!("xmm10", "xmm11"),
        "mov eax, 1",
        "movd xmm11, eax",
        // xmm9: the counter block reversed, so its 32-bit counter is dword 0, little-endian.
        "movdqu xmm9, [rdx]",
        "pshufb xmm9, xmm10",
        "cmp r8, 8",
        "jb 3f",
        "2:",
        next_ctr!("xmm0"),
        next_ctr!("xmm1"),
        next_ctr!("xmm2"),
        next_ctr!("xmm3"),
        next_ctr!("xmm4"),
        next_ctr!("xmm5"),
        next_ctr!("xmm6"),
        next_ctr!("xmm7"),
        "movdqa xmm8, [rdi]",
        round8!("pxor"),
        "lea rax, [rdi + 16]",
        "lea r10, [rsi - 1]",
        "4:",
        "movdqa xmm8, [rax]",
        round8!("aesenc"),
        "add rax, 16",
        "dec r10",
        "jnz 4b",
        "movdqa xmm8, [rax]",
        round8!("aesenclast"),
        xor_out!("xmm0", "0"),
        xor_out!("xmm1", "16"),
        xor_out!("xmm2", "32"),
        xor_out!("xmm3", "48"),
        xor_out!("xmm4", "64"),
        xor_out!("xmm5", "80"),
        xor_out!("xmm6", "96"),
        xor_out!("xmm7", "112"),
        "add rcx, 128",
        "add r9, 128",
        "sub r8, 8",
        "cmp r8, 8",
        "jae 2b",
        "3:",
        "test r8, r8",
        "jz 6f",
        "5:",
        next_ctr!("xmm0"),
        "pxor xmm0, [rdi]",
        "lea rax, [rdi + 16]",
        "lea r10, [rsi - 1]",
        "7:",
        "aesenc xmm0, [rax]",
        "add rax, 16",
        "dec r10",
        "jnz 7b",
        "aesenclast xmm0, [rax]",
        xor_out!("xmm0", "0"),
        "add rcx, 16",
        "add r9, 16",
        "dec r8",
        "jnz 5b",
        "6:",
        "pshufb xmm9, xmm10",
        "movdqu [rdx], xmm9",
        // Leave no keystream in registers.
        "pxor xmm0, xmm0",
        "pxor xmm1, xmm1",
        "pxor xmm2, xmm2",
        "pxor xmm3, xmm3",
        "pxor xmm4, xmm4",
        "pxor xmm5, xmm5",
        "pxor xmm6, xmm6",
        "pxor xmm7, xmm7",
        "pxor xmm8, xmm8",
        "ret",
    )
}

/// The POLYVAL constant into xmm14: x^63 + x^62 + x^57 (0xc2 << 56) high, 1 low.
macro_rules! poly {
    () => {
        concat!(
            "mov rax, 1\n",
            "movq xmm14, rax\n",
            "mov rax, 0xc200000000000000\n",
            "movq xmm13, rax\n",
            "punpcklqdq xmm14, xmm13\n",
        )
    };
}

/// Accumulates the 256-bit product xmm4 * `$h` into xmm1 (low), xmm2 (high), xmm3 (middle);
/// clobbers xmm4, xmm6.
macro_rules! mul_acc {
    ($h:literal) => {
        concat!(
            "movdqa xmm6, xmm4\n",
            "pclmulqdq xmm6, ",
            $h,
            ", 0x00\n",
            "pxor xmm1, xmm6\n",
            "movdqa xmm6, xmm4\n",
            "pclmulqdq xmm6, ",
            $h,
            ", 0x11\n",
            "pxor xmm2, xmm6\n",
            "movdqa xmm6, xmm4\n",
            "pclmulqdq xmm6, ",
            $h,
            ", 0x01\n",
            "pxor xmm3, xmm6\n",
            "pclmulqdq xmm4, ",
            $h,
            ", 0x10\n",
            "pxor xmm3, xmm4\n",
        )
    };
}

/// Folds the middle term into xmm1:xmm2 and reduces (POLYVAL's Montgomery reduction, two
/// multiplications by xmm14) into xmm0.
macro_rules! reduce {
    () => {
        concat!(
            "movdqa xmm4, xmm3\n",
            "pslldq xmm4, 8\n",
            "pxor xmm1, xmm4\n",
            "psrldq xmm3, 8\n",
            "pxor xmm2, xmm3\n",
            "movdqa xmm4, xmm1\n",
            "pclmulqdq xmm4, xmm14, 0x10\n",
            "pshufd xmm1, xmm1, 0x4e\n",
            "pxor xmm1, xmm4\n",
            "movdqa xmm4, xmm1\n",
            "pclmulqdq xmm4, xmm14, 0x10\n",
            "pshufd xmm1, xmm1, 0x4e\n",
            "pxor xmm1, xmm4\n",
            "pxor xmm1, xmm2\n",
            "movdqa xmm0, xmm1\n",
        )
    };
}

/// Zeroes the three accumulators.
macro_rules! clear_acc {
    () => {
        "pxor xmm1, xmm1\npxor xmm2, xmm2\npxor xmm3, xmm3\n"
    };
}

/// Block `$i` (of 8) at rdx, byte-reversed, times H^(8 - i) from the table at rdi.
macro_rules! ghash_block {
    ($off:literal, $hoff:literal) => {
        concat!(
            "movdqu xmm4, [rdx + ",
            $off,
            "]\n",
            "pshufb xmm4, xmm15\n",
            "movdqa xmm5, [rdi + ",
            $hoff,
            "]\n",
            mul_acc!("xmm5"),
        )
    };
}

/// H^2..H^8 from H: rdi = aligned table of 8 blocks, the first holding H (POLYVAL form).
#[unsafe(naked)]
unsafe extern "sysv64" fn powers(_htable: *mut u8) {
    naked_asm!(
        poly!(),
        "movdqa xmm5, [rdi]",
        "movdqa xmm0, xmm5",
        "lea rdx, [rdi + 16]",
        "mov ecx, 7",
        "2:",
        clear_acc!(),
        "movdqa xmm4, xmm0",
        mul_acc!("xmm5"),
        reduce!(),
        "movdqa [rdx], xmm0",
        "add rdx, 16",
        "dec ecx",
        "jnz 2b",
        "ret",
    )
}

/// GHASH of whole blocks as POLYVAL of their byte reversals: rdi = aligned H^1..H^8,
/// rsi = the 16-byte state (read and written), rdx = data, rcx = number of blocks.
/// Eight blocks per reduction: S' = (S + X1)·H^8 + X2·H^7 + ... + X8·H.
#[unsafe(naked)]
unsafe extern "sysv64" fn ghash(
    _htable: *const u8,
    _state: *mut u8,
    _data: *const u8,
    _blocks: u64,
) {
    naked_asm!(
        bswap_mask!("xmm15", "xmm13"),
        poly!(),
        "movdqu xmm0, [rsi]",
        "cmp rcx, 8",
        "jb 3f",
        "2:",
        clear_acc!(),
        "movdqu xmm4, [rdx]",
        "pshufb xmm4, xmm15",
        "pxor xmm4, xmm0",
        "movdqa xmm5, [rdi + 112]",
        mul_acc!("xmm5"),
        ghash_block!("16", "96"),
        ghash_block!("32", "80"),
        ghash_block!("48", "64"),
        ghash_block!("64", "48"),
        ghash_block!("80", "32"),
        ghash_block!("96", "16"),
        ghash_block!("112", "0"),
        reduce!(),
        "add rdx, 128",
        "sub rcx, 8",
        "cmp rcx, 8",
        "jae 2b",
        "3:",
        "test rcx, rcx",
        "jz 6f",
        "movdqa xmm5, [rdi]",
        "4:",
        clear_acc!(),
        "movdqu xmm4, [rdx]",
        "pshufb xmm4, xmm15",
        "pxor xmm4, xmm0",
        mul_acc!("xmm5"),
        reduce!(),
        "add rdx, 16",
        "dec rcx",
        "jnz 4b",
        "6:",
        "movdqu [rsi], xmm0",
        "pxor xmm0, xmm0",
        "pxor xmm5, xmm5",
        "ret",
    )
}
