"""Interviewer's web app: `python app.py` serves it on 127.0.0.1:7860 (GRADIO_SERVER_PORT to change)."""

from __future__ import annotations

import interviewer  # noqa: F401  (sets the offline and threading environment before torch loads)
from interviewer.settings import Settings
from interviewer.ui.app import build_app, launch

if __name__ == "__main__":
    settings = Settings()
    launch(build_app(settings), settings)
