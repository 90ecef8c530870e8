"""A throwaway PostgreSQL cluster for tests: ``initdb`` in a temporary directory.

The server listens only on a Unix socket in that directory (no TCP at all), requires
a password (so tests can check it never leaks), and is stopped and deleted at the
end. ``initdb`` refuses to run as root, so as root the server runs as the
``postgres`` system user the Debian package creates, in a directory it owns.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from .polling import eventually

STARTUP_TIMEOUT = 60.0
SUPERUSER = "heron"
SERVER_USER = "postgres"
"""Who runs the server when the tests run as root."""


def bin_dir() -> Path | None:
    """Where ``initdb`` and ``postgres`` are: ``PATH``, else Debian's versioned directories."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


class Cluster:
    """One running PostgreSQL server; :meth:`url` names a database on it."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.password = secrets.token_hex(16)
        self.dir = Path(tempfile.mkdtemp(prefix="heron-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise RuntimeError(
                    f"running as root, the test PostgreSQL server needs the {SERVER_USER!r} "
                    "system user (apt-get install postgresql creates it)"
                ) from None
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self._as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}

    def start(self) -> Cluster:
        """``initdb``, start the server and wait until it accepts connections."""
        pwfile = self.dir / "pw"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.password)
        if self._as:
            os.chown(pwfile, self._as["user"], self._as["group"])
        self._run(
            "initdb",
            *("-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}"),
            *("--auth=scram-sha-256", "-E", "UTF8", "--no-sync"),
        )
        pwfile.unlink()
        server = [
            str(self.bindir / "postgres"),
            *("-D", str(self.data), "-k", str(self.dir)),
            *("-c", "listen_addresses="),
            # A test database: durability against power loss buys nothing here.
            *("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"),
        ]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                server,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                **self._as,
            )
        process = self.process

        def accepting() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited at startup:\n{self.log.read_text()}")
            try:
                with self.connect("postgres"):
                    return True
            except psycopg.OperationalError:
                return False

        try:
            eventually(accepting, timeout=STARTUP_TIMEOUT, what="PostgreSQL accepting connections")
        except AssertionError:
            raise RuntimeError(f"PostgreSQL did not come up:\n{self.log.read_text()}") from None
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def connect(self, database: str) -> psycopg.Connection[Any]:
        """A superuser connection to ``database`` (autocommit)."""
        return psycopg.connect(
            host=str(self.dir),
            dbname=database,
            user=SUPERUSER,
            password=self.password,
            autocommit=True,
        )

    def create_database(self, name: str) -> str:
        """Create an empty database; returns its SQLAlchemy URL."""
        with self.connect("postgres") as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def url(self, database: str) -> str:
        """``postgresql+psycopg://`` URL of ``database``, password included."""
        return f"postgresql+psycopg://{SUPERUSER}:{self.password}@/{database}?host={self.dir}"

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bindir / program), *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            check=False,
            **self._as,
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace")
            raise RuntimeError(f"{program} failed ({done.returncode}):\n{output}")


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A started :class:`Cluster`, stopped and deleted on exit.

    ``FileNotFoundError`` if PostgreSQL is not installed (see :func:`bin_dir`).
    """
    bindir = bin_dir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL's server binaries (initdb, postgres) are not installed")
    server = Cluster(bindir)
    try:
        yield server.start()
    finally:
        server.stop()


def logged_count(cluster: Cluster, database: str, node_id: str, kind: str) -> int:
    """How many events of type ``kind`` the node has in ``database``'s log."""
    with cluster.connect(database) as conn:
        row = conn.execute(
            "SELECT count(*) FROM heron_events WHERE node_id = %s AND type = %s", (node_id, kind)
        ).fetchone()
    assert row is not None
    return int(row[0])
