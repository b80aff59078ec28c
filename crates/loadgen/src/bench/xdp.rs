//! Server kind `bareweb-xdp`: `bareweb serve --xdp` on one end of a veth pair
//! between a server namespace and the client's, the topology of the kernel servers, so
//! the client crosses the same kind of link to either. The server end carries no address
//! (the host would own it); bareweb answers for 10.77.`net`.2 with that end's MAC, and the
//! XDP program leaves everything else to the server namespace's kernel.
//!
//! With more than one core the veth gets a queue pair per core on both ends (veth's XDP
//! needs as many receive queues as its peer sends on) and bareweb serves every queue,
//! one core each. The client end sends complete checksums (`ethtool -K ... tx off`): a
//! veth hands its peer's partial checksums to XDP as they are, and a frame read through
//! AF_XDP has no checksum status beside it, as it would not from a wire.

use super::servers::{spawn_in, wait_ready, Instance, ServerKind, StartCtx};
use super::topo::{sh, Netns};

pub struct BarewebXdp;

impl ServerKind for BarewebXdp {
    fn name(&self) -> &'static str {
        "bareweb-xdp"
    }
    fn describe(&self, cores: u32) -> String {
        let each = if cores == 1 {
            "one core".to_string()
        } else {
            format!("{cores} queues, one core each")
        };
        format!(
            "bareweb serve --xdp (host platform: own TCP/IP on AF_XDP sockets, native XDP on a veth, copy mode; {each})"
        )
    }
    fn check(&self) -> Result<(), String> {
        if std::path::Path::new("/usr/sbin/ethtool").exists()
            || std::path::Path::new("/sbin/ethtool").exists()
        {
            Ok(())
        } else {
            Err("ethtool is not installed (apt-get install ethtool)".into())
        }
    }
    fn start(&self, ctx: &StartCtx) -> Result<Instance, String> {
        let s = Netns::new(&format!("{}s", ctx.tag))?;
        let c = Netns::new(&format!("{}c", ctx.tag))?;
        c.tune_client()?;
        let (ea, eb) = (format!("{}a", ctx.tag), format!("{}b", ctx.tag));
        let q = ctx.cores.max(1).to_string();
        sh(&[
            "ip",
            "link",
            "add",
            &ea,
            "netns",
            &c.name,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            &eb,
            "netns",
            &s.name,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ])?;
        let client_ip = format!("10.77.{}.1/24", ctx.net);
        sh(&["ip", "-n", &c.name, "addr", "add", &client_ip, "dev", &ea])?;
        sh(&["ip", "-n", &c.name, "link", "set", &ea, "up"])?;
        sh(&["ip", "-n", &s.name, "link", "set", &eb, "up"])?;
        sh(&[
            "ip", "netns", "exec", &c.name, "ethtool", "-K", &ea, "tx", "off",
        ])?;
        let server_ip = format!("10.77.{}.2", ctx.net);
        let log = ctx.work.join(format!("bareweb-xdp-{}.log", ctx.tag));
        let mut cmd = vec![
            ctx.exe.display().to_string(),
            "serve".into(),
            ctx.site.display().to_string(),
            "--xdp".into(),
            eb.clone(),
            "--ip".into(),
            format!("{server_ip}/24"),
            "--tcbs".into(),
            "8192".into(),
            // The harness reads the stats JSON from the client's namespace.
            "--stats-allow".into(),
            format!("10.77.{}.0/24", ctx.net),
        ];
        if ctx.cores > 1 {
            cmd.extend(["--cores".into(), q.clone()]);
        }
        if let Some(t) = ctx.tls {
            cmd.extend(t.bareweb_args());
        }
        let child = spawn_in(&s.name, &cmd, &log)?;
        let mut inst = Instance {
            kind: "bareweb-xdp",
            name: "bareweb-xdp".into(),
            label: self.describe(ctx.cores),
            client_ns: c.name.clone(),
            server_ip,
            load_host: None,
            link: ea.clone(),
            bare: None,
            child: Some(child),
            log,
            stats_path: Some("/.well-known/bareweb/stats"),
            pausable: false,
            steer: super::pin::Steer::Napi {
                ns: s.name.clone(),
                dev: eb.clone(),
            },
            pinned: None,
            napi: Vec::new(),
            _namespaces: vec![c, s],
        };
        let url = inst.url(ctx.probe);
        wait_ready(&mut inst, &url, 15)?;
        super::servers::wait_https(&mut inst, ctx)?;
        Ok(inst)
    }
}
