//! Time: the TSC, calibrated once at boot against the PIT, for monotonic nanoseconds; the
//! CMOS real-time clock, read once at boot, for wall time (the `Date` header).
//!
//! The calibration window overlaps other boot work ([`Calibration`]: started before the
//! site check, read after it), so it costs no dedicated wait when that work is long enough
//! (the boot budget, docs/kernel.md): one long window with bracketed end points instead of five
//! 1 ms windows waited out. The local APIC timer's rate is measured in the same window.
//!
//! `now_ns` is one `rdtsc` and a multiply, no port access and no VM exit. The TSC is
//! assumed invariant (CPUID 0x8000_0007 EDX bit 8 says so on this KVM; the boot banner
//! reports it).

use core::sync::atomic::{AtomicU64, Ordering};

use bareweb_engine::nic::Clock;

use crate::arch::cpu::{cpuid, inb, outb, rdtsc};

const PIT_HZ: u64 = 1_193_182;
/// One calibration window: 1 ms of PIT channel 2 (1193 ticks: 0.08% resolution).
const PIT_COUNT: u16 = 1193;
/// Windows measured; the median is kept (a vCPU descheduled between the two reads of an
/// end point skews that window only). Costs ~5 ms of boot time.
const ROUNDS: usize = 5;

/// The platform clock: TSC for monotonic time, RTC at boot + elapsed for wall time.
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    tsc0: u64,
    /// TSC ticks per second.
    pub hz: u64,
    /// ns per tick as 32.32 fixed point.
    mult: u64,
    unix0: u64,
    /// Whether CPUID reports an invariant TSC.
    pub invariant: bool,
    /// Whether the frequency came from the PIT (false: fell back to CPUID or a guess).
    pub calibrated: bool,
}

/// The TSC frequency: from the hypervisor's timing leaf 0x4000_0010 when it has one
/// (exact), else the median of [`ROUNDS`] PIT windows, else CPUID 0x16, else 1 GHz.
fn calibrate() -> (u64, bool) {
    let (hv_max, _, _, _) = cpuid(0x4000_0000, 0);
    if (0x4000_0010..0x4000_0100).contains(&hv_max) {
        let khz = cpuid(0x4000_0010, 0).0 as u64;
        if khz > 10_000 {
            return (khz * 1000, true);
        }
    }
    pit_start();
    let mut runs = [0u64; ROUNDS];
    for r in runs.iter_mut() {
        match pit_window() {
            Some(hz) => *r = hz,
            None => return (fallback_hz(), false),
        }
    }
    runs.sort_unstable();
    (runs[ROUNDS / 2], true)
}

/// Shortest overlapped window, in PIT ticks (2 ms: ±1 µs end points give 0.05%).
const WINDOW_MIN: u16 = 2386;

/// A TSC (and APIC timer) calibration under way: PIT channel 2 counts down from 0xFFFF
/// while the kernel does other boot work; [`Calibration::finish`] reads the end points.
pub struct Calibration {
    /// The hypervisor's exact frequencies (TSC, APIC bus), when it tells them.
    told: Option<(u64, u64)>,
    /// Start: (TSC, PIT count, APIC timer count).
    start: (u64, u16, u32),
    apic: bool,
    /// Whether channel 2's output can be read at port 0x61 (QEMU's microvm has no port
    /// 0x61: it reads 0xFF, which would say "wrapped" at once).
    out2: bool,
}

/// One end point: (TSC midway, PIT count, APIC count), read back to back and bracketed
/// by TSC reads; the tightest of a few tries (a vCPU descheduled inside one is retried).
fn end_point(apic: bool) -> (u64, u16, u32) {
    let mut best = (0, 0, 0, u64::MAX);
    for _ in 0..4 {
        let a = rdtsc();
        let c = pit_read();
        let t = if apic {
            crate::arch::apic::timer_count()
        } else {
            0
        };
        let b = rdtsc();
        if b - a < best.3 {
            best = (a + (b - a) / 2, c, t, b - a);
        }
    }
    (best.0, best.1, best.2)
}

/// Whether PIT channel 2 reached its terminal count (OUT2 high in mode 0): a window
/// longer than 0xFFFF ticks (55 ms) cannot be measured by the count.
fn pit_wrapped() -> bool {
    // SAFETY: port 0x61 bit 5 reads channel 2's output; reading changes nothing.
    unsafe { inb(0x61) & 0x20 != 0 }
}

impl Calibration {
    /// Starts the calibration (the PIT, and the local APIC timer counting down masked if
    /// `apic`, which must be enabled already).
    pub fn begin(apic: bool) -> Calibration {
        let (hv_max, _, _, _) = cpuid(0x4000_0000, 0);
        if (0x4000_0010..0x4000_0100).contains(&hv_max) {
            let (tsc_khz, bus_khz, _, _) = cpuid(0x4000_0010, 0);
            if tsc_khz > 10_000 {
                return Calibration {
                    told: Some((tsc_khz as u64 * 1000, bus_khz as u64 * 1000)),
                    start: (0, 0, 0),
                    apic,
                    out2: false,
                };
            }
        }
        // SAFETY: port 0x61 (PIT channel 2's gate and output); reading changes nothing.
        // All bits set is no PC's state (IOCHK and SERR pending, refresh, speaker on):
        // nothing decodes the port.
        let out2 = unsafe { inb(0x61) } != 0xFF;
        pit_start();
        if apic {
            crate::arch::apic::timer_start_count();
        }
        Calibration {
            told: None,
            start: end_point(apic),
            apic,
            out2,
        }
    }

    /// Ends the window (waiting until it is at least 2 ms long) and returns the clock and
    /// the APIC timer's ticks per second (0 if not measured).
    pub fn finish(self) -> (TscClock, u64) {
        let (hz, calibrated, apic_hz) = match self.told {
            Some((tsc, bus)) => (tsc, true, if self.apic { bus } else { 0 }),
            None => self.measure(),
        };
        TSC_HZ.store(hz, Ordering::Relaxed);
        let invariant =
            cpuid(0x8000_0000, 0).0 >= 0x8000_0007 && cpuid(0x8000_0007, 0).3 & (1 << 8) != 0;
        let unix0 = rtc_unix();
        let clock = TscClock {
            tsc0: rdtsc(),
            hz,
            mult: (1_000_000_000u128 << 32).div_ceil(hz as u128) as u64,
            unix0,
            invariant,
            calibrated,
        };
        (clock, apic_hz)
    }

    fn measure(&self) -> (u64, bool, u64) {
        let (t0, c0, a0) = self.start;
        let mut polls = 0u32;
        let wrapped = || self.out2 && pit_wrapped();
        let (t1, c1, a1) = loop {
            let e = end_point(self.apic);
            if c0.wrapping_sub(e.1) >= WINDOW_MIN || wrapped() {
                break e;
            }
            polls += 1;
            if polls > 1_000_000 {
                return (fallback_hz(), false, 0); // no PIT
            }
        };
        let ticks = c0.wrapping_sub(c1) as u128;
        let tsc = (t1 - t0).max(1) as u128;
        let overlapped = (tsc * PIT_HZ as u128 / ticks.max(1)) as u64;
        // Without OUT2 a wrap cannot be seen: one short window (1 ms) must agree within
        // 2 %. (The five classic windows this replaces on a microVM were 5-7 ms
        // of boot.)
        let agrees = || pit_window().is_some_and(|q| q.abs_diff(overlapped) <= q / 50);
        if wrapped() || (!self.out2 && !agrees()) {
            // The work in between took longer than the PIT can count: classic windows.
            let (hz, ok) = calibrate();
            let apic_hz = if self.apic {
                crate::arch::apic::measure_timer_hz(hz, 100)
            } else {
                0
            };
            return (hz, ok, apic_hz);
        }
        let hz = overlapped;
        if hz < 10_000_000 {
            return (fallback_hz(), false, 0);
        }
        let apic_hz = if self.apic {
            (a0.wrapping_sub(a1) as u128 * hz as u128 / tsc) as u64
        } else {
            0
        };
        (hz, true, apic_hz)
    }
}

fn pit_read() -> u16 {
    // SAFETY: latching and reading PIT channel 2's count (ours, see pit_window).
    unsafe {
        outb(0x43, 0b1000_0000);
        let lo = inb(0x42) as u16;
        let hi = inb(0x42) as u16;
        hi << 8 | lo
    }
}

/// TSC ticks per second over at least [`PIT_COUNT`] ticks of PIT channel 2, counting
/// down freely from 0xFFFF. Each end is a (PIT count, TSC) snapshot pair, so a vCPU
/// descheduled *during* the window does not skew it (only one descheduled between the
/// two reads of a pair would). Bounded in case there is no PIT.
fn pit_window() -> Option<u64> {
    let (c0, t0) = (pit_read(), rdtsc());
    let mut polls = 0u32;
    loop {
        let c = pit_read();
        let t = rdtsc();
        let elapsed = c0.wrapping_sub(c);
        if (PIT_COUNT..0x8000).contains(&elapsed) {
            let hz = (t - t0) * PIT_HZ / elapsed as u64;
            return (hz >= 10_000_000).then_some(hz);
        }
        polls += 1;
        if polls > 1_000_000 || t - t0 > 50_000_000_000 {
            return None;
        }
    }
}

/// Starts PIT channel 2 counting down from 0xFFFF (mode 0), gate on, speaker off.
fn pit_start() {
    // SAFETY: ports 0x42/0x43/0x61 are PIT channel 2 and its gate, used by nothing
    // else (the speaker output stays off).
    unsafe {
        let g = inb(0x61);
        outb(0x61, (g & !0x02) | 0x01);
        outb(0x43, 0b1011_0000); // channel 2, lobyte/hibyte, mode 0, binary
        outb(0x42, 0xFF);
        outb(0x42, 0xFF);
    }
}

fn fallback_hz() -> u64 {
    let (max, _, _, _) = cpuid(0, 0);
    if max >= 0x16 {
        let base_mhz = cpuid(0x16, 0).0 as u64 & 0xFFFF;
        if base_mhz > 0 {
            return base_mhz * 1_000_000;
        }
    }
    1_000_000_000
}

fn cmos(reg: u8) -> u8 {
    // SAFETY: ports 0x70/0x71 are the CMOS index/data pair; bit 7 of the index keeps NMIs
    // disabled as at boot. Only reads.
    unsafe {
        outb(0x70, 0x80 | reg);
        inb(0x71)
    }
}

/// Reads the RTC (UTC assumed, as QEMU provides by default) as Unix seconds; 0 when it
/// says nonsense. Each read waits out an update in progress (status A bit 7, bounded),
/// and the registers are read until two reads agree (an update may start between the
/// check and the reads), at most four times.
pub fn rtc_unix() -> u64 {
    let read = || {
        let mut spins = 0;
        while cmos(0x0A) & 0x80 != 0 && spins < 100_000 {
            spins += 1; // update in progress
        }
        [
            cmos(0x00),
            cmos(0x02),
            cmos(0x04),
            cmos(0x07),
            cmos(0x08),
            cmos(0x09),
            cmos(0x32),
        ]
    };
    let mut a = read();
    for _ in 0..3 {
        let b = read();
        if a == b {
            break;
        }
        a = b;
    }
    rtc_decode(a, cmos(0x0B)).unwrap_or(0)
}

/// A BCD byte's value (`0x59` is 59).
pub fn from_bcd(v: u8) -> u8 {
    (v >> 4) * 10 + (v & 0x0F)
}

/// Unix seconds from the RTC's registers `[seconds, minutes, hours, day, month, year,
/// century (0x32)]` and status register B (bit 2: binary, else BCD; bit 1: 24-hour, else
/// 12-hour with bit 7 of the hours for PM). `None` when a field is out of range.
pub fn rtc_decode(r: [u8; 7], status_b: u8) -> Option<u64> {
    let bcd = status_b & 0x04 == 0;
    let h24 = status_b & 0x02 != 0;
    let conv = |v: u8| -> u64 { u64::from(if bcd { from_bcd(v) } else { v }) };
    let (sec, min) = (conv(r[0]), conv(r[1]));
    let pm = r[2] & 0x80 != 0;
    let mut hour = conv(r[2] & 0x7F);
    if !h24 {
        // 12-hour: 12 AM is midnight, 12 PM noon.
        if hour == 0 || hour > 12 {
            return None;
        }
        hour %= 12;
        if pm {
            hour += 12;
        }
    }
    let (day, month) = (conv(r[3]), conv(r[4]));
    let century = conv(r[6]);
    let year = conv(r[5])
        + if (19..=30).contains(&century) {
            century * 100
        } else {
            2000
        };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    Some(
        days_from_civil(year as i64, month as u32, day as u32) as u64 * 86_400
            + hour * 3600
            + min * 60
            + sec,
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The TSC frequency once calibrated (for code that has no clock at hand: drivers'
/// bounded waits at bring-up).
static TSC_HZ: AtomicU64 = AtomicU64::new(1_000_000_000);

/// TSC ticks per second (a 1 GHz guess before calibration).
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

impl TscClock {
    /// TSC ticks since boot.
    pub fn ticks(&self) -> u64 {
        rdtsc().wrapping_sub(self.tsc0)
    }

    /// The TSC value at monotonic time `ns` (`now_ns`'s scale); saturates far out.
    pub fn tsc_at(&self, ns: u64) -> u64 {
        let ticks = (ns as u128 * self.hz as u128 / 1_000_000_000).min(u64::MAX as u128) as u64;
        self.tsc0.saturating_add(ticks)
    }
}

impl Clock for TscClock {
    fn now_ns(&self) -> u64 {
        ((self.ticks() as u128 * self.mult as u128) >> 32) as u64
    }

    fn unix_secs(&self) -> u64 {
        self.unix0 + self.ticks() / self.hz
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn days_from_civil_known_dates() {
        assert_eq!(super::days_from_civil(1970, 1, 1), 0);
        assert_eq!(super::days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(super::days_from_civil(2026, 11, 22), 20_779);
        // Leap days: 2024-02-29 and the day after; 2100 is not a leap year.
        assert_eq!(
            super::days_from_civil(2024, 3, 1) - super::days_from_civil(2024, 2, 28),
            2
        );
        assert_eq!(
            super::days_from_civil(2100, 3, 1) - super::days_from_civil(2100, 2, 28),
            1
        );
    }

    #[test]
    fn rtc_registers_decode_in_bcd_and_binary_12_and_24_hours() {
        use super::{from_bcd, rtc_decode};
        assert_eq!(from_bcd(0x59), 59);
        assert_eq!(from_bcd(0x00), 0);
        // 2026-11-28 15:48:20 UTC (`date -d ... +%s`: 1795880900).
        let t = 1_795_880_900;
        // BCD, 24-hour (QEMU's default: status B 0x02).
        let bcd = [0x20, 0x48, 0x15, 0x28, 0x11, 0x26, 0x20];
        assert_eq!(rtc_decode(bcd, 0x02), Some(t));
        // Binary, 24-hour.
        let bin = [20, 48, 15, 28, 11, 26, 20];
        assert_eq!(rtc_decode(bin, 0x06), Some(t));
        // BCD, 12-hour: 3 PM; binary, 12-hour.
        assert_eq!(
            rtc_decode([0x20, 0x48, 0x83, 0x28, 0x11, 0x26, 0x20], 0x00),
            Some(t)
        );
        assert_eq!(rtc_decode([20, 48, 0x83, 28, 11, 26, 20], 0x04), Some(t));
        // 12 AM is midnight, 12 PM noon.
        let midnight = rtc_decode([0, 0, 0x12, 0x28, 0x11, 0x26, 0x20], 0x00).unwrap();
        assert_eq!(midnight % 86_400, 0);
        let noon = rtc_decode([0, 0, 0x92, 0x28, 0x11, 0x26, 0x20], 0x00).unwrap();
        assert_eq!(noon % 86_400, 12 * 3600);
        // No century register (0): the 2000s.
        assert_eq!(
            rtc_decode([0x20, 0x48, 0x15, 0x28, 0x11, 0x26, 0x00], 0x02),
            Some(t)
        );
        // Nonsense: month 13, hour 25, 12-hour hour 0.
        assert_eq!(rtc_decode([0, 0, 0, 1, 0x13, 0x26, 0x20], 0x02), None);
        assert_eq!(rtc_decode([0, 0, 0x25, 1, 1, 0x26, 0x20], 0x02), None);
        assert_eq!(rtc_decode([0, 0, 0x00, 1, 1, 0x26, 0x20], 0x00), None);
    }
}
