//! `bareweb`: the command line. Each subcommand lives in its own module:
//! `build` in [`image`], `serve` in [`serve`] (its runners in [`runners`]), `run` in
//! [`run`], `get` in [`get`], `load` and `surge-site` in [`load`], `bench` in [`bench`];
//! shared parsing in [`util`], the UDP protocol's options in [`udp_args`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

mod bench;
mod bootimage;
mod cores;
mod get;
mod image;
mod load;
mod run;
mod runners;
mod serve;
mod udp_args;
mod util;

#[derive(Parser)]
#[command(
    name = "bareweb",
    version,
    about = "A static web server with its own TCP/IP stack"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build a site image from a directory.
    Build {
        /// The site directory.
        site: PathBuf,
        /// Where to write the image (`.elf`: one bootable file, kernel and site).
        #[arg(short, long, default_value = "site.bws")]
        output: PathBuf,
        #[command(flatten)]
        boot: bootimage::BootOpts,
    },
    /// Serve a site (directory or image) on a TAP device with bareweb's own stack.
    Serve(ServeArgs),
    /// Boot the bare-machine kernel with a site under QEMU (no root needed).
    Run(run::RunArgs),
    /// Fetch one file: bwudp://HOST[:PORT]/PATH (paper 001's stateless UDP protocol).
    Get(get::GetArgs),
    /// Load a web server like http_load / httperf: rate, parallel or Surge session mode.
    Load(load::LoadArgs),
    /// Write a Surge-model file set (heavy-tailed sizes, Zipf popularity) as a site.
    SurgeSite(load::SurgeSiteArgs),
    /// Side-by-side benchmark: bareweb, nginx, lighttpd, h2o on the same files and loads.
    Bench(bench::BenchArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Site directory (built in memory) or a site image written by `bareweb build`.
    site: PathBuf,
    /// TAP device to use; created if missing (needs CAP_NET_ADMIN).
    #[arg(long, default_value = "bw0")]
    tap: String,
    /// The server's address and prefix.
    #[arg(long, default_value = "10.0.0.2/24")]
    ip: String,
    /// Address given to the host side of the TAP (default: the subnet's first free one);
    /// `none` leaves the host side as it is.
    #[arg(long)]
    host_ip: Option<String>,
    /// TCP port to serve (1-65535).
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Router for clients beyond the link.
    #[arg(long)]
    gw: Option<String>,
    /// HTTP scheduling policy (paper 004): imt looks at receive after every HTTP step,
    /// ist serves the whole run list in one pass.
    #[arg(long, value_enum, default_value_t = SchedArg::Imt)]
    sched: SchedArg,
    /// Number of TCBs (most connections at once), 1 to 1048576 (~9.3 KiB each).
    #[arg(long, default_value_t = 1024, value_parser = parse_tcbs)]
    tcbs: usize,
    /// Most connections from one client address at once (a SYN beyond it is refused with
    /// a RST); default half of --tcbs. 1 to 1048576.
    #[arg(long, value_parser = parse_tcbs)]
    max_per_ip: Option<usize>,
    /// Half-open connections held at once; past it SYNs are answered with SYN cookies and
    /// no TCB (RFC 4987). Default half of --tcbs. 1 to 1048576.
    #[arg(long, value_parser = parse_tcbs)]
    syn_backlog: Option<usize>,
    /// Print an access log line (Common Log Format) per response to stdout.
    #[arg(long)]
    access_log: bool,
    /// Seconds a client has from connecting to finish sending its request head (then 408 and
    /// close), 1 to 86400.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    request_timeout: u64,
    /// Seconds an idle keep-alive connection is kept, 1 to 86400.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    idle_timeout: u64,
    /// The server's MAC address (default: a locally administered one).
    #[arg(long)]
    mac: Option<String>,
    /// Send every TCP segment as its own frame: no segmentation offload (by default frames
    /// of up to ~64 KiB go to the TAP and the kernel cuts them into segments).
    #[arg(long)]
    no_tso: bool,
    #[command(flatten)]
    cores: cores::CoresArgs,
    #[command(flatten)]
    runner: runners::RunnerArgs,
    #[command(flatten)]
    udp: udp_args::UdpArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum SchedArg {
    Imt,
    Ist,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Build { site, output, boot } if bootimage::wanted(&output, &boot) => {
            bootimage::build(&site, &output, &boot)
        }
        Cmd::Build { site, output, .. } => image::build(&site, &output),
        Cmd::Serve(a) => serve::serve(a),
        Cmd::Run(a) => match run::run(a) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Cmd::Get(a) => get::get(a),
        Cmd::Load(a) => load::load(a),
        Cmd::SurgeSite(a) => load::surge_site(a),
        Cmd::Bench(a) => bench::bench(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bareweb: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Most TCBs a server may be given: ~9.3 KiB each, so 1 Mi is ~9.3 GiB (the kernel's
/// `tcbs=` has the same bound).
const MAX_TCBS: usize = 1 << 20;

/// `--tcbs`: a count from 1 to [`MAX_TCBS`], refused with a clear message otherwise.
pub(crate) fn parse_tcbs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_TCBS).contains(&n) => Ok(n),
        _ => Err(format!("expected a number of TCBs from 1 to {MAX_TCBS}")),
    }
}
