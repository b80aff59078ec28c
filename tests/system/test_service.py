"""The systemd unit in examples/deploy: its syntax (systemd-analyze verify), and that what
it grants is enough — `bareweb serve` run as an unprivileged user holding only
CAP_NET_ADMIN (the unit's AmbientCapabilities) on a TAP made beforehand, as its
ExecStartPre does, serves the site and drains on SIGTERM."""
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

from conftest import BIN, ROOT, SERVER_IP, SITE, Netns, require_root

UNIT = ROOT / "examples" / "deploy" / "bareweb.service"


def test_unit_file_is_valid():
    if shutil.which("systemd-analyze") is None:
        raise AssertionError("systemd-analyze missing (Debian package systemd)")
    with tempfile.TemporaryDirectory() as tmp:
        text = UNIT.read_text().replace("/usr/local/bin/bareweb", str(BIN))
        unit = pathlib.Path(tmp) / "bareweb.service"
        unit.write_text(text)
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        # Only warnings about the example's own paths (the site image) may remain.
        assert "Unknown" not in r.stderr and "Invalid" not in r.stderr, r.stderr


def test_unit_capabilities_are_enough():
    require_root()
    text = UNIT.read_text()
    caps = re.search(r"^AmbientCapabilities=(.*)$", text, re.M).group(1).split()
    assert caps == ["CAP_NET_ADMIN"], caps
    ns = Netns("bws")
    proc = None
    try:
        ns.ip("tuntap", "add", "dev", "bw0", "mode", "tap")
        ns.ip("addr", "add", "10.0.0.1/24", "dev", "bw0")
        ns.ip("link", "set", "bw0", "up")
        log = tempfile.TemporaryFile("w+")
        # A Debian host's udev makes /dev/net/tun 0666; a machine without udev (this
        # test's, a container) may have it 0600. The server gets the usual one, in its own
        # mount namespace (`ip netns exec` makes one), without touching the host's node.
        tun = pathlib.Path(tempfile.mkdtemp(prefix="bwtun")) / "tun"
        serve = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups",
                 "--inh-caps", "-all,+net_admin", "--ambient-caps", "-all,+net_admin",
                 "--no-new-privs", str(BIN), "serve", str(SITE), "--tap", "bw0",
                 "--host-ip", "none", "--ip", f"{SERVER_IP}/24", "--drain-grace", "1",
                 "--drain-timeout", "5"]
        script = (f"mknod -m 666 {tun} c 10 200 && mount --bind {tun} /dev/net/tun && "
                  f"exec {' '.join(serve)}")
        proc = subprocess.Popen(ns.cmd("sh", "-c", script), stdout=log,
                                stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        code = ""
        while time.time() < deadline and code != "200":
            assert proc.poll() is None, _out(log)
            code = ns.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                          "1", f"http://{SERVER_IP}/", check=False).stdout
            time.sleep(0.1)
        assert code == "200", _out(log)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0, _out(log)
        assert "drain" in _out(log), _out(log)
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        ns.close()
        shutil.rmtree(tun.parent, ignore_errors=True)


def _out(log):
    log.flush()
    log.seek(0)
    return log.read()
