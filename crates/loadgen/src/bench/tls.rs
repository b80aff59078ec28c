//! HTTPS in the bench: the certificate every server under test gets, whether this kernel
//! has kTLS (every ratio over TLS says so next to it), and the wrk shim that counts its
//! handshakes and, for full-handshake series, makes it forget its TLS session.
//!
//! Every server serves the same self-signed ECDSA P-256 certificate (made here with
//! `openssl`, as docs/usage.md shows), TLS 1.3 only, with its session resumption on
//! (bareweb: tickets; nginx: a shared session cache and tickets; lighttpd: tickets; h2o:
//! its session cache and tickets; [`super::peers`]).
//!
//! wrk keeps one OpenSSL `SSL` object per connection slot and, between connections, calls
//! `SSL_shutdown` then `SSL_clear`, which keeps a cleanly shut session: its next
//! handshake offers that session's ticket and resumes. The shim (a small C library
//! preloaded into wrk, built with `cc` on first use) wraps `SSL_connect` to count
//! handshakes and resumed ones (`SSL_session_reused`), printed as one JSON line on wrk's
//! exit, and with `BAREWEB_WRK_FULL=1` also wraps `SSL_clear` to drop the session, so that
//! every connection is a full handshake.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// The certificate and key every server under test serves.
#[derive(Clone, Debug)]
pub struct Pki {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pki {
    /// Makes a P-256 key and a self-signed certificate for it in `dir`.
    pub fn make(dir: &Path) -> Result<Pki, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let openssl = |args: &[&str]| -> Result<(), String> {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .map_err(|e| format!("cannot run openssl: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "openssl {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        openssl(&[
            "ecparam",
            "-genkey",
            "-name",
            "prime256v1",
            "-noout",
            "-out",
            "key.pem",
        ])?;
        openssl(&[
            "req",
            "-x509",
            "-new",
            "-key",
            "key.pem",
            "-sha256",
            "-days",
            "2",
            "-subj",
            "/CN=bareweb bench",
            "-out",
            "cert.pem",
        ])?;
        Ok(Pki { cert, key })
    }

    /// `bareweb serve`'s options for it: HTTPS on 443, TLS 1.3 only.
    pub fn bareweb_args(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.cert.display().to_string(),
            "--tls-key".into(),
            self.key.display().to_string(),
            "--tls-min".into(),
            "1.3".into(),
        ]
    }
}

/// Whether this kernel offers kTLS (the `tls` module loaded: /proc/net/tls_stat), and
/// how the report says it next to every ratio over TLS.
pub fn ktls_note() -> &'static str {
    if Path::new("/proc/net/tls_stat").exists() {
        "kTLS present, not configured"
    } else {
        "no kTLS"
    }
}

/// The shim's source.
const SHIM_C: &str = r#"/* Preloaded into wrk by bareweb bench (bench::tls): counts TLS handshakes and resumed
 * ones; with BAREWEB_WRK_FULL=1 forgets the session wrk would resume. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;
int SSL_session_reused(const SSL *s);
int SSL_set_session(SSL *s, SSL_SESSION *session);
static unsigned long handshakes, resumed;
int SSL_connect(SSL *s) {
    static int (*real)(SSL *);
    if (!real) real = (int (*)(SSL *))dlsym(RTLD_NEXT, "SSL_connect");
    int r = real(s);
    if (r == 1) {
        __atomic_add_fetch(&handshakes, 1, __ATOMIC_RELAXED);
        if (SSL_session_reused(s)) __atomic_add_fetch(&resumed, 1, __ATOMIC_RELAXED);
    }
    return r;
}
int SSL_clear(SSL *s) {
    static int (*real)(SSL *);
    if (!real) real = (int (*)(SSL *))dlsym(RTLD_NEXT, "SSL_clear");
    int r = real(s);
    const char *full = getenv("BAREWEB_WRK_FULL");
    if (full && full[0] == '1') SSL_set_session(s, NULL);
    return r;
}
__attribute__((destructor)) static void report(void) {
    fprintf(stderr, "{\"tls_handshakes\":%lu,\"tls_resumed\":%lu}\n", handshakes, resumed);
}
"#;

/// Builds the shim in `dir` (once) with `cc`; its path.
pub fn shim(dir: &Path) -> Result<PathBuf, String> {
    let so = dir.join("wrk-tls-shim.so");
    if so.exists() {
        return Ok(so);
    }
    let c = dir.join("wrk-tls-shim.c");
    std::fs::write(&c, SHIM_C).map_err(|e| format!("{}: {e}", c.display()))?;
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&c)
        .arg("-ldl")
        .output()
        .map_err(|e| format!("cannot run cc for wrk's TLS shim: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc could not build wrk's TLS shim: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(so)
}

/// wrk's handshakes in one run, as the shim counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handshakes {
    #[serde(rename = "tls_handshakes")]
    pub all: u64,
    #[serde(rename = "tls_resumed")]
    pub resumed: u64,
}

/// The shim's line in wrk's stderr.
pub fn handshakes(stderr: &str) -> Option<Handshakes> {
    stderr
        .lines()
        .rev()
        .find(|l| l.contains("\"tls_handshakes\""))
        .and_then(|l| serde_json::from_str(l.trim()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shims_line_is_read_back() {
        let err = "some warning\n{\"tls_handshakes\":120,\"tls_resumed\":118}\n";
        assert_eq!(
            handshakes(err),
            Some(Handshakes {
                all: 120,
                resumed: 118
            })
        );
        assert_eq!(handshakes("nothing"), None);
        assert_eq!(handshakes("{\"tls_handshakes\":oops}"), None);
    }

    #[test]
    fn bareweb_gets_tls_13_only() {
        let p = Pki {
            cert: "/c.pem".into(),
            key: "/k.pem".into(),
        };
        assert_eq!(
            p.bareweb_args(),
            [
                "--tls-cert",
                "/c.pem",
                "--tls-key",
                "/k.pem",
                "--tls-min",
                "1.3"
            ]
        );
    }

    #[test]
    fn the_shim_wraps_connect_and_clear() {
        assert!(SHIM_C.contains("int SSL_connect(SSL *s)"));
        assert!(SHIM_C.contains("int SSL_clear(SSL *s)"));
        assert!(SHIM_C.contains("BAREWEB_WRK_FULL"));
    }
}
