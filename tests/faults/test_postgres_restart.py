"""PostgreSQL restarted, then stopped for a while, under a running web app (gunicorn, two
processes holding persistent connections): requests during the outage get a quick, clean 503
(a page, a partial for htmx, JSON for the API; never a traceback), and requests afterwards
succeed without restarting the app (annotator/middleware.py).

The cluster is this test's own (initdb in a temporary directory, a free port); the machine's
shared PostgreSQL is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from annotator.middleware import MESSAGE
from tests.factories import PASSWORD
from tests.faults.processes import PG_BIN, PostgresCluster, WebClient, app_env, gunicorn, manage

# An answer during the outage must come within this: no hang on a dead database.
OUTAGE_ANSWER_SECONDS = 3.0
# …and with a server that accepts no connection, within the connect timeout (3 s) and a margin.
HUNG_ANSWER_SECONDS = 8.0
HTMX = {"HX-Request": "true"}
PAGES = ["/issues/", "/studies/", "/codebooks/"]


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL server binaries are not in {PG_BIN}")
    cluster = PostgresCluster()
    try:
        cluster.init()
        yield cluster
    finally:
        cluster.remove()


def test_requests_fail_cleanly_while_postgres_is_down_and_recover_without_a_restart(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    cluster.create_database("annotator")  # the other test uses the empty "postgres" one
    env = app_env(
        DATABASE_URL=cluster.url("annotator"),
        DATABASE_CONN_MAX_AGE="600",  # persistent connections: the restart breaks them
        DJANGO_MEDIA_ROOT=str(tmp_path / "media"),
    )
    manage(env, "migrate", "--noinput", "-v", "0")
    create_user = "from django.contrib.auth.models import User; "
    create_user += f"User.objects.create_user('researcher', password='{PASSWORD}')"
    manage(env, "shell", "-c", create_user)

    with gunicorn(env, workers=2) as base:
        client = WebClient(base).login("researcher")
        all_answer(client, 200)  # every gunicorn process now holds a connection

        cluster.restart()  # between requests: the reused connections are dead
        all_answer(client, 200)

        cluster.stop()
        for path in PAGES:
            page = answered_quickly(lambda p=path: client.get(p))
            assert page.status_code == 503 and page.headers["Retry-After"] == "5"
            assert MESSAGE in page.text and "<html" in page.text
            assert "Traceback" not in page.text and "psycopg" not in page.text
        partial = answered_quickly(lambda: client.get(PAGES[0], headers=HTMX))
        assert partial.status_code == 503 and MESSAGE in partial.text
        assert 'id="database-unavailable"' in partial.text and "<html" not in partial.text
        api = answered_quickly(lambda: client.get("/api/issues/"))
        assert api.status_code == 503 and api.json() == {"detail": MESSAGE}
        # A view that reaches the database itself (no session yet): the login form, which
        # needs no database to show.
        stranger = WebClient(base)
        assert answered_quickly(lambda: stranger.get("/login/")).status_code == 200
        login = answered_quickly(
            lambda: stranger.post("/login/", {"username": "researcher", "password": PASSWORD})
        )
        assert login.status_code == 503 and MESSAGE in login.text

        cluster.start()
        all_answer(client, 200)
        assert client.get("/api/issues/").json()["count"] == 0
        WebClient(base).login("researcher")  # a write (session, last login) works again


def test_a_database_that_accepts_no_connection_answers_503_within_seconds(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    """A hung server (or a host that drops packets) never refuses a connection: the connect
    timeout of settings bounds the wait."""
    env = app_env(DATABASE_URL=cluster.url("postgres"), DATABASE_CONN_MAX_AGE="0")
    with gunicorn(env, workers=1) as base:
        client = WebClient(base)
        assert client.get("/login/").status_code == 200
        cluster.pause()
        try:
            began = time.monotonic()
            login = client.post("/login/", {"username": "nobody", "password": PASSWORD})
            took = time.monotonic() - began
        finally:
            cluster.resume()
        assert login.status_code == 503 and MESSAGE in login.text
        assert took < HUNG_ANSWER_SECONDS, f"the answer took {took:.1f} s"


def all_answer(client: WebClient, status: int) -> None:
    # Twice per gunicorn process and more: whichever process answers, it answers.
    for path in PAGES * 3:
        response = client.get(path)
        assert response.status_code == status, (path, response.status_code, response.text[:300])


def answered_quickly(request: Any) -> requests.Response:
    began = time.monotonic()
    response = request()
    took = time.monotonic() - began
    assert took < OUTAGE_ANSWER_SECONDS, f"the answer took {took:.1f} s"
    return response
