"""A throwaway PostgreSQL server on loopback for the scale-out tests, or a clear reason to skip."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

INSTALL_HINT = "PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run installs it)"


def _bin_dir() -> Path | None:
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(found) / "initdb").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def unavailable_reason() -> str | None:
    if _bin_dir() is None:
        return INSTALL_HINT
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run the server as"
    return None


@contextmanager
def postgres_server(port: int) -> Iterator[str]:
    """initdb, start on 127.0.0.1:`port` with trust auth, yield a URL; stop and remove on exit.

    The server's directory lies directly in the system temp folder: as root the server runs as the
    `postgres` user, which cannot enter pytest's private temp folders."""
    bin_dir = _bin_dir()
    as_user: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="interviewer-postgres-"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        entry = pwd.getpwnam("postgres")
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    data, log = directory / "data", directory / "server.log"

    def run(*args: str) -> None:
        done = subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr or done.stdout}")

    run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {directory} -c fsync=off"
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(directory, ignore_errors=True)
