"""Receive offloads on the bare client's TAP (the kernel-bypass work), side by side: client CPU per fetch (its own
thread, the report's) and the server's CPU per fetch (every thread of the server process,
from /proc/PID/task/*/schedstat), offloads on and off interleaved, bareweb serve on a TAP
and nginx (master_process off, 1 worker, sendfile, tcp_nopush) on the bridge's address.

    flock /work/coord/bench.lock nice -n -15 python3 bench/rx_offload.py [SCALE [ROUNDS]]

Root; needs `cargo build --release -p bareweb` and nginx. SCALE multiplies the fetches of
each run (1: 800 x 1 MiB, 40000 x 4 KiB kept alive, 15000 x 4 KiB a connection each;
nginx a quarter of that); ROUNDS (default 2) alternate which of on/off goes first. The
namespace's name holds the PID; it and the servers are removed at the end. Results:
docs/perf/log/2026-11-25-bare-client-rx-offloads.md."""
import glob, json, os, pathlib, shutil, signal, subprocess, sys, tempfile, time
ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = str(ROOT / "target" / "release" / "bareweb")
SITE = str(ROOT / "examples" / "site")
NS = f"bwoff{os.getpid()}"
SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
def ns(*a, check=True):
    return subprocess.run(["ip", "netns", "exec", NS, *map(str, a)], capture_output=True,
                          text=True, check=check)
def cpu_ns(pid):
    t = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            t += int(open(f).read().split()[0])
        except OSError:
            pass
    return t
procs = []
tmp = tempfile.mkdtemp(prefix="bwoff")
subprocess.run(["ip", "netns", "add", NS], check=True)
try:
    ns("ip", "link", "set", "lo", "up")
    for t in ("bw0", "bwc0"):
        ns("ip", "tuntap", "add", t, "mode", "tap")
    ns("ip", "link", "add", "br0", "type", "bridge")
    for p in ("bw0", "bwc0"):
        ns("ip", "link", "set", p, "master", "br0")
    for d in ("br0", "bw0", "bwc0"):
        ns("ip", "link", "set", d, "up")
    ns("ip", "addr", "add", "10.0.0.1/24", "dev", "br0")
    log = open(f"{tmp}/serve.log", "w+")
    bw = subprocess.Popen(["ip", "netns", "exec", NS, BIN, "serve", SITE, "--tap", "bw0",
                           "--host-ip", "none", "--ip", "10.0.0.2/24", "--mac",
                           "02:00:00:00:00:02"], stdout=log, stderr=subprocess.STDOUT)
    procs.append(bw)
    conf = f"{tmp}/nginx.conf"
    open(conf, "w").write(f"""user root; master_process off; daemon off; worker_processes 1;
pid {tmp}/nginx.pid; error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{ include /etc/nginx/mime.types; access_log off; sendfile on; tcp_nopush on;
  tcp_nodelay on; keepalive_requests 10000000; client_body_temp_path {tmp};
  proxy_temp_path {tmp}; fastcgi_temp_path {tmp}; uwsgi_temp_path {tmp}; scgi_temp_path {tmp};
  server {{ listen 10.0.0.1:80 backlog=8192; root {SITE}; }} }}
""")
    ng = subprocess.Popen(["ip", "netns", "exec", NS, "nginx", "-c", conf],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(ng)
    deadline = time.time() + 20
    while "serving" not in open(log.name).read():
        assert time.time() < deadline, open(log.name).read()
        time.sleep(0.1)
    time.sleep(0.5)
    servers = {"bareweb": ("10.0.0.2", bw.pid), "nginx": ("10.0.0.1", ng.pid)}
    # The pid of the process in the namespace (ip netns exec execs it: same pid).
    # Bounded by fetches, not time: a run cut by time leaves fetches in flight, whose
    # connections the server still holds when the next run reuses their ports.
    cases = [("1MiB -k p2", "/files/1m.bin", ["-k", "--parallel", "2"], 800),
             ("4KiB -k p8", "/files/4k.html", ["-k", "--parallel", "8"], 40000),
             ("4KiB conn/req p8", "/files/4k.html", ["--parallel", "8"], 15000)]
    res = {}
    for rnd in range(ROUNDS):
        for sname, (ip, pid) in servers.items():
            for cname, path, extra, count in cases:
                count = int(count * SCALE) if sname == "bareweb" else int(count * SCALE / 4)
                for off in ((False, True) if rnd % 2 == 0 else (True, False)):
                    c0 = cpu_ns(pid)
                    r = ns(BIN, "load", "--tap", "bwc0", "--ip", "10.0.0.3/24", "--mac", "02:00:00:00:00:03",
                           f"http://{ip}{path}", *extra, "--fetches", count, "--seconds", "20", "--json", "-q",
                           *(["--no-offload"] if off else []), check=False)
                    c1 = cpu_ns(pid)
                    rep = json.loads(r.stdout)
                    n = max(rep["fetches_ok"], 1)
                    res.setdefault((sname, cname, off), []).append(
                        (rep["fetches_per_sec"], rep["client_cpu_us_per_fetch"],
                         (c1 - c0) / 1e3 / n, rep["offloaded_frames"] / n, rep["errors_total"]))
    print(f"{'server':8} {'case':18} {'offload':8} {'fetch/s':>9} {'client us/fetch':>16} "
          f"{'server us/fetch':>16} {'super-frames/fetch':>19} errors")
    for (sname, cname, off), runs in sorted(res.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        m = lambda i: sum(x[i] for x in runs) / len(runs)
        print(f"{sname:8} {cname:18} {'off' if off else 'on':8} {m(0):9.0f} {m(1):16.1f} "
              f"{m(2):16.1f} {m(3):19.2f} {sum(x[4] for x in runs)}")
    for sname in servers:
        for cname, _, _, _ in cases:
            on, off = res[(sname, cname, False)], res[(sname, cname, True)]
            m = lambda runs, i: sum(x[i] for x in runs) / len(runs)
            print(f"{sname:8} {cname:18} on/off: fetch/s {m(on,0)/m(off,0):.2f}x, client CPU/fetch "
                  f"{m(on,1)/m(off,1):.2f}x, server CPU/fetch {m(on,2)/m(off,2):.2f}x")
finally:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    subprocess.run(["ip", "netns", "delete", NS])
    shutil.rmtree(tmp, ignore_errors=True)
