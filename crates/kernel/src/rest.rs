//! How an idle core rests: it keeps polling for a short idle spell (a request arriving
//! then costs no wake-up latency), then halts until its NIC interrupts, its timer fires at
//! the next deadline the engine has (a TCP retransmission, a keep-alive timeout), or
//! another core wakes it (network-core mode: a frame on its ring). An idle machine then
//! costs its host next to nothing, where the papers' cores (and `poll=always`) spin.
//!
//! - **Before halting** ([`Rest`]: the kernel's steps of the engine's idle policy,
//!   `cores::run::SpinThenSleep`): the loop publishes the
//!   core's stats row; the queue pair is armed ([`Sleeper::arm`]: the NIC's receive
//!   interrupt on, the core's doze announced) and looked at once more; only if nothing
//!   came does the core halt (`sti; hlt`, [`crate::arch::irq::halt`]). An interrupt that
//!   arrives between the arming and the `hlt` is pending at `sti` and ends the halt at once.
//! - **After**: interrupts off again, the doze cleared; the loop polls.
//! - **The idle spell adapts** (as Linux's guest halt-polling does): it starts at
//!   `idle_poll_us`; a halt that ended sooner than that (traffic came back quickly, and the
//!   halt cost a wake-up) doubles it again up to `idle_poll_us`, a longer one halves it
//!   (down to a quarter): a core of a quiet server halts sooner, one of a busy server
//!   polls through the short gaps between requests.
//! - **Never longer than 1 s**: a halt is bounded even with nothing due, so a stats row is
//!   at most a second behind and no lost wake-up could stall a core for good.

use bareweb_engine::bond::BondNic;
use bareweb_engine::cores::board::Board;
use bareweb_engine::cores::netcore::RingNic;
use bareweb_engine::cores::run::{Idle, Quiet, Sleep, SleepCounters};
use bareweb_engine::nic::{Clock, Nic, RxRing, TxRing};
use bareweb_engine::ring::Doze;

use crate::arch::acpi;
use crate::arch::clock::TscClock;
use crate::arch::{apic, cpu, ioapic, irq};
use crate::cmdline::Settings;
use crate::drivers::{Arm, Driver, WakeRx};
use crate::kprintln;

/// Longest halt, in ns.
const HALT_MAX_NS: u64 = 1_000_000_000;
/// Shortest idle spell, as a fraction of the longest. Not much shorter: under a flood the
/// gaps between frames are tens of µs, and a core that halts in them pays a wake-up each
/// time (a halted vCPU on a busy host waits to be scheduled while its receive ring fills:
/// with 1/16 the e1000 kernel answered a third fewer of a SYN flood's SYNs).
const SPELL_MIN_DIV: u64 = 4;

/// What a core's queue pair does around a halt.
pub trait Sleeper {
    /// Arms whatever can wake the core (the NIC's receive interrupt, the core's doze) and
    /// looks for work once more: [`Arm::Pending`] if there is some (do not halt),
    /// [`Arm::Armed`] if an interrupt will come, [`Arm::Unable`] if only the timer can
    /// wake the core.
    fn arm(&mut self) -> Arm;
    /// Undoes [`Sleeper::arm`] after the halt.
    fn disarm(&mut self);
}

/// The idle policy (`poll=`, `idle_poll_us=` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Never halt: poll forever, as the papers' cores do.
    pub poll_always: bool,
    /// The longest idle spell before halting, in µs.
    pub idle_poll_us: u64,
}

/// One core's resting state: the adaptive spell, the timer, and its counters.
pub struct Rest {
    policy: Policy,
    spell_ns: u64,
    timer: apic::Timer,
    clock: TscClock,
    core: usize,
    counters: SleepCounters,
    /// When the current halt's idle spell ended (ns).
    halt_from: u64,
    /// The wake-up counts before the current halt.
    before: [u64; 3],
}

impl Rest {
    /// Core `core`'s rest under `policy`, with its timer and the clock.
    pub fn new(core: usize, policy: Policy, timer: apic::Timer, clock: TscClock) -> Rest {
        Rest {
            policy,
            spell_ns: policy.idle_poll_us.saturating_mul(1000),
            timer,
            clock,
            core,
            counters: SleepCounters::default(),
            halt_from: 0,
            before: [0; 3],
        }
    }
}

/// The kernel's steps of the engine's idle policy (`cores::run::SpinThenSleep`): PAUSE
/// through the idle spell, then halt until the queue pair's interrupt, the timer at the
/// next deadline or another core wakes the core.
impl<N: Sleeper> Sleep<N> for Rest {
    /// The monotonic time (ns) the halt ends at the latest.
    type Until = u64;

    fn spin(&mut self, state: &Idle) -> bool {
        if self.policy.poll_always || state.idle_ns < self.spell_ns {
            cpu::relax();
            return true;
        }
        false
    }

    fn until(&mut self, _: &mut N, _: &Idle, quiet: &mut dyn Quiet) -> Option<u64> {
        let now = self.clock.now_ns();
        let wake_at = quiet.wake_at_ns();
        if wake_at <= now {
            return None;
        }
        self.halt_from = now;
        quiet.publish();
        Some(wake_at.min(now.saturating_add(HALT_MAX_NS)))
    }

    fn announce(&mut self, nic: &mut N) -> bool {
        nic.arm() == Arm::Pending
    }

    fn sleep(&mut self, _: &mut N, until: u64) {
        self.before = CAUSES.map(|c| irq::count(self.core, c));
        irq::halt(self.timer, Some(self.clock.tsc_at(until)));
    }

    fn awake(&mut self, nic: &mut N) {
        nic.disarm();
        let slept = self.clock.now_ns().saturating_sub(self.halt_from);
        let after = CAUSES.map(|c| irq::count(self.core, c));
        let c = &mut self.counters;
        c.sleeps += 1;
        c.slept_ns += slept;
        c.woken_by_device += after[0] - self.before[0];
        c.woken_by_timer += after[1] - self.before[1];
        c.woken_by_core += after[2] - self.before[2];
        // Adapt the spell: a short halt means traffic returned soon (poll longer next
        // time), a long one a quiet server (halt sooner).
        let max = self.policy.idle_poll_us.saturating_mul(1000);
        self.spell_ns = if slept < max {
            self.spell_ns.saturating_mul(2).clamp(1, max)
        } else {
            (self.spell_ns / 2).max(max / SPELL_MIN_DIV)
        };
    }

    fn sleeps(&self) -> SleepCounters {
        self.counters
    }
}

/// What can end a halt, in the order the counters take them.
const CAUSES: [irq::Cause; 3] = [irq::Cause::Device, irq::Cause::Timer, irq::Cause::Core];

/// A queue pair of driver `D` owned by one core: its receive interrupt.
impl<D: Driver> Sleeper for D {
    fn arm(&mut self) -> Arm {
        self.split().0.arm()
    }

    fn disarm(&mut self) {
        self.split().0.disarm();
    }
}

/// A core's queue pair of every NIC of a set (bonding): each NIC's receive interrupt.
impl<R: RxRing + WakeRx, T: TxRing> Sleeper for BondNic<R, T> {
    fn arm(&mut self) -> Arm {
        self.split().0.arm()
    }

    fn disarm(&mut self) {
        self.split().0.disarm();
    }
}

/// Interrupts for waking halted cores: every I/O APIC line masked (the NIC's is routed
/// when the driver opens it; the legacy PICs were masked before the local APIC was set
/// up: `boot::clock_and_site`), and the timer mode (`apic_hz`: the
/// local APIC timer's rate measured at boot). Returns the timer, or None when cores will
/// not halt (`poll=always`, no local APIC, a timer that does not count).
pub fn wake_setup(
    s: &Settings,
    procs: &Result<acpi::Processors, acpi::Error>,
    clock: &TscClock,
    apic_hz: u64,
) -> Option<apic::Timer> {
    let chips = match procs {
        Ok(p) => {
            acpi::keep_overrides(p);
            ioapic::init(p.ioapics())
        }
        Err(_) => 0,
    };
    if s.poll_always {
        kprintln!("idle: poll=always: cores never halt");
        return None;
    }
    if apic::current() == apic::Mode::None {
        kprintln!("idle: no local APIC: cores poll without halting");
        return None;
    }
    let timer = if apic::has_tsc_deadline() {
        apic::Timer::TscDeadline
    } else if apic_hz == 0 {
        kprintln!("idle: the local APIC timer does not count: cores poll without halting");
        return None;
    } else {
        apic::Timer::OneShot {
            hz: apic_hz,
            tsc_hz: clock.hz,
        }
    };
    match timer {
        apic::Timer::TscDeadline => kprintln!(
            "idle: halt after {} us idle (adaptive), timer TSC-deadline, {chips} I/O APIC(s)",
            s.idle_poll_us
        ),
        apic::Timer::OneShot { hz, .. } => kprintln!(
            "idle: halt after {} us idle (adaptive), timer one-shot at {} MHz, {chips} I/O APIC(s)",
            s.idle_poll_us,
            hz / 1_000_000
        ),
    }
    Some(timer)
}

/// The `log=stats` second line: every core's sleeps summed (`idle: sleeps= slept_ms=
/// wakes_device= wakes_timer= wakes_core=`).
pub fn print_sleeps(board: &Board) {
    let mut t = SleepCounters::default();
    for c in 0..board.cores() {
        let s = board.snapshot(c).sleeps();
        t.sleeps += s.sleeps;
        t.slept_ns += s.slept_ns;
        t.woken_by_device += s.woken_by_device;
        t.woken_by_timer += s.woken_by_timer;
        t.woken_by_core += s.woken_by_core;
    }
    kprintln!(
        "idle: sleeps={} slept_ms={} wakes_device={} wakes_timer={} wakes_core={}",
        t.sleeps,
        t.slept_ns / 1_000_000,
        t.woken_by_device,
        t.woken_by_timer,
        t.woken_by_core
    );
}

/// An HTTP core of the network-core mode: woken by core 0 when it forwards a frame.
impl Sleeper for RingNic {
    fn arm(&mut self) -> Arm {
        self.doze().announce();
        if self.input_pending() {
            self.doze().awake();
            Arm::Pending
        } else {
            Arm::Armed
        }
    }

    fn disarm(&mut self) {
        self.doze().awake();
    }
}

/// A doze whose bell is a wake-up IPI to the core with APIC id `apic`.
pub fn ipi_doze(apic: u32) -> Doze {
    Doze::new(alloc::boxed::Box::new(move || {
        apic::send_ipi(apic, irq::WAKE_VECTOR)
    }))
}
