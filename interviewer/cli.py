"""`python -m interviewer ...`: the command line turns library results and errors into text."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .bank import Question, load_bank
from .errors import InterviewerError
from .settings import Settings


def _bank(settings: Settings):
    return load_bank(settings.rubric_dir)


def _question_summary(q: Question) -> dict:
    return {
        "id": q.id,
        "question": q.question,
        "topic": q.topic,
        "difficulty": q.difficulty,
        "source": q.source,
        "covers": len(q.covers),
        "pitfalls": len(q.pitfalls),
    }


def cmd_bank_list(args, settings: Settings) -> int:
    bank = _bank(settings)
    for err in bank.errors:
        print(f"warning: {err}", file=sys.stderr)
    questions = [q for q in bank.questions if not args.topic or q.topic == args.topic]
    if args.topic and not questions:
        print(f"No questions with topic {args.topic!r}. Topics: {', '.join(bank.topics())}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([_question_summary(q) for q in questions], indent=2))
    else:
        for q in questions:
            print(f"{q.id:<28} {q.topic:<18} {q.difficulty:<7} {q.question}")
    return 0


def cmd_bank_show(args, settings: Settings) -> int:
    q = _bank(settings).get(args.id)
    if args.json:
        print(json.dumps(q.model_dump(exclude_none=True), indent=2))
        return 0
    print(f"{q.id} [{q.topic}, {q.difficulty}] (from {q.source})\n\n{q.question}\n\nWhat a strong answer covers:")
    for p in q.covers:
        print(f"  {p.id}: {p.text}")
    print("Pitfalls:")
    for p in q.pitfalls:
        print(f"  {p.id} ({p.kind}): {p.text}")
    print(f"\nModel answer:\n  {q.model_answer.strip()}")
    if q.curation:
        print(f"\nCuration note: {q.curation.strip()}")
    return 0


def cmd_bank_validate(args, settings: Settings) -> int:
    path = Path(args.path) if args.path else settings.rubric_dir
    bank = load_bank(path)
    for err in bank.errors:
        print(f"error: {err}", file=sys.stderr)
    if bank.errors:
        print(f"{len(bank.errors)} problem(s); {len(bank.questions)} question(s) loaded fine.", file=sys.stderr)
        return 1
    print(
        f"OK: {len(bank.questions)} questions, {sum(len(q.covers) for q in bank.questions)} covers points, "
        f"{sum(len(q.pitfalls) for q in bank.questions)} pitfalls."
    )
    return 0


def cmd_bank_import(args, settings: Settings) -> int:
    from .importer import import_document, write_drafts

    drafts = import_document(Path(args.file))
    out = Path(args.output) if args.output else Path("rubrics-draft") / Path(args.file).stem
    paths = write_drafts(drafts, out)
    print(
        f"Wrote {len(paths)} draft question(s) to {out}/. Review the TODO fields, then run "
        f"`python -m interviewer bank validate {out}`."
    )
    return 0


def cmd_bank_draft(args, settings: Settings) -> int:
    from .drafting import write_draft
    from .llm import llm_from_settings

    path, problems = write_draft(llm_from_settings(settings), args.question, Path(args.output))
    print(f"Wrote a draft rubric to {path}. Review it before adding it to the bank.")
    if problems:
        print("The draft needs these fixes to validate:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
    return 0


def _read_answer(args) -> str:
    if args.answer_file:
        try:
            return Path(args.answer_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InterviewerError(f"Cannot read {args.answer_file}: {exc.strerror}") from None
    return args.answer


def print_report(report, file=sys.stdout) -> None:
    print(f"Score {report.score}/100 (grade {report.grade}/5) for {report.question_id}", file=file)
    if report.message:
        print(f"Note: {report.message}", file=file)
    for c in report.covers:
        mark = "contradicted" if c.contradicted else ("covered" if c.covered else "missed")
        line = f"  [{mark:>12}] {c.index}. {c.text}"
        if c.evidence:
            line += f'\n                 "{c.evidence}"'
        print(line, file=file)
    for p in report.pitfalls:
        if p.flagged:
            confirmed = " (confirmed by the LLM)" if p.check == "confirmed" else ""
            print(f"  [flag: {p.kind}] {p.text}{confirmed}", file=file)
            if p.evidence:
                print(f'                 "{p.evidence}"', file=file)
            print(f"                 -> {p.correction}", file=file)
    if report.follow_up:
        if report.follow_up.get("notice"):
            print(f"Note: {report.follow_up['notice']} ({report.follow_up.get('reason', '')})", file=file)
        print(f"Follow-up ({report.follow_up['source']}): {report.follow_up['text']}", file=file)


def cmd_score(args, settings: Settings) -> int:
    from .service import Interviewer

    answer = _read_answer(args)
    report = Interviewer(settings).score(args.question, answer, use_llm=not args.no_llm)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print_report(report)
    return 0


def cmd_grade(args, settings: Settings) -> int:
    from .grading import grade_file

    out = Path(args.output) if args.output else None
    summary = grade_file(Path(args.input), out, settings, progress=not args.quiet)
    print(f"Graded {summary['graded']} answer(s); skipped {summary['skipped']} bad line(s).", file=sys.stderr)
    return 0 if summary["graded"] or not summary["skipped"] else 1


def cmd_eval(args, settings: Settings) -> int:
    from .evaluation import DEFAULT_SHARED, evaluate_dev, evaluate_mohler, format_table
    from .service import Interviewer

    svc = Interviewer(settings)
    dev_path = Path(args.dev) if args.dev else DEFAULT_SHARED / "data" / "pytorch_dev.jsonl"
    mohler_path = Path(args.mohler) if args.mohler else DEFAULT_SHARED / "benchmarks" / "mohler" / "mohler_2273.csv"
    dev = mohler = None

    def score(question_id: str, answer: str):
        rubric = svc.rubric(question_id)
        report = svc.score_answer(rubric, answer)
        return svc.check_flags(rubric, report, answer) if args.llm_check else report

    if args.llm_check and svc.llm is None:
        print("error: --llm-check needs an LLM: set INTERVIEWER_LLM_MODEL (and OPENAI_BASE_URL)", file=sys.stderr)
        return 2
    if dev_path.exists():
        dev = evaluate_dev(score, svc.bank, dev_path)
    else:
        print(f"warning: no dev set at {dev_path}; pass --dev PATH", file=sys.stderr)
    if mohler_path.exists() and not args.skip_mohler:
        mohler = evaluate_mohler(svc.scorer, mohler_path)
    elif not args.skip_mohler:
        print(f"warning: no Mohler data at {mohler_path}; pass --mohler PATH", file=sys.stderr)
    if args.json:
        if dev and not args.details:
            dev = {k: v for k, v in dev.items() if k != "details"}
        print(json.dumps({"dev": dev, "mohler": mohler}, indent=2))
    else:
        print(format_table(dev, mohler))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m interviewer", description="Interviewer: a local interview coach.")
    sub = parser.add_subparsers(dest="command", required=True)

    bank = sub.add_parser("bank", help="browse, validate and import the question bank")
    bsub = bank.add_subparsers(dest="bank_command", required=True)
    p = bsub.add_parser("list", help="list questions")
    p.add_argument("--topic")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bank_list)
    p = bsub.add_parser("show", help="show one question with its rubric")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bank_show)
    p = bsub.add_parser("validate", help="validate rubric files; exits non-zero on any problem")
    p.add_argument("path", nargs="?")
    p.set_defaults(func=cmd_bank_validate)
    p = bsub.add_parser("import", help="turn a document of questions into draft rubric YAML")
    p.add_argument("file")
    p.add_argument("-o", "--output", help="folder for the drafts (default rubrics-draft/<name>)")
    p.set_defaults(func=cmd_bank_import)

    p = bsub.add_parser("draft", help="ask the configured LLM for a rubric draft of a new question")
    p.add_argument("question")
    p.add_argument("-o", "--output", default="rubrics-draft", help="folder for the draft (default rubrics-draft)")
    p.set_defaults(func=cmd_bank_draft)

    p = sub.add_parser("score", help="score one answer to a bank question")
    p.add_argument("--question", required=True)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--answer")
    src.add_argument("--answer-file")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-llm", action="store_true", help="use the rubric follow-up even if an LLM is configured")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("grade", help="score a JSONL file of answers in batches")
    p.add_argument("input")
    p.add_argument("-o", "--output", help="output JSONL (default: standard output)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("eval", help="measure the scorer against human labels")
    p.add_argument("--dev")
    p.add_argument("--mohler")
    p.add_argument("--skip-mohler", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--details", action="store_true", help="with --json: per-answer decisions")
    p.add_argument("--llm-check", action="store_true", help="let the configured LLM confirm misconception flags")
    p.set_defaults(func=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, Settings())
    except InterviewerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head` closed the pipe: not an error
        sys.stderr.close()
        return 0
