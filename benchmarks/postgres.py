"""A throwaway PostgreSQL cluster for ``--server postgres``: initdb into a temporary folder, a
free port on 127.0.0.1, fsync on (as production runs it), removed at exit.

The binaries come from ``$FOLPIPE_PG_BINDIR``, the ``PATH`` or Debian's
``/usr/lib/postgresql/<version>/bin``. PostgreSQL refuses to run as root: under root the
cluster runs as the ``postgres`` user (Debian's package creates it).
"""

from __future__ import annotations

import atexit
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .server import free_port

ROLE, DATABASE = "folpipe", "prefect"


@dataclass
class Postgres:
    """A running cluster with one database."""

    bindir: Path
    root: Path
    port: int
    password: str
    user: str | None

    @property
    def url(self) -> str:
        """Prefect's ``PREFECT_API_DATABASE_CONNECTION_URL`` for the database."""
        return f"postgresql+asyncpg://{ROLE}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    def stop(self) -> None:
        """Stop the cluster and remove its folder; idempotent."""
        if (self.root / "data" / "postmaster.pid").exists():
            self._as_user("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _as_user(self, program: str, *args: str) -> None:
        extra: dict[str, object] = {}
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            extra = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self.bindir / program), *args], cwd=self.root, capture_output=True, text=True,
            timeout=180, check=False, env={**os.environ, "LC_ALL": "C"}, **extra,  # type: ignore[call-overload]
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {(done.stderr or done.stdout)[-1500:]}")


def _bindir() -> Path:
    candidates = [
        os.environ.get("FOLPIPE_PG_BINDIR", ""),
        os.path.dirname(shutil.which("initdb") or ""),
    ]
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        candidates += [str(p / "bin") for p in sorted(debian.iterdir(), reverse=True)]
    for candidate in filter(None, candidates):
        if all(os.access(Path(candidate) / name, os.X_OK) for name in ("initdb", "pg_ctl", "psql")):
            return Path(candidate)
    raise RuntimeError("no PostgreSQL binaries (initdb, pg_ctl, psql): apt-get install postgresql")


def start() -> Postgres:
    """initdb, start, create the database; stopped at interpreter exit."""
    user = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="folpipe-bench-pg-", dir="/tmp"))
    pg = Postgres(_bindir(), root, free_port(), secrets.token_hex(16), user)
    atexit.register(pg.stop)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    pwfile = root / "pwfile"
    pwfile.write_text(pg.password + "\n")
    if user is not None:
        os.chown(pwfile, pwd.getpwnam(user).pw_uid, -1)
    data = str(root / "data")
    pg._as_user(
        "initdb", "-D", data, "-U", ROLE, f"--pwfile={pwfile}", "--auth-local=trust",
        "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-instructions",
    )  # fmt: skip
    pwfile.unlink()
    options = (
        f"-c listen_addresses=127.0.0.1 -p {pg.port} -c unix_socket_directories='{root}'"
        " -c max_connections=200"
    )
    pg._as_user(
        "pg_ctl", "-D", data, "-l", str(root / "postgres.log"), "-w", "-o", options, "start"
    )
    done = subprocess.run(
        [str(pg.bindir / "psql"), "-X", "-h", "127.0.0.1", "-p", str(pg.port), "-U", ROLE,
         "-d", "postgres", "-c", f"CREATE DATABASE {DATABASE}"],
        env={**os.environ, "PGPASSWORD": pg.password}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"CREATE DATABASE failed: {done.stderr.strip()}")
    return pg
