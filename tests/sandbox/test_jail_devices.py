"""A jailed tool cannot change the host's device nodes.

bubblewrap maps the jail's uid to its caller's, so on a root host a tool inside owned every
root-owned file on a writable mount; ``--dev`` bind-mounts the host's ``/dev/null`` and friends,
and ``chmod 0 /dev/null`` inside a jail changed the host's (found while testing pooled jails,
gate off). The oracle is the host's own ``stat`` of its device nodes, before and after.
"""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from rtlforge.sandbox.runner import Limits, SandboxRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
ATTACK = ("for d in null zero full random urandom tty; do chmod 000 /dev/$d 2>/dev/null && "
          "echo CHANGED $d; touch -d 2001-01-01 /dev/$d 2>/dev/null && echo TOUCHED $d; done; "
          "echo kept > /dev/null && head -c 4 /dev/urandom | wc -c")


def _host_modes() -> dict[str, tuple[int, int]]:
    return {d: (os.stat(d).st_mode, int(os.stat(d).st_mtime)) for d in DEVICES
            if os.path.exists(d)}


@pytest.mark.parametrize("persistent", [True, False], ids=["pooled", "per-run"])
def test_a_jailed_tool_cannot_chmod_the_hosts_devices(persistent: bool) -> None:
    before = _host_modes()
    assert stat.S_IMODE(before["/dev/null"][0]) == 0o666, "the host's /dev/null is not 0666"
    try:
        with SandboxRunner(Limits(timeout_s=10), persistent_jails=persistent) as runner:
            for _ in range(2):  # the second run shows the first left working devices behind
                with runner.workspace() as wd:
                    run = runner.run(["sh", "-c", ATTACK], cwd=wd)
                assert "CHANGED" not in run.stdout and "TOUCHED" not in run.stdout, run.stdout
                assert run.stdout.split()[-1] == "4", run  # the devices still work inside
        assert _host_modes() == before
    finally:
        for dev, (mode, _) in before.items():  # never leave the machine broken
            if os.stat(dev).st_mode != mode:
                os.chmod(dev, stat.S_IMODE(mode))
