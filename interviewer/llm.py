"""An LLM behind one small interface: any OpenAI-compatible endpoint through the `openai` package.

Nothing here talks to the network at import or construction; the client is built on first use, with
short timeouts (2 s to connect, INTERVIEWER_LLM_TIMEOUT to read) and at most one retry, and every
failure becomes an `LLMUnavailable` with a sentence a person can act on. The API key is never put
in a message, a log line or a repr.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import LLMUnavailable
from .settings import Settings

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"


class LLMTimeout(LLMUnavailable):
    """The endpoint did not answer in time."""


class LLMModelNotFound(LLMUnavailable):
    """The endpoint does not serve the configured model (renamed or retired)."""


class LLMBadResponse(LLMUnavailable):
    """The endpoint answered with something that is not a usable completion."""


@dataclass
class LLMStatus:
    configured: bool
    reachable: bool
    model_found: bool
    message: str


class LLM(ABC):
    """A chat model. Implementations provide `stream`; the base class adds `complete`."""

    name: str = "llm"

    @abstractmethod
    def stream(self, messages: list[dict], max_tokens: int = 120, temperature: float = 0.2) -> Iterator[str]:
        """Yield the reply's text as it arrives; raise LLMUnavailable on any failure."""

    def complete(self, messages: list[dict], max_tokens: int = 400, temperature: float = 0.2) -> str:
        return "".join(self.stream(messages, max_tokens, temperature))


class OpenAICompatibleLLM(LLM):
    """OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio: anything speaking /v1/chat/completions."""

    def __init__(self, base_url: str, model: str, api_key: str = "", read_timeout: float = 20.0):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = model
        self._api_key = api_key
        self.read_timeout = read_timeout
        self._client = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def client(self):
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import openai

                    self._client = openai.OpenAI(
                        base_url=self.base_url or None,
                        # Local servers need no key, but the client insists on one.
                        api_key=self._api_key or "not-needed",
                        timeout=openai.Timeout(self.read_timeout, connect=2.0),
                        max_retries=1,
                    )
        return self._client

    def _translate(self, exc: Exception) -> LLMUnavailable:
        import openai

        where = self.base_url or "the OpenAI API"
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeout(f"the LLM at {where} did not answer within {self.read_timeout:.0f} s")
        if isinstance(exc, openai.NotFoundError):
            return LLMModelNotFound(
                f"the LLM at {where} does not serve model {self.model!r}; set INTERVIEWER_LLM_MODEL to one it lists"
            )
        if isinstance(exc, openai.AuthenticationError):
            return LLMUnavailable(f"the LLM at {where} rejected the API key; check OPENAI_API_KEY")
        if isinstance(exc, openai.APIConnectionError):
            return LLMUnavailable(f"cannot connect to the LLM at {where}; is it running? (OPENAI_BASE_URL)")
        if isinstance(exc, openai.APIStatusError):
            return LLMBadResponse(f"the LLM at {where} answered HTTP {exc.status_code}")
        return LLMBadResponse(f"the LLM at {where} sent an unusable reply ({exc.__class__.__name__})")

    def stream(self, messages: list[dict], max_tokens: int = 120, temperature: float = 0.2) -> Iterator[str]:
        deadline = time.monotonic() + self.read_timeout
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, max_tokens=max_tokens, temperature=temperature, stream=True
            )
            for chunk in response:
                if time.monotonic() > deadline:
                    response.close()
                    raise LLMTimeout(f"the LLM at {self.base_url} kept streaming past {self.read_timeout:.0f} s")
                choices = getattr(chunk, "choices", None)
                if not choices:
                    continue
                delta = getattr(choices[0], "delta", None)
                text = getattr(delta, "content", None) if delta is not None else None
                if text:
                    yield text
        except LLMUnavailable:
            raise
        except Exception as exc:
            raise self._translate(exc) from None

    def status(self) -> LLMStatus:
        """Configured / reachable / model found, from GET /v1/models (called lazily, never at start-up)."""
        try:
            ids = [m.id for m in self.client.models.list()]
        except Exception as exc:
            return LLMStatus(True, False, False, str(self._translate(exc)))
        if self.model in ids:
            return LLMStatus(True, True, True, f"LLM ready: {self.model} at {self.base_url or 'OpenAI'}")
        listed = ", ".join(ids[:5]) or "none"
        return LLMStatus(True, True, False, f"model {self.model!r} not served (it lists: {listed})")


def llm_from_settings(settings: Settings) -> OpenAICompatibleLLM | None:
    """The configured LLM, or None: the LLM is used only when INTERVIEWER_LLM_MODEL is set."""
    if not settings.llm_model:
        return None
    return OpenAICompatibleLLM(settings.llm_base_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout)


def not_configured_status() -> LLMStatus:
    return LLMStatus(
        False,
        False,
        False,
        "No LLM configured: follow-ups come from the rubric. "
        "Set INTERVIEWER_LLM_MODEL (and OPENAI_BASE_URL) to use one.",
    )


# -- prompts ----------------------------------------------------------------------------------------
def load_prompt(name: str) -> tuple[str, str]:
    """A prompt template file: a system part and a user part, split by a line `---`."""
    text = (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")
    system, sep, user = text.partition("\n---\n")
    if not sep:
        raise ValueError(f"prompts/{name}.txt needs a line '---' between the system and the user part")
    return system.strip(), user.strip()


def quote_answer(answer: str, tag: str = "answer") -> str:
    """The candidate's words as data: inside <answer> (or <tag>) tags that the text itself cannot close."""
    cleaned = answer.replace("<", "‹").replace(">", "›")
    return f"<{tag}>\n{cleaned}\n</{tag}>"


def render(name: str, **fields: str) -> list[dict]:
    system, user = load_prompt(name)
    for key, value in fields.items():
        user = user.replace("{" + key + "}", value)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
