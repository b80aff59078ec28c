//! `bareweb bench`: runs a scenario from bench/ against every server it names, side by
//! side ([`bareweb_loadgen::bench`]), or redraws a finished run's report.

use std::path::PathBuf;

use bareweb_loadgen::bench::{self, scenario::Scenario, Options, Results};

/// One of a scenario, `--smoke` or `--replot` is needed: a group, so that `bareweb bench`
/// alone names all three (`<SCENARIO|--smoke|--replot>`), the quick start among them.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["scenario", "smoke", "replot"]))]
pub struct BenchArgs {
    /// Scenario file (TOML, see bench/); or --smoke for the built-in quick one.
    pub scenario: Option<PathBuf>,
    /// Run the built-in one-minute smoke scenario (bench/smoke.toml).
    #[arg(long, conflicts_with = "scenario")]
    pub smoke: bool,
    /// Results folder (results.json, report.md, PNGs, per-run JSON).
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the report as this scenario's section of a Markdown file
    /// (a dated log such as docs/perf/log/DATE-NAME.md), its PNGs in perf/NAME/ beside
    /// it, or in docs/perf/NAME/ for a log in docs/perf/log/.
    #[arg(long)]
    pub doc: Option<PathBuf>,
    /// Override the scenario's number of rounds.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Override every run's length in seconds.
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Do not run: redraw report.md, the PNGs (and --doc) from OUT/results.json.
    #[arg(long)]
    pub replot: bool,
}

pub fn bench(a: BenchArgs) -> Result<(), String> {
    let command = std::iter::once("bareweb".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    if a.replot {
        let p = a.out.join("results.json");
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let r: Results =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        return bench::write_outputs(&r, &a.out, a.doc.as_deref());
    }
    let mut scenario = match &a.scenario {
        Some(p) => Scenario::read(p)?,
        None => Scenario::parse(
            bench::SMOKE,
            &std::env::current_dir().map_err(|e| e.to_string())?,
        )?,
    };
    if let Some(r) = a.rounds {
        if r == 0 {
            return Err("--rounds must be >= 1".into());
        }
        scenario.rounds = r;
    }
    if let Some(s) = a.seconds {
        if !(s > 0.0 && s <= 600.0) {
            return Err("--seconds must be in (0, 600]".into());
        }
        scenario.seconds = s;
        for se in &mut scenario.series {
            se.seconds = Some(s);
        }
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"))?;
    let o = Options {
        scenario,
        out: a.out,
        exe,
        doc: a.doc,
        command,
    };
    bench::bench(&o).map(|_| ())
}
