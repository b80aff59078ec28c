//! `bareweb`: the command line. Each subcommand lives in its own module:
//! `build` in [`image`] and [`bootimage`], `serve` in [`serve`] (its runners in
//! [`runners`], its reload in [`reload`]), `run` in [`run`] and [`launch`], `get` in [`get`], `load` and
//! `surge-site` in [`load`] (UDP in [`load_udp`]), `bench` in [`bench`]; the options the
//! server commands share, and every value type, in [`opts`].
//!
//! Exit codes: 0 done, 1 failed (the reason on stderr), 2 a usage error in clap's format
//! (a bad value, or options that do not go together: each command's `check` runs right
//! after parsing, before anything starts).

use std::process::ExitCode;

// The kernel's command-line parser (compiled in by `opts`) names `alloc` in its tests.
extern crate alloc;

use clap::{CommandFactory, Parser, Subcommand};

mod acme;
mod bare;
mod bench;
mod bootimage;
mod cores;
mod get;
mod image;
mod kernel_image;
mod launch;
mod load;
mod load_bare;
mod load_common;
mod load_udp;
mod opts;
mod relay6;
mod reload;
mod run;
mod runners;
mod serve;
mod serve_xdp;
mod tls;
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
    /// Build a site image from a directory (`-o NAME.elf`, `--iso NAME.iso`, `--disk
    /// NAME.img`: bootable, the kernel and the site in one file).
    Build(image::BuildArgs),
    /// Serve a site (directory or image) on a TAP device with bareweb's own stack.
    Serve(serve::ServeArgs),
    /// Reload a running `serve --pid-file FILE`: its site and configuration are built again
    /// from disk and swapped in without dropping a connection (the same as SIGHUP).
    Reload(reload::ReloadArgs),
    /// Boot the bare-machine kernel with a site under QEMU (no root needed).
    Run(run::RunArgs),
    /// Fetch one file (http://HOST[:PORT]/PATH or bwudp://HOST[:PORT]/PATH, the UDP
    /// paper's stateless protocol) and write its body, checked.
    Get(get::GetArgs),
    /// Load a web server like http_load / httperf: rate, parallel or Surge session mode.
    Load(load_common::LoadArgs),
    /// Write a Surge-model file set (heavy-tailed sizes, Zipf popularity) as a site.
    SurgeSite(load::SurgeSiteArgs),
    /// Side-by-side benchmark: bareweb, nginx, lighttpd, h2o on the same files and loads.
    Bench(bench::BenchArgs),
}

impl Cmd {
    /// Checks that need more than one option: a failure is a usage error.
    fn check(&self) -> Result<(), String> {
        match self {
            Cmd::Build(a) => a.check(),
            Cmd::Serve(a) => a.check(),
            Cmd::Run(a) => a.check(),
            Cmd::Get(_) | Cmd::Load(_) | Cmd::SurgeSite(_) | Cmd::Bench(_) | Cmd::Reload(_) => {
                Ok(())
            }
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Cmd::Build(_) => "build",
            Cmd::Serve(_) => "serve",
            Cmd::Reload(_) => "reload",
            Cmd::Run(_) => "run",
            Cmd::Get(_) => "get",
            Cmd::Load(_) => "load",
            Cmd::SurgeSite(_) => "surge-site",
            Cmd::Bench(_) => "bench",
        }
    }
}

/// Exits with clap's usage error for subcommand `sub` (exit code 2).
fn usage_error(sub: &str, msg: &str) -> ! {
    let mut cmd = Cli::command();
    cmd.build();
    let sub = cmd
        .find_subcommand_mut(sub)
        .expect("every command has a subcommand entry");
    sub.error(clap::error::ErrorKind::ArgumentConflict, msg)
        .exit()
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    // The site's `[tls]` and `[acme]` join the command line before the checks, which then
    // hold for them (`[acme] ca` is the command's --acme-ca, when not given).
    let from_file = match &mut cli.cmd {
        Cmd::Build(a) => a
            .server
            .apply_site_tls(&a.site, a.config.as_deref())
            .map(|ca| a.acme_ca = a.acme_ca.take().or(ca)),
        Cmd::Serve(a) => a
            .server
            .apply_site_tls(&a.site, a.config.as_deref())
            .map(|ca| a.acme_ca = a.acme_ca.take().or(ca)),
        Cmd::Run(a) => a
            .server
            .apply_site_tls(&a.site, a.config.as_deref())
            .map(|ca| a.acme_ca = a.acme_ca.take().or(ca)),
        _ => Ok(()),
    };
    if let Err(msg) = from_file.and_then(|()| cli.cmd.check()) {
        usage_error(cli.cmd.name(), &msg);
    }
    let r = match cli.cmd {
        Cmd::Build(a) => image::build(&a),
        Cmd::Serve(a) => serve::serve(a),
        Cmd::Reload(a) => reload::send(&a),
        Cmd::Run(a) => match launch::run(a) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option of every command, with its command's name.
    fn every_arg() -> Vec<(String, clap::Arg)> {
        let mut cmd = Cli::command();
        cmd.build();
        cmd.get_subcommands()
            .flat_map(|c| {
                c.get_arguments()
                    .map(|a| (c.get_name().to_string(), a.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Defaults are shown one way everywhere, as clap shows the ones it knows:
    /// `[default: X]` at the end of the help, never `(default: X)`, `[X]`, or twice.
    #[test]
    fn defaults_are_shown_one_way() {
        for (cmd, a) in every_arg() {
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            let id = format!("{cmd} --{}", a.get_long().unwrap_or(a.get_id().as_str()));
            assert!(!help.to_lowercase().contains("(default"), "{id}: {help}");
            if help.ends_with(']') {
                assert!(help.contains(" [default: "), "{id}: {help}");
            }
            if !a.get_default_values().is_empty() && !a.is_hide_default_value_set() {
                assert!(
                    !help.contains("[default:"),
                    "{id} shows its default twice: {help}"
                );
            }
        }
    }

    /// One name for one idea: the offloads are `--no-offload` in serve (`--no-tso`, its
    /// old spelling, still taken but not shown), run, build and load.
    #[test]
    fn offloads_are_turned_off_by_one_name() {
        let args = every_arg();
        for cmd in ["serve", "run", "build", "load"] {
            assert!(
                args.iter()
                    .any(|(c, a)| c == cmd && a.get_long() == Some("no-offload")),
                "{cmd}"
            );
            assert!(!args
                .iter()
                .any(|(c, a)| c == cmd && a.get_long() == Some("no-tso")));
        }
        for old in ["--no-tso", "--no-offload"] {
            let Cmd::Serve(s) = Cli::parse_from(["bareweb", "serve", "site", old]).cmd else {
                unreachable!()
            };
            assert!(s.no_offload, "{old}");
        }
    }

    /// `get` and `load` judge a response by the same status unless told otherwise.
    #[test]
    fn expect_status_has_one_default() {
        let defaults: Vec<String> = every_arg()
            .into_iter()
            .filter(|(_, a)| a.get_long() == Some("expect-status"))
            .map(|(c, a)| format!("{c} {:?}", a.get_default_values()))
            .collect();
        assert_eq!(defaults, ["get [\"200\"]", "load [\"200\"]"]);
    }
}
