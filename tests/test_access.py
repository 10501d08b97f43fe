"""Who may reach the app: loopback by default, credentials for anything else, users from a file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from interviewer.settings import Settings
from interviewer.ui.app import credentials, read_auth_file

from .conftest import ROOT


def _serve(**env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "GRADIO_SERVER_PORT": "1", **env}  # never gets as far as listening
    for name in ("INTERVIEWER_AUTH", "INTERVIEWER_AUTH_FILE"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run([sys.executable, "app.py"], cwd=ROOT, env=full, capture_output=True, text=True, timeout=120)


def test_binding_beyond_loopback_without_credentials_is_refused_with_what_to_set():
    done = _serve(GRADIO_SERVER_NAME="0.0.0.0")
    assert done.returncode != 0
    assert "refusing to serve on 0.0.0.0 without credentials" in done.stderr
    assert "INTERVIEWER_AUTH" in done.stderr


def test_a_malformed_users_file_stops_the_app_naming_the_line_but_not_the_password(tmp_path):
    users = tmp_path / "users.txt"
    users.write_text("ann:pw\nbob-has-no-separator-hunter2\n")
    done = _serve(GRADIO_SERVER_NAME="0.0.0.0", INTERVIEWER_AUTH_FILE=str(users))
    assert done.returncode != 0
    assert f"{users}:2" in done.stderr and "hunter2" not in done.stderr


def test_users_come_from_the_variable_and_the_file_together(tmp_path):
    users = tmp_path / "users.txt"
    users.write_text("# interviewers\n\ncarol:c-pass\n  dave : d:pass  \n")
    assert read_auth_file(users) == [("carol", "c-pass"), ("dave", " d:pass")]
    settings = Settings(env={"INTERVIEWER_AUTH": "ann:a-pass", "INTERVIEWER_AUTH_FILE": str(users)}, dotenv=None)
    assert [u for u, _ in credentials(settings)] == ["ann", "carol", "dave"]
    twice = Settings(env={"INTERVIEWER_AUTH": "carol:x", "INTERVIEWER_AUTH_FILE": str(users)}, dotenv=None)
    with pytest.raises(ValueError, match="carol"):
        credentials(twice)
    with pytest.raises(ValueError, match="cannot read"):
        read_auth_file(tmp_path / "missing.txt")
