//! A bench that dies on a panic (the release build aborts: no `Drop`) still removes its
//! namespaces and the servers in them (once, `bench --smoke 2>&1 | head -3` left a
//! `bareweb serve` and a namespace behind). Needs root for `ip netns`.

use std::process::Command;

use bareweb_loadgen::bench::topo::{clean_up_all, Netns};

#[test]
fn namespaces_and_their_processes_go_on_clean_up() {
    if !bareweb_loadgen::sys::is_root() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "needs root for ip netns, and CI=true forbids skipping"
        );
        eprintln!("skipped: needs root for ip netns");
        return;
    }
    let name = format!("bwclean{}", std::process::id() % 100_000);
    let ns = Netns::new(&name).unwrap();
    let mut child = Command::new("ip")
        .args(["netns", "exec", &name, "sleep", "120"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // What the panic hook does, without the panic.
    clean_up_all();
    std::mem::forget(ns); // its Drop would delete it again
    let status = child.wait().unwrap();
    assert!(!status.success(), "the process in the namespace was killed");
    assert!(
        !std::path::Path::new("/run/netns").join(&name).exists(),
        "namespace {name} left behind"
    );
}
