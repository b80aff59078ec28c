"""The deployment examples in examples/deploy are files a user copies as they are: each is
checked by the tool that will read it. The libvirt domain is well-formed XML (libvirt's
parser refuses what Python's does, e.g. two hyphens inside a comment) and names the disk
image and the virtio NIC docs/deploy.md describes; HAProxy's configuration passes
`haproxy -c`; the rolling-update script parses (`sh -n`). (The systemd unit has its own
test, test_service.py; keepalived.conf is for a production host, and keepalived is not
installed here.)"""
import shutil
import subprocess
import xml.dom.minidom

from conftest import ROOT

DEPLOY = ROOT / "examples" / "deploy"


def test_libvirt_domain_is_well_formed_and_boots_the_disk_image_with_virtio_net():
    dom = xml.dom.minidom.parse(str(DEPLOY / "libvirt-bareweb.xml"))
    root = dom.documentElement
    assert root.tagName == "domain", root.tagName
    assert root.getElementsByTagName("name")[0].firstChild.data == "bareweb-web1"
    sources = [s.getAttribute("file") for s in root.getElementsByTagName("source")]
    assert "/var/lib/libvirt/images/bareweb-web1.img" in sources, sources
    models = [m.getAttribute("type") for m in root.getElementsByTagName("model")]
    assert "virtio" in models, models


def test_haproxy_example_passes_haproxy_check():
    if shutil.which("haproxy") is None:
        raise AssertionError("haproxy missing (Debian package haproxy; cargo xtask setup)")
    r = subprocess.run(["haproxy", "-c", "-f", DEPLOY / "haproxy.cfg"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_rolling_update_script_parses():
    r = subprocess.run(["sh", "-n", DEPLOY / "rolling-update.sh"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
