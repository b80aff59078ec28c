//! The HTTPS tests' side of `openssl`: a test CA and a P-256 leaf for `site.test` made with
//! the `openssl` command, and `openssl s_server` run on 127.0.0.1 (killed when dropped).
//! Shared by crates/loadgen/tests/https.rs and crates/cli/tests/load_https.rs.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Whether `openssl` can be run. Without it the tests are skipped with a message, but
/// not on CI (`CI` set, and not `false` or `0`): there a missing `openssl` fails them.
pub fn have_openssl(test: &str) -> bool {
    let ok = Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !ci,
        "{test}: the `openssl` command is needed (CI is set: not skipped)"
    );
    eprintln!("{test}: SKIPPED: no `openssl` command on this machine (install OpenSSL to run it)");
    false
}

/// Files of a test PKI in a temporary directory (removed when dropped).
pub struct Pki {
    pub dir: PathBuf,
    /// The CA that issued the leaf.
    pub ca: PathBuf,
    /// Another CA, that issued nothing the server holds.
    pub other_ca: PathBuf,
    /// The leaf for `site.test` (and only that name), issued by `ca`, and its key.
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Pki {
    /// Makes the CAs and the leaf (ECDSA P-256, valid two days from now) under a new
    /// directory named after `tag`.
    pub fn make(tag: &str) -> Pki {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "bareweb-load-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = |name: &str| {
            openssl(
                &dir,
                &[
                    "ecparam",
                    "-genkey",
                    "-name",
                    "prime256v1",
                    "-noout",
                    "-out",
                    name,
                ],
            )
        };
        for (k, pem, cn) in [
            ("ca.key", "ca.pem", "/CN=bareweb load test CA"),
            ("other-ca.key", "other-ca.pem", "/CN=another test CA"),
        ] {
            key(k);
            openssl(
                &dir,
                &[
                    "req",
                    "-x509",
                    "-new",
                    "-key",
                    k,
                    "-sha256",
                    "-days",
                    "2",
                    "-subj",
                    cn,
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign",
                    "-out",
                    pem,
                ],
            );
        }
        key("leaf.key");
        openssl(
            &dir,
            &[
                "req",
                "-new",
                "-key",
                "leaf.key",
                "-subj",
                "/CN=site.test",
                "-out",
                "leaf.csr",
            ],
        );
        std::fs::write(
            dir.join("leaf.ext"),
            "subjectAltName=DNS:site.test\nbasicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-set_serial",
                "2",
                "-days",
                "2",
                "-sha256",
                "-extfile",
                "leaf.ext",
                "-out",
                "leaf.pem",
            ],
        );
        Pki {
            ca: dir.join("ca.pem"),
            other_ca: dir.join("other-ca.pem"),
            cert: dir.join("leaf.pem"),
            key: dir.join("leaf.key"),
            dir,
        }
    }
}

/// `openssl s_server -www` on 127.0.0.1 (a port of its choosing) with the leaf; killed
/// when dropped. It answers each connection's request with an HTTP/1.0 status page and
/// closes it, one connection at a time.
pub struct SServer {
    child: Child,
    pub port: u16,
}

impl Drop for SServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SServer {
    /// Starts it with `extra` options (e.g. `-tls1_2`); waits (10 s at most) for its
    /// `ACCEPT` line.
    pub fn start(pki: &Pki, extra: &[&str]) -> SServer {
        let mut child = Command::new("openssl")
            .arg("s_server")
            .args(["-accept", "127.0.0.1:0", "-www", "-cert"])
            .arg(&pki.cert)
            .arg("-key")
            .arg(&pki.key)
            .args(extra)
            .stdin(Stdio::piped()) // kept open: s_server ends at EOF on its input
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start openssl s_server");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                if let Some(port) = line
                    .strip_prefix("ACCEPT ")
                    .and_then(|a| a.rsplit(':').next())
                    .and_then(|p| p.trim().parse::<u16>().ok())
                {
                    let _ = tx.send(port);
                    break;
                }
            }
            // Keep reading, so that its output never blocks it.
            for _ in lines {}
        });
        let port = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(p) => p,
            Err(_) => {
                let _ = child.kill();
                panic!("openssl s_server said no ACCEPT line within 10 s");
            }
        };
        SServer { child, port }
    }
}
