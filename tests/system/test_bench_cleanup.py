"""`bareweb bench` that dies half-way leaves nothing behind (once, `bench --smoke 2>&1 |
head -3` left a `bareweb serve` and a namespace). Its messages go into a pipe the reader
closes once two servers are starting; the next message then fails, the bench panics (and
the release build aborts), and its panic hook must remove every namespace and stop every
server it started. The other way out, a closed stdout with the bench finishing, is the
smoke stage of `cargo xtask test` (xtask/src/bench.rs)."""
import os
import subprocess

from conftest import BIN, require_root


def left_behind(pid, out):
    prefix = f"bwl{pid % 100000}"
    left = [f"namespace {n}" for n in os.listdir("/run/netns") if n.startswith(prefix)] \
        if os.path.isdir("/run/netns") else []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(out) in cmd:
            left.append(f"process {d}: {cmd}")
    return left


def test_a_bench_whose_stderr_closes_leaves_no_namespace_or_server(tmp_path):
    require_root()
    out = tmp_path / "results"
    p = subprocess.Popen([BIN, "bench", "--smoke", "--out", out], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    seen, starting = [], 0
    try:
        for line in p.stdout:
            seen.append(line)
            starting += "starting" in line
            if starting == 2:  # bareweb serve is up, nginx starting
                break
        p.stdout.close()
        rc = p.wait(120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert starting == 2, "".join(seen)
    assert rc != 0, "the next message went into a closed pipe: the bench cannot go on"
    assert left_behind(p.pid, out) == []
