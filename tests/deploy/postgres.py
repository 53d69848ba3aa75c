"""A throwaway PostgreSQL for tests: initdb into a temp dir, a free port on 127.0.0.1, one database.

:func:`running_postgres` is a context manager yielding a :class:`Postgres` whose ``url`` is the
SQLAlchemy URL Prefect takes (``postgresql+asyncpg://…``; asyncpg is a dependency of prefect).
The binaries come from ``$FOLPIPE_PG_BINDIR``, the ``PATH``, or Debian's
``/usr/lib/postgresql/<version>/bin`` (newest first). PostgreSQL refuses to run as root, so under
root the server runs as the ``postgres`` user (Debian's package creates it), else as a system
user created here (``folpipe-pg``). The cluster is tuned for tests (no fsync) and is removed on
exit, also at interpreter exit when a test run is interrupted. Outside pytest::

    with running_postgres() as pg:      # raises PostgresUnavailable where it cannot
        start_server(database_url=pg.url)

When no PostgreSQL can be started, :class:`PostgresUnavailable` says why; the pytest fixture turns
that into a loud skip (or a failure when ``FOLPIPE_REQUIRE_POSTGRES=1``, as ``.ci/run`` sets it
once PostgreSQL is installed).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

PG_USER_CANDIDATE = "postgres"
CREATED_USER = "folpipe-pg"
DATABASE = "prefect"
ROLE = "folpipe"
START_TIMEOUT_S = 60
SERVER_OPTIONS = ("max_connections=200",)
# test-only tuning: durability is worthless for a cluster deleted at the end of the session.
# Benchmarks comparing against a production-like PostgreSQL pass ``durable=True`` to keep fsync.
FAST_OPTIONS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL could be started here; the message says why and what would fix it."""


class PostgresSkipWarning(UserWarning):
    """Shown in pytest's warnings summary when the PostgreSQL tests are skipped."""


REQUIRE_ENV = "FOLPIPE_REQUIRE_POSTGRES"
SKIP_REASONS: list[str] = []  # repeated by tests/deploy/conftest.py in the terminal summary


@dataclass
class Postgres:
    """A running throwaway cluster with one database owned by a password-protected role."""

    bindir: Path
    root: Path
    port: int
    password: str
    os_user: str | None  # the user the server runs as when we are root, else None (ourselves)
    durable: bool = False  # True keeps PostgreSQL's default fsync/synchronous_commit
    timings: dict[str, float] = field(default_factory=dict)
    database: str = DATABASE
    role: str = ROLE

    @property
    def url(self) -> str:
        """SQLAlchemy URL for Prefect's ``PREFECT_API_DATABASE_CONNECTION_URL``."""
        return f"postgresql+asyncpg://{self._credentials}@127.0.0.1:{self.port}/{self.database}"

    @property
    def dsn(self) -> str:
        """libpq/asyncpg DSN of the same database (for ``asyncpg.connect`` or ``psql``)."""
        return f"postgresql://{self._credentials}@127.0.0.1:{self.port}/{self.database}"

    @property
    def _credentials(self) -> str:
        return f"{self.role}:{self.password}"

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def psql(self, sql: str) -> str:
        """Run one SQL statement through ``psql`` (unaligned, tuples only) and return its output."""
        done = subprocess.run(
            [str(self.bindir / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.dsn,
             "-c", sql],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def stop(self) -> None:
        """``pg_ctl stop -m fast``, SIGKILL of the postmaster if that fails, then rm the dir."""
        if (self.datadir / "postmaster.pid").exists():
            try:
                stopped = _run_as(
                    self.os_user,
                    [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "-w",
                     "-t", "30", "stop"],
                    cwd=self.root, timeout=60,
                ).returncode == 0  # fmt: skip
            except PostgresUnavailable:
                stopped = False
            if not stopped:
                _kill_postmaster(self.datadir)
        shutil.rmtree(self.root, ignore_errors=True)


def find_bindir() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``psql``, or None."""
    wanted = ("initdb", "pg_ctl", "psql")
    candidates: list[Path] = []
    if configured := os.environ.get("FOLPIPE_PG_BINDIR"):
        candidates.append(Path(configured))
    if on_path := shutil.which("initdb"):
        candidates.append(Path(on_path).resolve().parent)
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [p for p in debian.iterdir() if (p / "bin").is_dir()]
        versions.sort(key=lambda p: [int(n) for n in re.findall(r"\d+", p.name)], reverse=True)
        candidates += [p / "bin" for p in versions]
    for candidate in candidates:
        if all(os.access(candidate / name, os.X_OK) for name in wanted):
            return candidate
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as(
    user: str | None, args: Sequence[str], *, cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` as ``user`` (only when we are root) and capture its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C", LANG="C")
    extra: dict[str, object] = {}
    if user is not None:
        entry = pwd.getpwnam(user)
        env.update(HOME=str(cwd), USER=user, LOGNAME=user)
        extra = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    try:
        return subprocess.run(
            list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
            check=False, stdin=subprocess.DEVNULL, **extra,  # type: ignore[call-overload]
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise PostgresUnavailable(f"{args[0]} did not finish within {timeout:.0f}s") from exc
    except OSError as exc:  # not executable, or not reachable by the server user
        raise PostgresUnavailable(f"cannot run {args[0]} as {user or 'self'}: {exc}") from exc


def _server_user() -> str | None:
    """None when not root; else a non-root user to run PostgreSQL as (created if need be)."""
    if os.geteuid() != 0:
        return None
    for name in (PG_USER_CANDIDATE, CREATED_USER):
        with contextlib.suppress(KeyError):
            if pwd.getpwnam(name).pw_uid != 0:
                return name
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    done = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", CREATED_USER],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise PostgresUnavailable(
            f"running as root and there is no '{PG_USER_CANDIDATE}' user; "
            f"`useradd {CREATED_USER}` failed: {done.stderr.strip()}"
        )
    return CREATED_USER


def _make_root(user: str | None) -> Path:
    """A private temp dir the server user owns (and can reach through its ancestors)."""
    base = Path(tempfile.gettempdir())
    if user is not None and not _reachable_by_others(base):
        base = Path("/tmp")
    root = Path(tempfile.mkdtemp(prefix="folpipe-pg-", dir=base))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    return root


def _reachable_by_others(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def _kill_postmaster(datadir: Path) -> None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int((datadir / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, signal.SIGKILL)


def _tail(path: Path, chars: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-chars:]
    return ""


def start_postgres(*, durable: bool = False) -> Postgres:
    """initdb, start on a free 127.0.0.1 port, create the database; raises PostgresUnavailable."""
    bindir = find_bindir()
    if bindir is None:
        raise PostgresUnavailable(
            "no PostgreSQL binaries (initdb, pg_ctl, psql) found in $FOLPIPE_PG_BINDIR, on PATH "
            "or under /usr/lib/postgresql/*/bin; install them with "
            "`apt-get install -y postgresql` (.ci/run does this when run as root)"
        )
    user = _server_user()
    root = _make_root(user)
    password = secrets.token_hex(16)
    pg = Postgres(bindir, root, port=0, password=password, os_user=user, durable=durable)
    try:
        _initdb(pg)
        _start(pg)
        _create_database(pg)
    except BaseException:
        pg.stop()
        raise
    return pg


def _initdb(pg: Postgres) -> None:
    pwfile = pg.root / "pwfile"
    pwfile.write_text(pg.password + "\n")
    if pg.os_user is not None:
        entry = pwd.getpwnam(pg.os_user)
        os.chown(pwfile, entry.pw_uid, entry.pw_gid)
    pwfile.chmod(0o600)
    began = time.monotonic()
    done = _run_as(
        pg.os_user,
        [str(pg.bindir / "initdb"), "-D", str(pg.datadir), "-U", pg.role, f"--pwfile={pwfile}",
         "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C",
         "--no-sync", "--no-instructions"],
        cwd=pg.root, timeout=180,
    )  # fmt: skip
    pwfile.unlink()
    pg.timings["initdb_s"] = time.monotonic() - began
    if done.returncode != 0:
        raise PostgresUnavailable(
            f"initdb ({pg.bindir}) failed as user {pg.os_user or 'self'} with exit "
            f"{done.returncode}: {(done.stderr or done.stdout).strip()[-1500:]}"
        )


def _start(pg: Postgres, attempts: int = 3) -> None:
    """``pg_ctl start -w`` on a free port; a port lost to a race is retried with another one."""
    began = time.monotonic()
    for _ in range(attempts):
        pg.port = free_port()
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-p {pg.port}",
            f"-c unix_socket_directories='{pg.root}'",
            *(f"-c {option}" for option in SERVER_OPTIONS),
            *(() if pg.durable else (f"-c {option}" for option in FAST_OPTIONS)),
        ]
        done = _run_as(
            pg.os_user,
            [str(pg.bindir / "pg_ctl"), "-D", str(pg.datadir), "-l", str(pg.log), "-w",
             "-t", str(START_TIMEOUT_S), "-o", " ".join(options), "start"],
            cwd=pg.root, timeout=START_TIMEOUT_S + 30,
        )  # fmt: skip
        if done.returncode == 0:
            pg.timings["start_s"] = time.monotonic() - began
            return
        if "already in use" not in _tail(pg.log):
            break
    raise PostgresUnavailable(
        f"pg_ctl start failed (exit {done.returncode}): {done.stdout.strip()} "
        f"{done.stderr.strip()}\npostgres.log:\n{_tail(pg.log)}"
    )


def _create_database(pg: Postgres) -> None:
    began = time.monotonic()
    done = subprocess.run(
        [str(pg.bindir / "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
         "-p", str(pg.port), "-U", pg.role, "-d", "postgres",
         "-c", f"CREATE DATABASE {pg.database}"],
        env={**os.environ, "PGPASSWORD": pg.password, "PGCONNECT_TIMEOUT": "10"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    pg.timings["createdb_s"] = time.monotonic() - began
    if done.returncode != 0:
        raise PostgresUnavailable(f"CREATE DATABASE failed: {done.stderr.strip()}")


@contextlib.contextmanager
def running_postgres(*, durable: bool = False) -> Iterator[Postgres]:
    """Start a throwaway cluster, yield it, and stop and delete it (also at interpreter exit)."""
    pg = start_postgres(durable=durable)
    atexit.register(pg.stop)
    try:
        yield pg
    finally:
        pg.stop()
        atexit.unregister(pg.stop)


def skip_loudly(reason: str, config: Any = None) -> NoReturn:
    """Skip (or fail, with ``FOLPIPE_REQUIRE_POSTGRES=1``) so that nobody can miss it.

    The reason goes to the terminal right away (capture suspended), to the warnings summary,
    to stderr, and into :data:`SKIP_REASONS` for the end-of-session summary.
    """
    message = f"PostgreSQL tests cannot run: {reason}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1 makes this a failure)", pytrace=False)
    SKIP_REASONS.append(reason)
    line = f"WARNING: SKIPPING {message}"
    print(line, file=sys.stderr, flush=True)
    terminal = config.pluginmanager.get_plugin("terminalreporter") if config else None
    capture = config.pluginmanager.get_plugin("capturemanager") if config else None
    if terminal is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            terminal.write_line("")
            terminal.write_line(line, yellow=True, bold=True)
    warnings.warn(PostgresSkipWarning(message), stacklevel=2)
    pytest.skip(message)
