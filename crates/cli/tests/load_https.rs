//! `bareweb load` over HTTPS as a user runs it: `--cacert` and `--resolve` against
//! `openssl s_server` on 127.0.0.1 with a test CA's P-256 leaf for `site.test` (made by the
//! `openssl` command). Skipped with a message when `openssl` is missing, unless CI is set.

#[path = "../../loadgen/tests/support/openssl.rs"]
mod openssl;

use std::process::{Command, Output};

use openssl::{have_openssl, Pki, SServer};

fn load(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bareweb"))
        .arg("load")
        .args(args)
        .output()
        .expect("run bareweb load")
}

#[test]
fn load_fetches_over_https_with_cacert_and_resolve() {
    if !have_openssl("load_fetches_over_https_with_cacert_and_resolve") {
        return;
    }
    let pki = Pki::make("cli");
    let srv = SServer::start(&pki, &[]);
    let url = format!("https://site.test:{}/", srv.port);
    let resolve = format!("site.test:{}:127.0.0.1", srv.port);
    let ca = pki.ca.display().to_string();
    let common = [
        url.as_str(),
        "--resolve",
        resolve.as_str(),
        "--parallel",
        "2",
        "-k",
        "--fetches",
        "10",
        "--seconds",
        "30",
        "--timeout",
        "10",
        "-q",
    ];

    let mut args = common.to_vec();
    args.extend(["--cacert", &ca, "--json"]);
    let o = load(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["fetches_ok"], 10, "{out}");
    assert_eq!(r["errors_total"], 0, "{out}");
    assert_eq!(r["scheme"], "https");
    assert_eq!(r["tls"]["versions"]["TLS 1.3"], 10, "{out}");

    // The Web PKI's roots (no --cacert) do not hold the test CA: every fetch fails, of
    // kind tls, the reason said; the run exits 1.
    let o = load(&common);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("errors: 10 (tls 10)"), "{out}");
    assert!(
        out.contains("first TLS error: invalid peer certificate: UnknownIssuer"),
        "{out}"
    );

    // Without --resolve the name has no address.
    let o = load(&[url.as_str(), "--cacert", &ca, "--fetches", "1", "-q"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("cannot resolve"), "{e}");

    // A bad --resolve is a usage error naming the option.
    let o = load(&[url.as_str(), "--resolve", "site.test:443"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--resolve") && e.contains("HOST:PORT:ADDR"),
        "{e}"
    );
}
