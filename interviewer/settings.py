"""Every setting in one place: a name, a default and a line of help.

Values come from the environment, then from a `.env` file in the working directory, then the
default. The README's settings table is checked against `SETTINGS` by a test. Secrets are read here
and nowhere else, and `Settings.__repr__` masks them so they never reach a log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    help: str
    secret: bool = False


SETTINGS: tuple[Setting, ...] = (
    Setting("INTERVIEWER_HOME", "~/.interviewer", "Data directory: the Chroma index, the SQLite history, exports."),
    Setting("INTERVIEWER_RUBRICS", "", "Folder of rubric YAML files; empty means the bundled `rubrics/`."),
    Setting(
        "INTERVIEWER_EMBED_MODEL",
        "",
        "Path of a sentence-transformers model; empty means the bundled all-MiniLM-L6-v2.",
    ),
    Setting(
        "INTERVIEWER_DEVICE", "auto", "Device for the embedder: auto (cuda, then mps, then cpu), cuda, mps or cpu."
    ),
    Setting(
        "INTERVIEWER_EMBED_RUNTIME",
        "auto",
        "auto runs the embedder through ONNX Runtime on a CPU (exported once into the data directory's "
        "`models/`), else torch; torch always uses torch.",
    ),
    Setting(
        "INTERVIEWER_MAX_WORDS",
        "5000",
        "Answers longer than this many words are cut (with a visible note) before scoring.",
    ),
    Setting("CHROMA_HOST", "", "Chroma server host; empty means an embedded store in the data directory."),
    Setting("CHROMA_PORT", "8000", "Chroma server port (used with CHROMA_HOST)."),
    Setting("OPENAI_BASE_URL", "", "OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio)."),
    Setting(
        "OPENAI_API_KEY", "", "API key for the endpoint; read from the environment only, never shown.", secret=True
    ),
    Setting("INTERVIEWER_LLM_MODEL", "", "Model id for follow-ups; the LLM is used only when this is set."),
    Setting("INTERVIEWER_LLM_TIMEOUT", "20", "Seconds to wait for the LLM to answer (connect timeout is 2 s)."),
    Setting(
        "INTERVIEWER_LLM_CHECK",
        "1",
        "With an LLM configured, 1 asks it to confirm each misconception flag and withdraws those it rejects; 0 never.",
    ),
    Setting(
        "INTERVIEWER_AUTH", "", "user:password pairs, comma-separated, required to bind to a non-loopback address."
    ),
    Setting(
        "INTERVIEWER_AUTH_FILE",
        "",
        "File of users, one `user:password` per line (`#` comments); used with or instead of INTERVIEWER_AUTH.",
    ),
    Setting(
        "INTERVIEWER_HISTORY_URL",
        "",
        "History database: empty means SQLite in the data directory; `postgresql://...` shares one across replicas.",
        secret=True,
    ),
    Setting(
        "INTERVIEWER_CONCURRENCY",
        "16",
        "Requests the app works on at once; the rest wait in a queue that shows their place.",
    ),
    Setting(
        "INTERVIEWER_MAX_SESSIONS",
        "500",
        "Browser sessions kept in memory (up to about 1 MB each); beyond it the least recently used is dropped.",
    ),
    Setting(
        "INTERVIEWER_BATCH_SCORING",
        "1",
        "1 scores answers from concurrent sessions together in one batched pass (faster on a CPU); 0 one by one.",
    ),
    Setting("GRADIO_SERVER_NAME", "127.0.0.1", "Address the app binds to."),
    Setting("GRADIO_SERVER_PORT", "7860", "Port the app listens on."),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def _read_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip().removeprefix("export ").strip()] = value.strip().strip("'\"")
    return values


class Settings:
    """A snapshot of the settings, read when constructed (tests change the environment freely)."""

    def __init__(self, env: dict[str, str] | None = None, dotenv: Path | None = Path(".env")):
        env = dict(os.environ) if env is None else env
        file_values = _read_dotenv(dotenv) if dotenv else {}
        # Secrets come from the environment only, never from a file in the working directory.
        self._values = {
            s.name: env.get(s.name, s.default if s.secret else file_values.get(s.name, s.default)) for s in SETTINGS
        }

    def get(self, name: str) -> str:
        if name not in _BY_NAME:
            raise KeyError(f"unknown setting {name}")
        return self._values[name]

    def __repr__(self) -> str:
        shown = {n: ("***" if _BY_NAME[n].secret and v else v) for n, v in self._values.items()}
        return f"Settings({shown})"

    @property
    def home(self) -> Path:
        return Path(self.get("INTERVIEWER_HOME")).expanduser()

    @property
    def rubric_dir(self) -> Path | None:
        value = self.get("INTERVIEWER_RUBRICS")
        return Path(value).expanduser() if value else None

    @property
    def embed_model(self) -> str:
        return self.get("INTERVIEWER_EMBED_MODEL")

    @property
    def device(self) -> str:
        return self.get("INTERVIEWER_DEVICE").lower()

    @property
    def embed_runtime(self) -> str:
        return self.get("INTERVIEWER_EMBED_RUNTIME").strip().lower() or "auto"

    @property
    def max_words(self) -> int:
        return int(self.get("INTERVIEWER_MAX_WORDS"))

    @property
    def chroma_host(self) -> str:
        return self.get("CHROMA_HOST")

    @property
    def chroma_port(self) -> int:
        return int(self.get("CHROMA_PORT"))

    @property
    def llm_base_url(self) -> str:
        return self.get("OPENAI_BASE_URL")

    @property
    def llm_api_key(self) -> str:
        return self.get("OPENAI_API_KEY")

    @property
    def llm_model(self) -> str:
        return self.get("INTERVIEWER_LLM_MODEL")

    @property
    def llm_timeout(self) -> float:
        return float(self.get("INTERVIEWER_LLM_TIMEOUT"))

    @property
    def llm_check(self) -> bool:
        return self.get("INTERVIEWER_LLM_CHECK").strip().lower() not in ("0", "false", "no", "off", "")

    @property
    def server_name(self) -> str:
        return self.get("GRADIO_SERVER_NAME")

    @property
    def server_port(self) -> int:
        return int(self.get("GRADIO_SERVER_PORT"))

    @property
    def auth(self) -> str:
        return self.get("INTERVIEWER_AUTH")

    @property
    def auth_file(self) -> Path | None:
        value = self.get("INTERVIEWER_AUTH_FILE")
        return Path(value).expanduser() if value else None

    @property
    def history_url(self) -> str:
        return self.get("INTERVIEWER_HISTORY_URL")

    @property
    def max_sessions(self) -> int:
        return max(10, int(self.get("INTERVIEWER_MAX_SESSIONS")))

    @property
    def concurrency(self) -> int:
        return max(1, int(self.get("INTERVIEWER_CONCURRENCY")))

    @property
    def batch_scoring(self) -> bool:
        return self.get("INTERVIEWER_BATCH_SCORING").strip().lower() not in ("0", "false", "no", "off", "")


def settings_table_markdown() -> str:
    """The README's settings table, generated from SETTINGS."""
    rows = ["| Setting | Default | What it does |", "|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default else "(empty)"
        rows.append(f"| `{s.name}` | {default} | {s.help} |")
    return "\n".join(rows)
