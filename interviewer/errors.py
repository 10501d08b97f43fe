"""Typed errors the library raises; the CLI and the UI turn each into one actionable sentence."""


class InterviewerError(Exception):
    """Base class for every error this package raises on purpose."""


class RubricError(InterviewerError):
    """A rubric file is malformed; the message names the file, the question and the field."""

    def __init__(self, path: str, message: str, question_id: str | None = None, field: str | None = None):
        self.path = path
        self.question_id = question_id
        self.field = field
        where = path
        if question_id:
            where += f" (question {question_id!r})"
        if field:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


class UnknownQuestion(InterviewerError):
    """No question with that id is in the bank."""


class ModelNotFound(InterviewerError):
    """A bundled model could not be found on disk."""


class StoreUnavailable(InterviewerError):
    """The Chroma store (embedded or server) cannot be reached."""


class LLMUnavailable(InterviewerError):
    """The configured LLM endpoint failed, timed out or returned something unusable."""


class TranscriptionError(InterviewerError):
    """Speech could not be transcribed (silence, too short, model missing)."""
