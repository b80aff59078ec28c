//! `bareweb serve --runner serial|pool|workshare|tasks|pinned --threads N` (the
//! parallel-runner study of the OpenMP paper): the same engine driven by another runner
//! (`bareweb_host::runners`). `pinned` is the default runner under this name: one whole
//! server per thread pinned to a CPU (`--cores N`, per-queue mode). Without `--runner`,
//! `serve` is exactly as before.

use bareweb_engine::cores::board::{Board, WithStatsPage};
use bareweb_engine::cores::pages::PageSettings;
use bareweb_engine::nic::Nic;
use bareweb_engine::resource::Lookup;
use bareweb_engine::server::AccessLog;
use bareweb_host::cores::{CoreReport, Shared};
use bareweb_host::runners::{self, Runner};
use bareweb_host::Tap;
use clap::ValueEnum;

use crate::cores::{self, Layout, Prepared};
use crate::opts::ModeArg;

/// The runner options of `serve`.
#[derive(clap::Args)]
pub struct RunnerArgs {
    /// Runner around the engine (the OpenMP paper's versions): `serial` (one thread, Boa's
    /// ready/blocked loop), `pool` (a network thread feeding workers through the locked
    /// ready queue), `workshare` (all threads traverse each pass of the ready queue, a
    /// barrier per pass), `tasks` (a work-stealing task per ready connection), `pinned`
    /// (ours: a whole server per thread, pinned, nothing shared; `--cores N`).
    #[arg(long, value_enum, conflicts_with_all = ["cores", "mode", "bsp_http"])]
    pub runner: Option<RunnerArg>,
    /// Threads of the runner (serial: 1), 1 to 256.
    #[arg(long, requires = "runner", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
}

impl RunnerArgs {
    /// `--threads` within what the runner takes.
    pub fn check(&self) -> Result<(), String> {
        match self.runner.and_then(RunnerArg::runner) {
            Some(r) if usize::from(self.threads) > r.max_threads() => Err(format!(
                "--runner {} takes 1 to {} threads",
                r.name(),
                r.max_threads()
            )),
            _ => Ok(()),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunnerArg {
    Serial,
    Pool,
    Workshare,
    Tasks,
    Pinned,
}

impl RunnerArg {
    fn runner(self) -> Option<Runner> {
        match self {
            RunnerArg::Serial => Some(Runner::Serial),
            RunnerArg::Pool => Some(Runner::Pool),
            RunnerArg::Workshare => Some(Runner::Workshare),
            RunnerArg::Tasks => Some(Runner::Tasks),
            RunnerArg::Pinned => None,
        }
    }
}

/// Runs `serve` with the chosen runner; returns when `stop` is set.
pub fn serve<L, F, A, G>(
    arg: RunnerArg,
    threads: usize,
    pages: PageSettings,
    p: Prepared<'_, L, F>,
    make_log: G,
) -> Result<(), String>
where
    L: Lookup<'static> + Copy + Send + Sync,
    F: FnOnce(&[String]) -> Result<(), String>,
    A: AccessLog,
    G: Fn(usize) -> A + Sync,
{
    let Some(runner) = arg.runner() else {
        // pinned: the many-core server, per-queue mode with more than one thread.
        let args = Layout {
            cores: threads,
            mode: (threads > 1).then_some(ModeArg::Perqueue),
            bsp_http: false,
            pages,
            pin: true,
        };
        return cores::serve(&args, p, make_log);
    };
    let (name, mac) = (&p.taps[0], p.macs[0]);
    let mut tap = Tap::open(name, mac).map_err(|e| cores::tap_open_error(name, &e, false))?;
    tap.set_tso(p.tso);
    let caps = tap.caps();
    let name = tap.name().to_string();
    (p.configure)(std::slice::from_ref(&name))?;
    let board: Option<&'static Board> = pages.any().then(|| {
        let b = Board::new(runner.name(), &runner.roles(threads))
            .with_drain(p.cfg.drain)
            .with_pages(pages);
        &*Box::leak(Box::new(b))
    });
    (p.banner)(&format!(
        "{name}, runner {} with {threads} thread{}",
        runner.name(),
        if threads == 1 { "" } else { "s" }
    ));
    let (rx, txs) = tap
        .into_senders(threads)
        .map_err(|e| format!("cannot duplicate the TAP's fd: {e}"))?;
    let reports = if pages.stats {
        let plan = Shared {
            site: WithStatsPage(p.site, pages.base),
            cfg: p.cfg,
            mac,
            board,
            stop: p.stop,
            caps,
        };
        runners::run(runner, threads, rx, txs, &plan, make_log)
    } else {
        let plan = Shared {
            site: p.site,
            cfg: p.cfg,
            mac,
            board,
            stop: p.stop,
            caps,
        };
        runners::run(runner, threads, rx, txs, &plan, make_log)
    };
    print_summary(runner, &reports);
    Ok(())
}

/// A line per thread (its time split, lock wait included), one for the shared server,
/// then the counters as `  name value` lines like every `serve`.
fn print_summary(runner: Runner, reports: &[CoreReport]) {
    eprintln!("bareweb: stopped; counters:");
    eprintln!(
        "  per thread ({}): thread role steps rcv% http% send% lock% main% batch_high",
        runner.name()
    );
    for r in reports {
        let el = r.run.elapsed_ns;
        if el == 0 {
            eprintln!(
                "  server {:?} requests {} tcbs_max {} max_parallel {}",
                r.role, r.stats.http_requests, r.stats.tcbs_max, r.stay.parallel_max
            );
            continue;
        }
        let busy = r.times.rcv_ns + r.times.http_ns + r.dispatch.drain_ns + r.lock_ns;
        eprintln!(
            "  thread {} {:?} {} {:.1}% {:.1}% {:.1}% {:.1}% {:.1}% {}",
            r.core,
            r.role,
            r.times.busy_polls,
            cores::pct(r.times.rcv_ns, el),
            cores::pct(r.times.http_ns, el),
            cores::pct(r.dispatch.drain_ns, el),
            cores::pct(r.lock_ns, el),
            cores::pct(el.saturating_sub(busy), el),
            r.nic.tx_ring_high,
        );
    }
    cores::print_totals(reports);
}
