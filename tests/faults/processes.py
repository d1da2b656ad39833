"""The processes fault tests start, break and restart: a private Redis, a private PostgreSQL
cluster, the web app under gunicorn and a Celery worker, each on a free port of 127.0.0.1.

The machine's shared PostgreSQL and Redis are never touched: a fault is injected into a server
the test owns. A browser-like HTTP client (`WebClient`) logs in with a session and CSRF token.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from tests.factories import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(check: Any, timeout: float, what: str, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def stop(process: subprocess.Popen[Any] | None, sig: int = signal.SIGTERM) -> None:
    """Stop a process started with start_new_session (its whole group) and reap it."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


# --- Redis -----------------------------------------------------------------------------------
class RedisServer:
    """A redis-server of our own, without persistence: killed, it comes back empty."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self._answers, 10, "redis-server")

    def kill(self) -> None:
        stop(self.process, signal.SIGKILL)

    def pause(self) -> None:
        """Hang it: connections are accepted by the kernel and never answered."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False


# --- PostgreSQL ------------------------------------------------------------------------------
class PostgresCluster:
    """A PostgreSQL 15 cluster of our own in a temporary directory, run as the postgres user
    (as root, initdb and pg_ctl refuse to run), trust authentication, on a free port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="annotator-pg-"))
        self.data = self.directory / "data"
        shutil.chown(self.directory, "postgres", "postgres")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> None:
        self._pg("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()

    def start(self) -> None:
        self._pg_ctl("start")

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def restart(self) -> None:
        self._pg_ctl("restart", "-m", "fast")

    def pause(self) -> None:
        """Hang the server: new connections wait in the kernel's backlog, unanswered."""
        os.kill(self._postmaster_pid(), signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self._postmaster_pid(), signal.SIGCONT)

    def _postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def _pg_ctl(self, action: str, *args: str) -> None:
        # The server logs to a file: a server started with our pipes would hold them open.
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._pg(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            *args,
            action,
        )

    def create_database(self, name: str) -> None:
        self._pg("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [
                    "runuser",
                    "-u",
                    "postgres",
                    "--",
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
                timeout=120,
            )
        shutil.rmtree(self.directory, ignore_errors=True)

    def _pg(self, program: str, *args: str) -> None:
        command = ["runuser", "-u", "postgres", "--", str(PG_BIN / program), *args]
        output = self.directory / "commands.log"
        with output.open("a") as out:
            done = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, cwd=self.directory, timeout=120
            )
        assert done.returncode == 0, f"{program} failed:\n{output.read_text()[-3000:]}"


# --- the app ---------------------------------------------------------------------------------
def app_env(**overrides: str) -> dict[str, str]:
    """The environment of a web or worker process: production-like (no debug pages)."""
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECURE": "0", "LOG_LEVEL": "WARNING"}
    env.pop("REDIS_URL", None)
    env.update(overrides)
    return env


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}"
    return done.stdout


@contextmanager
def gunicorn(env: dict[str, str], workers: int = 2) -> Iterator[str]:
    """The web app under gunicorn; yields its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "gunicorn"),
            "annotator.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "--timeout",
            "60",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(base + "/login/"), 60, "gunicorn")
        yield base
    finally:
        stop(server)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False


@contextmanager
def celery_worker(env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A Celery worker (solo pool), ready to take tasks."""
    from tests.conftest import CELERY_WORKER, _wait_until_ready

    worker = subprocess.Popen(
        CELERY_WORKER,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_until_ready(worker)
        yield worker
    finally:
        stop(worker)


class WebClient:
    """A person in a browser: a session cookie after login, the CSRF token on every write."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.session = requests.Session()

    def login(self, username: str) -> WebClient:
        self.session.get(self.base + "/login/", timeout=10)
        response = self.post("/login/", {"username": username, "password": PASSWORD})
        assert response.status_code == 302, f"login of {username}: {response.status_code}"
        return self

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("allow_redirects", False)
        return self.session.get(self.base + path, timeout=30, **kwargs)

    def post(self, path: str, data: Any = None, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("allow_redirects", False)
        headers = {"X-CSRFToken": self.session.cookies.get("csrftoken", ""), "Referer": self.base}
        headers.update(kwargs.pop("headers", {}))
        return self.session.post(self.base + path, data=data, headers=headers, timeout=30, **kwargs)

    def follow(self, response: requests.Response) -> requests.Response:
        assert response.status_code == 302, response.status_code
        return self.get(response.headers["Location"])
