""".ci/install cannot trip: it waits (bounded) for a held package lock, a failed browser install is a
note and never the end of the Python install, and on an externally managed Python it installs into
.venv and prints the one command to run next.

The script's functions are called from a sourced copy, with fake ``python``/``apt-get``
executables where the real ones would install something; nothing here touches the system's packages.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / ".ci" / "install"
BASH = shutil.which("bash") or "/bin/bash"

HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)  # the kind of lock apt and dpkg take
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""

# A stand-in for `python`: answers the PEP 668 probe with $FAKE_MANAGED (0: externally managed),
# makes a venv (a copy of itself) unless $FAKE_VENV_FAILS, and logs every pip call.
FAKE_PYTHON = """#!/bin/sh
echo "$0 $*" >> "$FAKE_LOG"
case "$1" in
  -c) case "$2" in
        *EXTERNALLY-MANAGED*) [ "$0" = "$FAKE_SYSTEM" ] && exit "${FAKE_MANAGED:-1}"; exit 1 ;;
        *) echo "$FAKE_SYSTEM"; exit 0 ;;
      esac ;;
  -m) if [ "$2" = venv ]; then
        [ -n "${FAKE_VENV_FAILS:-}" ] && { echo "Error: ensurepip is not available" >&2; exit 1; }
        mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0
      fi
      exit 0 ;;
esac
"""


def _bash(
    script: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    return subprocess.run([BASH, "-c", script], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


def _executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_the_script_parses():
    assert subprocess.run([BASH, "-n", str(INSTALL)], capture_output=True).returncode == 0


def test_sourcing_only_defines_functions(tmp_path):
    res = _bash(
        f". {INSTALL}; type wait_for_apt_locks target_python install_browser main >/dev/null && echo ok", cwd=tmp_path
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    assert list(tmp_path.iterdir()) == []  # nothing installed, nothing made


@contextlib.contextmanager
def _held(lock, seconds: int):
    """Another process holds ``lock`` (an flock, as apt/dpkg take it) for ``seconds`` while the block runs."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_a_held_package_lock_is_waited_for_then_used(tmp_path):
    lock = tmp_path / "lock-frontend"
    with _held(lock, 2):
        t0 = time.monotonic()
        res = _bash(f". {INSTALL}; wait_for_apt_locks 30 {lock}; echo rc=$?", cwd=tmp_path)
        waited = time.monotonic() - t0
    assert "rc=0" in res.stdout, res.stderr
    assert 1.0 <= waited < 15
    assert f"another apt/dpkg process holds {lock}; waiting for it (up to 30s)" in res.stderr
    assert "the package lock is free after" in res.stderr


def test_the_wait_is_bounded(tmp_path):
    lock = tmp_path / "lock"
    with _held(lock, 30):
        t0 = time.monotonic()
        res = _bash(f". {INSTALL}; wait_for_apt_locks 1 {lock} || echo gave-up", cwd=tmp_path)
        assert time.monotonic() - t0 < 10
    assert "gave-up" in res.stdout and f"still held after 1s: {lock}" in res.stderr
    free = _bash(f". {INSTALL}; wait_for_apt_locks 1 {tmp_path / 'unlocked'} {lock} && echo free", cwd=tmp_path)
    assert "free" in free.stdout and free.stderr == ""  # released (and an absent lock file is no wait)


def test_a_failed_browser_install_is_a_note_and_the_install_goes_on(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("id", "mktemp", "tail", "sed", "rm", "python3", "sleep", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    _executable(
        bin_dir / "apt-get", "#!/bin/sh\necho 'E: Could not get lock /var/lib/dpkg/lock-frontend' >&2\nexit 100\n"
    )
    # `set -e` is on after sourcing, as in the script: the browser step must not end the shell.
    res = _bash(
        f". {INSTALL}; install_browser; echo went-on",
        cwd=tmp_path,
        env={"PATH": str(bin_dir), "SIEVE_APT_LOCK_WAIT_S": "0"},
    )
    assert res.returncode == 0 and "went-on" in res.stdout, res.stderr
    assert "chromium" in res.stderr
    if os.geteuid() == 0:  # (a real apt running meanwhile makes the lock wait, not apt-get, fail: same note)
        assert "installing Debian's chromium (as root), for the playground's browser test only" in res.stderr
        assert "chromium could not be installed; Sieve itself is installed" in res.stderr
    skipped = _bash(
        f". {INSTALL}; install_browser; echo went-on",
        cwd=tmp_path,
        env={"PATH": str(bin_dir), "SIEVE_INSTALL_BROWSER": "0"},
    )
    assert skipped.stdout.strip() == "went-on" and skipped.stderr == ""


def _fake_repo(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A copy of .ci/install in an empty folder, and a fake `python` first on PATH."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(INSTALL, repo / ".ci" / "install")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = _executable(bin_dir / "python", FAKE_PYTHON)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_LOG": str(tmp_path / "calls.log"),
        "FAKE_SYSTEM": str(python),
        "SIEVE_INSTALL_BROWSER": "0",
    }
    env.pop("VIRTUAL_ENV", None)
    return repo, python, env


def test_an_externally_managed_python_gets_a_venv_and_the_one_command_to_run(tmp_path):
    repo, python, env = _fake_repo(tmp_path)
    res = subprocess.run(
        [BASH, str(repo / ".ci" / "install")],
        env={**os.environ, **env, "FAKE_MANAGED": "0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 3, res.stderr  # `bash .ci/install && sieve demo` stops here, on the message
    assert "externally managed, PEP 668" in res.stderr and f"into {repo}/.venv" in res.stderr
    assert res.stderr.rstrip().endswith("source .venv/bin/activate && sieve demo")
    calls = (tmp_path / "calls.log").read_text()
    assert f"{python} -m venv .venv" in calls
    assert ".venv/bin/python -m pip install -q -e .[test,ray]" in calls  # the install went into .venv
    assert f"{python} -m pip" not in calls  # and never into the system's Python


def test_a_python_that_accepts_pip_is_installed_into_directly(tmp_path):
    repo, python, env = _fake_repo(tmp_path)
    res = subprocess.run(
        [BASH, str(repo / ".ci" / "install")],
        env={**os.environ, **env, "FAKE_MANAGED": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert f"{python} -m pip install -q -e .[test,ray]" in (tmp_path / "calls.log").read_text()
    assert not (repo / ".venv").exists()


def test_no_venv_module_says_exactly_what_to_do(tmp_path):
    repo, _, env = _fake_repo(tmp_path)
    res = subprocess.run(
        [BASH, str(repo / ".ci" / "install")],
        env={**os.environ, **env, "FAKE_MANAGED": "0", "FAKE_VENV_FAILS": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0 and "apt-get install python3-venv" in res.stderr
    assert "pip" not in (tmp_path / "calls.log").read_text()


def test_the_real_probe_sees_this_interpreter_and_the_system_python(tmp_path):
    # The interpreter running the tests accepts pip (CI installs into it): no venv is made.
    res = _bash(f". {INSTALL}; target_python {sys.executable}", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == sys.executable and not (tmp_path / ".venv").exists()
    system = Path("/usr/bin/python3")
    if system.exists():  # Debian 12 marks it EXTERNALLY-MANAGED; a .venv made earlier is reused, not remade
        (tmp_path / ".venv" / "bin").mkdir(parents=True)
        _executable(tmp_path / ".venv" / "bin" / "python", "#!/bin/sh\nexit 0\n")
        managed = subprocess.run(
            [
                str(system),
                "-c",
                "import sys, sysconfig, os; sys.exit(0 if os.path.exists("
                "os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')) else 1)",
            ]
        ).returncode
        res = _bash(f". {INSTALL}; target_python {system}", cwd=tmp_path)
        assert res.stdout.strip() == (".venv/bin/python" if managed == 0 else str(system)), res.stderr
