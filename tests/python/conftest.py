"""Fixtures of the Python package's tests (run by ctest: tests/CMakeLists.txt
sets PYTHONPATH to the build tree's package and names the programs).

Each pytest process is its own domain, set before shmbus is imported (the
process's default context reads SHMBUS_DOMAIN once), with a configuration
whose /py/* channels are deep enough that a busy machine loses nothing at
1 kHz; its segments are removed at the end.
"""

import atexit
import glob
import os
import subprocess
import tempfile
import time

_DOMAIN = f"py_{os.getpid()}"
_CONFIG_DIR = tempfile.mkdtemp(prefix="shmbus-py-")
_CONFIG = os.path.join(_CONFIG_DIR, "shmbus.toml")
with open(_CONFIG, "w") as f:
    f.write(
        '[[channel]]\nname = "/py/*"\ncapacity = 8192\nmax_message_size = 4096\n'
        '[[channel]]\nname = "/py/image*"\ncapacity = 4\nmax_message_size = 1048576\n'
        '[[channel]]\nname = "/py/add*"\ncapacity = 64\nmax_message_size = 256\n')
os.environ["SHMBUS_DOMAIN"] = _DOMAIN
os.environ["SHMBUS_CONFIG"] = _CONFIG


def _cleanup() -> None:
    for p in glob.glob(f"/dev/shm/shmbus.{_DOMAIN}.*"):
        os.unlink(p)
    os.unlink(_CONFIG)
    os.rmdir(_CONFIG_DIR)


atexit.register(_cleanup)

SHMTOOL = os.environ.get("SHMTOOL", "shmtool")
SOURCE_DIR = os.environ.get("SHMBUS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
ADDER_SRV = os.path.join(SOURCE_DIR, "examples", "adder", "srv")


def wait_until(predicate, timeout: float, what: str):
    """Polls `predicate` every 10 ms until it is true; fails naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def subscribers(channel: str) -> int:
    import shmbus
    for c in shmbus.channels():
        if c.get("name") == channel:
            return c.get("subscribers", 0)
    return 0


def shmtool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([SHMTOOL, *args], capture_output=True, text=True, timeout=timeout)
