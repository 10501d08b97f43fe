"""Local speech to text with the bundled Whisper tiny.en, fed with speech synthesised in the test."""

import importlib.util
import wave

import numpy as np
import pytest

from interviewer.errors import ModelNotFound, TranscriptionError
from interviewer.speech import Transcript, WhisperTranscriber, Word, delivery, get_transcriber, to_mono_16k

from .conftest import synthesize_wav

needs_piper = pytest.mark.skipif(importlib.util.find_spec("piper") is None, reason="piper-tts (test-only) missing")


def _read(path):
    with wave.open(str(path), "rb") as w:
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)


def test_stereo_44k_int16_becomes_mono_16k_float():
    rate = 44_100
    t = np.arange(rate) / rate
    tone = (np.sin(2 * np.pi * 440 * t) * 16000).astype(np.int16)
    stereo = np.stack([tone, tone], axis=1)
    out = to_mono_16k(stereo, rate)
    assert out.dtype == np.float32 and out.ndim == 1
    assert abs(len(out) - 16_000) <= 1
    assert 0.3 < np.abs(out).max() <= 1.0


def test_silence_and_a_one_second_clip_get_clear_messages_without_the_model():
    transcriber = WhisperTranscriber(model_path="/nonexistent")  # the model must not be needed
    with pytest.raises(TranscriptionError, match="silent"):
        transcriber.transcribe(np.zeros(48_000 * 3, dtype=np.int16), 48_000)
    with pytest.raises(TranscriptionError, match="at least"):
        transcriber.transcribe((np.random.default_rng(0).normal(0, 0.2, 44_100)).astype(np.float32), 44_100)


def test_a_missing_model_says_typing_still_works():
    rng = np.random.default_rng(1)
    with pytest.raises(ModelNotFound, match="type"):
        WhisperTranscriber(model_path="/nonexistent").transcribe(rng.normal(0, 0.2, 48_000).astype(np.float32), 16_000)


@needs_piper
def test_spoken_answer_is_transcribed_with_the_jargon(tmp_path):
    text = "In the training loop I call optimizer zero grad, then loss backward, then optimizer step."
    rate, samples = _read(synthesize_wav(text, tmp_path / "answer.wav"))
    transcript = get_transcriber().transcribe(samples, rate, prompt="What are the steps of a PyTorch training loop?")
    said = transcript.text.lower()
    for word in ("training loop", "backward", "step"):
        assert word in said
    assert transcript.duration > 3 and transcript.words


def test_delivery_counts_fillers_pace_and_the_longest_pause():
    words = [Word("so", 0.0, 0.3), Word("um", 0.4, 0.6), Word("autograd", 2.6, 3.2), Word("records", 3.3, 3.8)]
    d = delivery(Transcript("So, um, autograd records.", 6.0, words))
    assert d.fillers["um"] == 1 and d.fillers["so"] == 1
    assert d.words_per_minute == pytest.approx(40.0)
    assert d.longest_pause == pytest.approx(2.2)
    assert "words per minute" in d.summary()
