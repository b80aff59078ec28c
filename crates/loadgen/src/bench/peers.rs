//! The kernel servers bareweb is compared with — nginx, lighttpd and h2o from Debian — and
//! their knobs: each kind lists the configurations a bench's search tries
//! ([`ServerKind::tunings`]: "baselines at their best"), and starts with the one
//! in its [`StartCtx`] (or its fixed default when the scenario searches nothing).
//!
//! The knobs are the ones that move a static-file result on Linux: nginx's `sendfile`,
//! `tcp_nopush` (TCP_CORK, only with sendfile), `open_file_cache` and workers; lighttpd's
//! network backend (sendfile or writev), its stat cache and workers; h2o's threads (it has
//! no sendfile switch: it reads files into its buffers). A search of HTTPS series alone
//! leaves out sendfile, tcp_nopush and lighttpd's backend: without kTLS each server
//! encrypts in user space and none of them sends a file's pages with sendfile.
//!
//! HTTPS (a scenario with a `tls` series: [`StartCtx::tls`]): each serves the bench's
//! ECDSA P-256 certificate on port 443 besides plain HTTP on 80, TLS 1.3 only, with its
//! session resumption on as its documentation recommends: nginx a shared session cache
//! (`ssl_session_cache shared:SSL:10m`) and tickets; lighttpd `mod_openssl` (Debian's
//! lighttpd-mod-openssl), whose resumption is tickets (keys of its own, rotated); h2o
//! `ssl-session-resumption: mode: all` (its internal cache and tickets).

use serde::{Deserialize, Serialize};

use super::servers::{start_kernel_server, version, which, write, Instance, ServerKind, StartCtx};

/// One configuration of a peer's knobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tuning {
    /// Worker processes or threads.
    pub workers: u32,
    /// On/off knobs in the server's own words, in a fixed order.
    pub knobs: Vec<(String, bool)>,
}

impl Tuning {
    fn new(workers: u32, knobs: &[(&str, bool)]) -> Tuning {
        Tuning {
            workers,
            knobs: knobs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    /// The knob `name`'s setting (`default` if this tuning does not set it).
    pub fn get(&self, name: &str, default: bool) -> bool {
        self.knobs
            .iter()
            .find(|(k, _)| k == name)
            .map_or(default, |(_, v)| *v)
    }

    /// "sendfile on, tcp_nopush off, open_file_cache on, 1 worker".
    pub fn label(&self, unit: &str) -> String {
        let mut parts: Vec<String> = self
            .knobs
            .iter()
            .map(|(k, v)| format!("{k} {}", if *v { "on" } else { "off" }))
            .collect();
        let plural = match (self.workers, unit.ends_with('s')) {
            (1, _) => "",
            (_, true) => "es",
            _ => "s",
        };
        parts.push(format!("{} {unit}{plural}", self.workers));
        parts.join(", ")
    }
}

/// nginx from Debian, for static files (tcp_nodelay, no access log, and the knobs).
pub struct Nginx {
    /// The fixed default's tcp_nopush (kinds `nginx` and `nginx-nopush-off`).
    pub nopush: bool,
}

impl Nginx {
    fn default_tuning(&self, cores: u32) -> Tuning {
        Tuning::new(
            cores,
            &[
                ("sendfile", true),
                ("tcp_nopush", self.nopush),
                ("open_file_cache", true),
            ],
        )
    }
}

fn on(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

impl ServerKind for Nginx {
    fn name(&self) -> &'static str {
        if self.nopush {
            "nginx"
        } else {
            "nginx-nopush-off"
        }
    }
    fn describe(&self, cores: u32) -> String {
        self.describe_tuned(&self.default_tuning(cores))
    }
    fn describe_tuned(&self, t: &Tuning) -> String {
        let v = version(&["nginx", "-v"]);
        format!(
            "{} ({}, no access log; veth)",
            v.trim_start_matches("nginx version: "),
            t.label("worker")
        )
    }
    fn tunings(&self, workers: &[u32], tls: bool) -> Vec<Tuning> {
        let mut out = Vec::new();
        for &w in workers {
            if tls {
                for cache in [true, false] {
                    out.push(Tuning::new(w, &[("open_file_cache", cache)]));
                }
                continue;
            }
            // tcp_nopush acts only with sendfile.
            for (sendfile, nopush) in [(true, true), (true, false), (false, false)] {
                for cache in [true, false] {
                    out.push(Tuning::new(
                        w,
                        &[
                            ("sendfile", sendfile),
                            ("tcp_nopush", nopush),
                            ("open_file_cache", cache),
                        ],
                    ));
                }
            }
        }
        out
    }
    fn check(&self) -> Result<(), String> {
        which("nginx", "nginx")
    }
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String> {
        let t = ctx
            .tuning
            .clone()
            .unwrap_or_else(|| self.default_tuning(ctx.cores));
        let name = self.name();
        let dir = ctx.work.join(format!("{name}-{}", ctx.tag));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let d = dir.display();
        let site = ctx.site.display();
        let workers = t.workers;
        let sendfile = on(t.get("sendfile", true));
        let nopush = on(t.get("tcp_nopush", true) && t.get("sendfile", true));
        let cache = if t.get("open_file_cache", true) {
            "open_file_cache max=10000 inactive=60s;\n    open_file_cache_valid 60s;"
        } else {
            "open_file_cache off;"
        };
        // Workers as root (the bench runs as root), like lighttpd and h2o here: nginx's
        // default user cannot enter a results folder only root may (mktemp -d).
        let user = if crate::sys::is_root() {
            "user root;\n"
        } else {
            ""
        };
        let tls = ctx.tls.map_or(String::new(), |p| {
            format!(
                "ssl_certificate {};
    ssl_certificate_key {};
    ssl_protocols TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    ssl_session_timeout 1h;
    ssl_session_tickets on;
    ",
                p.cert.display(),
                p.key.display()
            )
        });
        start_kernel_server(ctx, name, self.describe_tuned(&t), &|ip| {
            let conf = dir.join("nginx.conf");
            let listen_tls = if ctx.tls.is_some() {
                format!("listen {ip}:443 ssl backlog=8192; ")
            } else {
                String::new()
            };
            write(
                &conf,
                &format!(
                    "{user}worker_processes {workers};
pid {d}/nginx.pid;
error_log {d}/error.log;
worker_rlimit_nofile 65536;
events {{ worker_connections 16384; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile {sendfile};
    tcp_nopush {nopush};
    tcp_nodelay on;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
    {cache}
    client_body_temp_path {d};
    proxy_temp_path {d};
    fastcgi_temp_path {d};
    uwsgi_temp_path {d};
    scgi_temp_path {d};
    {tls}server {{ listen {ip}:80 backlog=8192; {listen_tls}root {site}; }}
}}
"
                ),
            )?;
            Ok(vec![
                "nginx".into(),
                "-c".into(),
                conf.display().to_string(),
                "-g".into(),
                "daemon off;".into(),
            ])
        })
    }
}

/// lighttpd from Debian, for static files.
pub struct Lighttpd;

impl Lighttpd {
    fn default_tuning(cores: u32) -> Tuning {
        Tuning::new(cores, &[("sendfile", true), ("stat_cache", true)])
    }
}

impl ServerKind for Lighttpd {
    fn name(&self) -> &'static str {
        "lighttpd"
    }
    fn describe(&self, cores: u32) -> String {
        self.describe_tuned(&Self::default_tuning(cores))
    }
    fn describe_tuned(&self, t: &Tuning) -> String {
        let v = version(&["lighttpd", "-v"]);
        let v = v
            .split(" - ")
            .next()
            .unwrap_or(&v)
            .replace(" (ssl)", "")
            .trim()
            .to_string();
        format!("{v} ({}, no access log; veth)", t.label("process"))
    }
    fn tunings(&self, workers: &[u32], tls: bool) -> Vec<Tuning> {
        let mut out = Vec::new();
        for &w in workers {
            if tls {
                for cache in [true, false] {
                    out.push(Tuning::new(w, &[("stat_cache", cache)]));
                }
                continue;
            }
            for sendfile in [true, false] {
                for cache in [true, false] {
                    out.push(Tuning::new(
                        w,
                        &[("sendfile", sendfile), ("stat_cache", cache)],
                    ));
                }
            }
        }
        out
    }
    fn check(&self) -> Result<(), String> {
        which("lighttpd", "lighttpd")
    }
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String> {
        let t = ctx
            .tuning
            .clone()
            .unwrap_or_else(|| Self::default_tuning(ctx.cores));
        let dir = ctx.work.join(format!("lighttpd-{}", ctx.tag));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let d = dir.display().to_string();
        let site = ctx.site.display().to_string();
        let backend = if t.get("sendfile", true) {
            "sendfile"
        } else {
            "writev"
        };
        let cache = if t.get("stat_cache", true) {
            "simple"
        } else {
            "disable"
        };
        let workers = if t.workers > 1 {
            format!("server.max-worker = {}\n", t.workers)
        } else {
            String::new()
        };
        start_kernel_server(ctx, "lighttpd", self.describe_tuned(&t), &|ip| {
            let conf = dir.join("lighttpd.conf");
            let tls = ctx.tls.map_or(String::new(), |p| {
                format!(
                    r#"server.modules = ("mod_openssl")
$SERVER["socket"] == "{ip}:443" {{
    ssl.engine = "enable"
    ssl.pemfile = "{}"
    ssl.privkey = "{}"
    ssl.openssl.ssl-conf-cmd = ("MinProtocol" => "TLSv1.3")
}}
"#,
                    p.cert.display(),
                    p.key.display()
                )
            });
            write(
                &conf,
                &format!(
                    r#"server.document-root = "{site}"
server.bind = "{ip}"
server.port = 80
server.pid-file = "{d}/lighttpd.pid"
server.errorlog = "{d}/error.log"
server.network-backend = "{backend}"
server.max-connections = 16384
server.max-fds = 65536
server.max-keep-alive-requests = 10000000
server.max-keep-alive-idle = 60
server.listen-backlog = 8192
server.stat-cache-engine = "{cache}"
index-file.names = ("index.html")
mimetype.assign = (".html" => "text/html", ".css" => "text/css", ".png" => "image/png", ".svg" => "image/svg+xml", ".txt" => "text/plain", "" => "application/octet-stream")
{workers}{tls}"#
                ),
            )?;
            Ok(vec![
                "lighttpd".into(),
                "-D".into(),
                "-f".into(),
                conf.display().to_string(),
            ])
        })
    }
}

/// h2o from Debian, for static files.
pub struct H2o;

impl ServerKind for H2o {
    fn name(&self) -> &'static str {
        "h2o"
    }
    fn describe(&self, cores: u32) -> String {
        self.describe_tuned(&Tuning::new(cores, &[]))
    }
    fn describe_tuned(&self, t: &Tuning) -> String {
        let v = version(&["h2o", "--version"]);
        format!(
            "{} ({}, no access log; veth)",
            v.replace("h2o version ", "h2o/"),
            t.label("thread")
        )
    }
    fn tunings(&self, workers: &[u32], _tls: bool) -> Vec<Tuning> {
        workers.iter().map(|&w| Tuning::new(w, &[])).collect()
    }
    fn check(&self) -> Result<(), String> {
        which("h2o", "h2o")
    }
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String> {
        let threads = ctx.tuning.as_ref().map_or(ctx.cores, |t| t.workers);
        let label = self.describe_tuned(&Tuning::new(threads, &[]));
        let dir = ctx.work.join(format!("h2o-{}", ctx.tag));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let d = dir.display().to_string();
        let site = ctx.site.display().to_string();
        start_kernel_server(ctx, "h2o", label, &|ip| {
            let conf = dir.join("h2o.conf");
            // h2o 2.2 takes one global `listen`; the HTTPS one is the host's own.
            let (resumption, listen_tls) = ctx.tls.map_or((String::new(), String::new()), |p| {
                (
                    "ssl-session-resumption:\n  mode: all\n".to_string(),
                    format!(
                        "    listen:
      host: {ip}
      port: 443
      ssl:
        certificate-file: {}
        key-file: {}
        min-version: TLSv1.3
",
                        p.cert.display(),
                        p.key.display()
                    ),
                )
            });
            write(
                &conf,
                &format!(
                    r#"listen:
  host: {ip}
  port: 80
{resumption}user: root
num-threads: {threads}
max-connections: 16384
pid-file: {d}/h2o.pid
error-log: {d}/error.log
file.send-compressed: OFF
http1-request-timeout: 60
hosts:
  "default":
{listen_tls}    paths:
      "/":
        file.dir: {site}
"#
                ),
            )?;
            Ok(vec!["h2o".into(), "-c".into(), conf.display().to_string()])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_combination_that_means_something_is_tried_once() {
        let n = Nginx { nopush: true }.tunings(&[1, 2], false);
        assert_eq!(n.len(), 12);
        let mut labels: Vec<String> = n.iter().map(|t| t.label("worker")).collect();
        labels.sort();
        labels.dedup();
        assert_eq!(labels.len(), 12);
        // tcp_nopush is only tried with sendfile.
        assert!(n
            .iter()
            .all(|t| t.get("sendfile", true) || !t.get("tcp_nopush", true)));
        assert_eq!(Lighttpd.tunings(&[1], false).len(), 4);
        assert_eq!(H2o.tunings(&[1, 2], false).len(), 2);
        // HTTPS alone: no sendfile knobs (user-space TLS sends no file pages), workers and
        // the caches still searched.
        let t = Nginx { nopush: true }.tunings(&[1, 2], true);
        assert_eq!(t.len(), 4);
        assert!(t
            .iter()
            .all(|x| x.knobs.len() == 1 && x.knobs[0].0 == "open_file_cache"));
        assert_eq!(Lighttpd.tunings(&[1, 2], true).len(), 4);
        assert_eq!(H2o.tunings(&[1, 2], true).len(), 2);
        assert_eq!(
            n[1].label("worker"),
            "sendfile on, tcp_nopush on, open_file_cache off, 1 worker"
        );
    }
}
