"""docs/python.md's examples marked "runs as written" run as written: each
in a new process, a new domain, a new folder and no configuration (as a
newcomer pastes it), printing what its last comment says."""

import os
import re
import subprocess
import sys

import shmbus
from conftest import SHMTOOL, SOURCE_DIR

MARK = "<!-- runs as written: tests/python/test_docs.py -->"


def _examples() -> list[str]:
    with open(os.path.join(SOURCE_DIR, "docs", "python.md")) as f:
        text = f.read()
    return re.findall(re.escape(MARK) + r"\n```python\n(.*?)```\n", text, re.S)


def test_the_marked_examples_run_and_print_what_they_say(tmp_path):
    examples = _examples()
    assert len(examples) == 3  # the first one, the image and the service
    python_dir = os.path.dirname(os.path.dirname(shmbus.__file__))
    for i, code in enumerate(examples):
        expected = [line[2:] for line in code.splitlines() if line.startswith("# ")][-1]
        folder = tmp_path / f"example{i}"
        folder.mkdir()
        domain = f"docs_{os.getpid()}_{i}"
        env = dict(os.environ, PYTHONPATH=python_dir, SHMBUS_DOMAIN=domain, SHMBUS_CONFIG="", SHMBUS_MSG_PATH="")
        try:
            r = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                               timeout=120)
        finally:
            subprocess.run([SHMTOOL, "clean"], env=env, capture_output=True, timeout=60)
        assert r.returncode == 0, f"example {i}:\n{code}\n{r.stderr}"
        assert r.stdout.strip() == expected, r.stdout
        assert r.stderr == "", r.stderr


def test_the_rclpy_script_shown_is_the_one_the_tutorial_test_runs():
    with open(os.path.join(SOURCE_DIR, "docs", "python.md")) as f:
        text = f.read()
    shown = re.search(r"ROS 2's publisher tutorial, unchanged.*?```python\n(.*?)```\n", text, re.S).group(1)
    path = os.path.join(SOURCE_DIR, "tests", "python", "rclpy_tutorials", "publisher_member_function.py")
    with open(path) as f:
        tested = "".join(line for line in f if not line.startswith("# "))  # its comment says what it is
    assert shown == tested


def test_the_action_programs_shown_are_the_ones_the_tests_run():
    """docs/actions.md shows ROS 2's Fibonacci tutorial server and client,
    C++ and Python, as the files the action tests run (their leading
    comments, which say what each is, aside)."""
    with open(os.path.join(SOURCE_DIR, "docs", "actions.md")) as f:
        text = f.read()
    shown = re.findall(r"<!-- shown as written: (\S+) -->\n```\w+\n(.*?)```\n", text, re.S)
    assert len(shown) == 4
    for path, code in shown:
        comment = "// " if path.endswith(".cpp") else "# "
        with open(os.path.join(SOURCE_DIR, path)) as f:
            tested = "".join(line for line in f if not line.startswith(comment))
        assert code == tested, path
