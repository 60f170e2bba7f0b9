"""Synthetic data in the exact layouts of QABot (query folders), C-STS (zip of CSV) and BEIR: the real QABot and
C-STS data may not be redistributed, so the tests make their own, with the formats' awkward parts included."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import yaml

from specrun.core.plain_yaml import load_plain
from specrun.data import load_split
from tests.conftest import SPECS, plan_of

POOL = [
    "How do I compile a Java file from the command line?",
    "javac says 'cannot find symbol' for my variable, what is wrong?",
    "What is the difference between an int and an Integer?",
    "My for loop never ends,\nhow do I stop it?",  # a line break inside a quoted field
    "How do I read a line of input with Scanner?",
    "Why does my program throw a NullPointerException?",
    "How can I convert a String to an int?",
    "What does 'public static void main' mean?",
    "How do I submit the assignment on the course site?",
    "When is the deadline for the second report?",
    "How do I print text without a newline?",
    "What is an ArrayIndexOutOfBoundsException?",
]
# query text -> indices of relevant pool entries; the first query is itself pool entry 6 (removed from its file)
QUERIES = {
    "1": ("How can I convert a String to an int?", [4], 6),
    "2": ("Compiling my .java program in the terminal fails", [0, 1], None),
    "3": ("I get an exception when the array index is too big", [11, 5], None),
}


def make_qabot(root: Path) -> Path:
    """<root>/qabot/dataset/<N>/{question.txt, data.csv}: BOM, CRLF, quoted line breaks, [SEP] answers."""
    dataset = root / "qabot" / "dataset"
    for name, (query, relevant, own) in QUERIES.items():
        folder = dataset / name
        folder.mkdir(parents=True)
        (folder / "question.txt").write_text(query + "\n", encoding="utf-8")
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(["question", "answer", "label"])
        for index, question in enumerate(POOL):
            if index != own:
                writer.writerow([question, f"answer {index}[SEP]thanks", 1 if index in relevant else 0])
        (folder / "data.csv").write_bytes(b"\xef\xbb\xbf" + buffer.getvalue().encode("utf-8"))
    return dataset


CSTS_ROWS = [
    # (sentence1, sentence2, condition, label); rows in adjacent pairs
    ("A man rides a red bicycle down the street.", "A woman rides a blue bicycle in the park.", "the vehicle", 5),
    ("A man rides a red bicycle down the street.", "A woman rides a blue bicycle in the park.", "the colour", 1),
    ("Two dogs play with a ball on the beach.", "A cat sleeps on a sofa in the sun.", "the animal", 2),
    ("Two dogs play with a ball on the beach.", "A cat sleeps on a sofa in the sun.", "the location", 1),
    ("A chef cuts vegetables in a kitchen.", "A chef serves soup in a restaurant.", "the profession", 5),
    ("A chef cuts vegetables in a kitchen.", "A chef serves soup in a restaurant.", "the action", 2),
    ("Children build a sandcastle.", "Kids swim in the sea.", "the place", 4),
    ("Children build a sandcastle.", "Kids swim in the sea.", "the place", 3),  # identical conditions
    ("A plane lands at the airport at night.", "A train arrives at the station at dawn.", "the time of day", 2),
    ("A plane lands at the airport at night.", "A train arrives at the station at dawn.", "the vehicle", 1),
    ("A girl plays the violin on stage.", "A boy plays the piano at home.", "the instrument", 2),
    ("A girl plays the violin on stage.", "A boy plays the piano at home.", "the activity", 5),
    ("An old man reads a newspaper.", "A young man reads a book.", "the age", 1),
    ("An old man reads a newspaper.", "A young man reads a book.", "the action", 5),
    ("A farmer feeds the cows.", "A farmer milks the goats.", "the job", 3),
    ("A farmer feeds the cows.", "A farmer milks the goats.", "the job of the person", 3),  # a tie
    ("People shop at a market.", "People queue at a bank.", "the number of people", 4),
    ("People shop at a market.", "People queue at a bank.", "the purpose", -1),  # invalid row
    ("A boat sails on a calm lake.", "A ship crosses a stormy ocean.", "the weather", 1),
    ("A boat sails on a calm lake.", "A ship crosses a stormy ocean.", "the kind of vessel", 4),
    ("A student writes an essay.", "A teacher grades an exam.", "the setting", 5),
    ("A student writes an essay.", "A teacher grades an exam.", "the role", 1),
    ("A runner crosses the finish line.", "A swimmer touches the wall.", "winning a race", 4),
    ("A runner crosses the finish line.", "A swimmer touches the wall.", "the sport", 1),
]


def make_csts(root: Path, rows: list[tuple[str, str, str, int]] = CSTS_ROWS) -> Path:
    """<root>/csts/dataset.zip holding csts_validation_reannotated.csv."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["sentence1", "sentence2", "condition", "label"])
    writer.writerows(rows)
    path = root / "csts" / "dataset.zip"
    path.parent.mkdir(parents=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("dataset/csts_validation_reannotated.csv", buffer.getvalue())
        archive.writestr("dataset/csts_train_reannotated.csv", buffer.getvalue())
    return path


def make_beir(root: Path, source: str = "beirset") -> Path:
    """<root>/<source>/data/{corpus.jsonl, queries.jsonl, qrels/test.tsv} with the QABot pool as corpus."""
    folder = root / source / "data"
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for index, text in enumerate(POOL):
            handle.write(json.dumps({"_id": f"d{index}", "title": "", "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for name, (query, _, _) in QUERIES.items():
            handle.write(json.dumps({"_id": f"q{name}", "text": query}) + "\n")
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for name, (_, relevant, _) in QUERIES.items():
            for index in relevant:
                handle.write(f"q{name}\td{index}\t1\n")
    return folder


def fixture_spec(name: str, tmp_path: Path, data_dir: Path, edit: dict | None = None) -> Path:
    """The real spec with its file pins dropped (the fixture is not the real data) and the fixture's fingerprint."""
    data = load_plain((SPECS / f"{name}.yaml").read_text(encoding="utf-8"))
    for source in data["sources"].values():
        for entry in source.get("files", {}).values():
            entry.pop("sha256", None)
            entry.pop("contents", None)
    for key, value in (edit or {}).items():
        target = data
        *parents, last = key.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    plan = plan_of(path, require_fingerprints=False)
    for split, entry in data["splits"].items():  # a split a protocol fits on is checked like an evaluated one
        entry["fingerprint"] = load_split(plan, split, data_dir, check=False).fingerprint
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path
