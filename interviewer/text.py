"""Splitting answers into units a person recognises, and the polarity cues that cosine cannot see.

Every unit keeps its character span, so evidence shown to a user is always a substring of the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Unit:
    """A piece of the answer: a sentence, clause, list item, code line or window of sentences."""

    text: str
    start: int
    end: int
    kind: str  # sentence | clause | item | code | window


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`A-Za-z0-9])|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_LIST_ITEM = re.compile(r"\s*(?:[-*•]|\d+[.)])\s+")
_CALL = re.compile(r"\w\(")
_CODE_HINT = re.compile(r"=\s*\w|^\s*(for|if|def|class|import|with|return)\b")
# A dash break is tried only where a run of whitespace begins: tried at every space of a long run,
# `\s+` rescans the rest of the run each time (minutes for a 100 KB answer).
_CLAUSE_SPLIT = re.compile(
    r";\s+|,\s+(?=(?:but|whereas|while|although|though|so|and so|which means)\b)|(?<!\s)\s+(?:-{1,2}|—)\s+"
)
_WORD = re.compile(r"[A-Za-z_][\w.]*|\d+")
_MIN_CHARS = 12


def _spans(text: str, pattern: re.Pattern, start: int = 0) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for m in pattern.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((start + a, start + b))
    return out


def _looks_like_code(line: str) -> bool:
    """A call with its closing bracket, an assignment or a statement keyword."""
    # Not the one regex `\w+\(.*\)`: it backtracks quadratically on a long word or on many `f(`.
    call = _CALL.search(line)
    return (call is not None and ")" in line[call.end() :]) or _CODE_HINT.search(line) is not None


def _strip_marker(answer: str, a: int, b: int) -> int:
    m = _LIST_ITEM.match(answer, a, b)
    return m.end() if m else a


def split_units(answer: str, window: int = 2) -> list[Unit]:
    """Sentences, list items, code lines, clauses of long sentences, and windows of neighbours."""
    units: list[Unit] = []
    sentences: list[Unit] = []
    in_fence = False
    pos = 0
    prose_lines: list[tuple[int, int]] = []

    def flush_prose() -> None:
        if not prose_lines:
            return
        a, b = prose_lines[0][0], prose_lines[-1][1]
        for sa, sb in _spans(answer[a:b], _SENTENCE_END, a):
            kind = "item" if _LIST_ITEM.match(answer, sa, sb) else "sentence"
            sa = _strip_marker(answer, sa, sb)
            if sb - sa >= 3:
                sentences.append(Unit(answer[sa:sb], sa, sb, kind))
        prose_lines.clear()

    for line in answer.splitlines(keepends=True):
        a, b = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        stripped = line.strip()
        if stripped.startswith("```"):
            flush_prose()
            in_fence = not in_fence
            continue
        if in_fence or (line.startswith(("    ", "\t")) and _looks_like_code(line) and stripped):
            flush_prose()
            if stripped:
                off = a + (len(line) - len(line.lstrip()))
                sentences.append(Unit(stripped, off, off + len(stripped), "code"))
            continue
        prose_lines.append((a, b))
    flush_prose()

    units.extend(sentences)
    for s in sentences:
        if s.kind == "code" or len(s.text) < 60:
            continue
        parts = _spans(s.text, _CLAUSE_SPLIT, s.start)
        if len(parts) > 1:
            units.extend(Unit(answer[a:b], a, b, "clause") for a, b in parts if b - a >= _MIN_CHARS)
    prose = [s for s in sentences if s.kind != "code"]
    for i in range(len(prose) - window + 1):
        first, last = prose[i], prose[i + window - 1]
        if last.end - first.start < 600:
            units.append(Unit(answer[first.start : last.end], first.start, last.end, "window"))
    return units


# -- polarity -------------------------------------------------------------------------------------
NEGATIONS = {
    "not",
    "no",
    "never",
    "none",
    "nothing",
    "neither",
    "nor",
    "without",
    "cannot",
    "can't",
    "cant",
    "don't",
    "dont",
    "doesn't",
    "doesnt",
    "didn't",
    "isn't",
    "isnt",
    "aren't",
    "arent",
    "wasn't",
    "won't",
    "wont",
    "shouldn't",
    "wouldn't",
    "couldn't",
    "mustn't",
    "needn't",
    "hasn't",
    "haven't",
}
# A contraction starts where a run of letters does; from every letter of a long run the first branch
# would rescan the run (quadratic).
_NEG_TOKEN = re.compile(r"(?<![a-z])[a-z]+(?:n't|n’t)|\b[a-z]+\b")


def negation_count(text: str) -> int:
    """Negation cues in `text`. "Only" is not one: "you only need `.cuda()` on the model" asserts, and
    "backward() fills .grad only for leaf tensors" states a point rather than denying it."""
    text = text.lower().replace("’", "'").replace("!=", " not ")
    return sum(1 for tok in _NEG_TOKEN.findall(text) if tok in NEGATIONS)


# Where a negation's reach ends: punctuation between words (not the colon of 'cuda:0' or the brackets of a
# call), a dash, an arrow, or a word that opens another clause.
_SCOPE_TOKEN = re.compile(r"[a-z_][\w']*(?:\.[a-z_]\w*)*(?:\(\))?|[,;:.!?](?=\s|$)|[()\u2014]|\s-{1,2}\s|->")
_SCOPE_BREAKERS = frozenset(
    "but because since so which that when while although though whereas otherwise instead unless if and".split()
)
# "X instead of Y" and "X rather than Y" deny Y. They are not counted as negations: they do not flip a
# sentence ("use a device variable instead of 'cuda:0'" asserts using the variable).
_CONTRAST_CUES = frozenset({("instead", "of"), ("rather", "than")})
NEGATION_REACH = 2  # content words: the negated verb and its object ("don't write 'cuda:0'")


def polarity_stems(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """Stems the text denies and stems it asserts. A cue (a negation, "instead of" or "rather than") denies
    the next `NEGATION_REACH` content words of its clause; a stem is asserted when it occurs only outside
    every negated clause. A stem used both ways ("requires_grad=True ... doesn't require grad") is neither.

    Counting cues misreads a sentence with two of them: "I don't write 'cuda:0' everywhere, because it
    crashes on a machine without a GPU" has an even count, like a plain assertion, but denies writing
    'cuda:0'. The reach is short because a cue surely denies only the verb and its object ("nothing gets
    calculated inside the block" denies the calculating, not the block); the rest of its clause is neither
    denied nor asserted ("can't be used in computations")."""
    # A rubric's claims are read for every answer; an answer's sentence, a few times a score.
    return _sentence_polarity(text) if len(text) <= 600 else _polarity(text)


def _polarity(text: str) -> tuple[frozenset[str], frozenset[str]]:
    text = text.lower().replace("’", "'")
    near: set[str] = set()
    in_clause: set[str] = set()
    outside: set[str] = set()
    left, negated = 0, False
    tokens = _SCOPE_TOKEN.findall(text)
    for i, tok in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if (tok, after) in _CONTRAST_CUES:
            left, negated = NEGATION_REACH, True
            continue
        if not (tok[0].isalpha() or tok[0] == "_") or tok in _SCOPE_BREAKERS:  # punctuation ends a clause
            left, negated = 0, False
            continue
        if tok in NEGATIONS or tok.endswith("n't"):
            left, negated = NEGATION_REACH, True
            continue
        parts = _stems(tok)
        (in_clause if negated else outside).update(parts)
        if left and parts:
            near.update(parts)
            left -= 1
    return frozenset(near - outside), frozenset(outside - in_clause)


_sentence_polarity = lru_cache(maxsize=4096)(_polarity)


_AUX = re.compile(
    r"\b(is|are|was|were|can|could|does|do|did|will|would|should|must|has|have|had)\b(?!\s+not\b)",
    re.IGNORECASE,
)
_NEG_PHRASE = re.compile(
    r"\b(cannot|can't|can not|doesn't|does not|don't|do not|isn't|is not|aren't|are not|won't|will not|"
    r"shouldn't|should not|must not|mustn't|need not|never|didn't|did not|wasn't|was not|hasn't|has not|"
    r"haven't|have not)\b",
    re.IGNORECASE,
)
_POSITIVE_OF = {
    "cannot": "can",
    "can't": "can",
    "can not": "can",
    "doesn't": "does",
    "does not": "does",
    "don't": "do",
    "do not": "do",
    "isn't": "is",
    "is not": "is",
    "aren't": "are",
    "are not": "are",
    "won't": "will",
    "will not": "will",
    "shouldn't": "should",
    "should not": "should",
    "must not": "must",
    "mustn't": "must",
    "need not": "need",
    "never": "always",
    "didn't": "did",
    "did not": "did",
    "wasn't": "was",
    "was not": "was",
    "hasn't": "has",
    "has not": "has",
    "haven't": "have",
    "have not": "have",
}


# An auxiliary after one of these is in a subordinate clause ("once the model is on the GPU it moves ..."):
# denying it would not deny the statement.
_SUBORDINATORS = frozenset(
    "that which who when whenever once if because as so while since after before until unless where whether "
    "though although".split()
)
# "has"/"do" as the main verb ("has a shape", "do the same job") is denied with "does not have"/"do not do".
_MAIN_VERB_DENIED = {
    "has": "does not have",
    "have": "do not have",
    "had": "did not have",
    "does": "does not do",
    "do": "do not do",
    "did": "did not do",
}
_OBJECT_START = frozenset("the a an this that these those its their it them all some any what everything".split())


@lru_cache(maxsize=4096)  # a rubric's sentences are negated again for every answer
def negate(sentence: str) -> str:
    """A rough opposite of a short statement, for asking the embedder which side an answer is on.

    A denial loses its "not" ("can't" -> "can"). Otherwise an auxiliary of the main clause, early in the
    sentence, is denied ("is" -> "is not"; as a main verb, "has a shape" -> "does not have a shape" and "do
    the same job" -> "do not do the same job"). Anything else, such as a main verb in -s, which can't be told
    from a plural noun without a dictionary ("clipping the gradients solves ..."), or a "no" that can't be
    undone word by word, becomes "It is not true that ...". On the dev set and Mohler this scores at least
    as well as denying a guessed verb, and it is always grammatical."""
    m = _NEG_PHRASE.search(sentence)
    if m:
        return sentence[: m.start()] + _POSITIVE_OF[m.group(0).lower()] + sentence[m.end() :]
    m = _AUX.search(sentence)
    if m and negation_count(sentence) == 0:
        before = [w.strip(",;:()").lower() for w in sentence[: m.start()].split()]
        after = sentence[m.end() :]
        main_clause = len(before) <= 8 and not _SUBORDINATORS.intersection(before)
        if main_clause and re.match(r"\s+[\w`'\"(]", after):
            verb = m.group(0).lower()
            following = after.split()[0].lower()
            has_object = following in _OBJECT_START or (
                verb in ("has", "have", "had") and following != "been" and not following.endswith(("ed", "en"))
            )
            if verb in _MAIN_VERB_DENIED and has_object:
                return sentence[: m.start()] + _MAIN_VERB_DENIED[verb] + after
            return sentence[: m.end()] + " not" + after
    return "It is not true that " + sentence[0].lower() + sentence[1:]


# -- key terms ------------------------------------------------------------------------------------
def normalise_term(term: str) -> str:
    return re.sub(r"[`()\s]+", "", term.lower()).strip(".")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def term_positions(answer: str, term: str) -> list[int]:
    """Character offsets where `term` occurs in the answer, ignoring case, backticks and brackets."""
    pattern = _term_pattern(term)
    return [m.start() for m in pattern.finditer(answer)] if pattern else []


@lru_cache(maxsize=4096)  # a rubric's key terms are looked for in every answer
def _term_pattern(term: str) -> re.Pattern | None:
    norm = normalise_term(term)
    if not norm:
        return None
    # An identifier's "_" and "." may be spoken: a transcript says "zero grad" and "state dict".
    optional = {"_": "_?", ".": r"\.?"}
    pattern = r"[`\s]*".join(optional.get(ch, re.escape(ch)) for ch in norm if ch not in "`() ")
    boundary_start = r"(?<![A-Za-z0-9_])" if norm[0].isalnum() else ""
    boundary_end = r"(?![A-Za-z0-9])" if norm[-1].isalnum() else ""
    return re.compile(boundary_start + pattern + boundary_end, re.IGNORECASE)


_STOPWORDS = frozenset(
    "the a an and or of to in on for with is are be by as it its that this which when what how why not no can "
    "do does use used using from into their them they you your at if than then so also all any each eg e.g "
    "was were has have had will would should could may might must just like very more most some such only "
    "one two both other about over under between through these those there here we our us i me my".split()
)


def stem(word: str) -> str:
    """A crude suffix stripper: enough to match "tracks"/"tracking"/"tracked" without a dictionary."""
    w = word.lower().strip("._`()")
    for suffix in ("ing", "es", "ed", "s"):
        if len(w) > 4 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def content_stems(text: str) -> frozenset[str]:
    """Stems of the words that carry content (no stop words, no short words). An identifier's parts are
    words, as a transcript says them: `zero_grad` and "zero grad" share "zero" and "grad"."""
    # A rubric's sentences and an answer's units are read many times a score; a whole answer, once.
    return _sentence_stems(text) if len(text) <= 600 else _stems(text)


def _stems(text: str) -> frozenset[str]:
    found = re.findall(r"[A-Za-z]+", text)
    return frozenset(stem(w) for w in found if w.lower() not in _STOPWORDS and len(w) > 2)


_sentence_stems = lru_cache(maxsize=8192)(_stems)


# `\w\(` finds what `\w+\(` finds without rescanning a long token from each of its characters.
_CODE_TOKEN = re.compile(r"\w\(|\w\.\w|\w_\w|[=#{}\[\]]")


def is_codeish(text: str) -> bool:
    """Mostly code: a line like `torch.save(model.state_dict(), PATH)` rather than a sentence. Counted in
    tokens and in characters, so a label in front ("Save: torch.save(model.state_dict(), PATH).") does not
    make a line of code prose."""
    tokens = text.split()
    if not tokens:
        return False
    code = [t for t in tokens if _CODE_TOKEN.search(t)]
    return len(code) / len(tokens) > 0.4 or sum(map(len, code)) / sum(map(len, tokens)) > 0.4
