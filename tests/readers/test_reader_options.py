"""A reader's options are given one way, under the source's `options` and typed by the reader's own model; a spec
written before that, with them at the source's top level, is read as if they were there, with one deprecation
line naming the file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specrun.core.plain_yaml import load_plain
from specrun.spec import load_spec
from tests.conftest import SPECS, assert_one_line_error, run_cli


def _spec_with(tmp_path: Path, name: str, edit) -> Path:
    data = load_plain((SPECS / f"{name}.yaml").read_text(encoding="utf-8"))
    edit(next(iter(data["sources"].values())))
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return spec


def _old_style(source: dict) -> None:
    source.update(source.pop("options"))


def test_the_shipped_specs_give_reader_options_under_options() -> None:
    for path in sorted(SPECS.glob("*.yaml")):
        warned: list[str] = []
        loaded = load_spec(path, warn=warned.append)
        assert not warned, path
        for source in loaded.spec.sources.values():
            assert not set(source.model_dump()) & {"quoting", "names", "optional_names", "extra_fields"}
    assert load_spec(SPECS / "jsick.yaml").spec.sources["jsick"].layout.options == {"quoting": "none"}


def test_an_older_spec_reads_the_same_items_and_says_where_once(tmp_path: Path, data_dir: Path) -> None:
    from specrun.data import load_split
    from tests.conftest import plan_of

    old = _spec_with(tmp_path, "jsick", _old_style)
    warned: list[str] = []
    loaded = load_spec(old, warn=warned.append)
    line = next(n for n, text in enumerate(old.read_text(encoding="utf-8").splitlines(), 1)
                if text.strip().startswith("quoting:"))
    assert warned == [f"{old}:{line}: sources.jsick.quoting: deprecated at the source's top level; give it under "
                      "`sources.jsick.options` (read as if it were there)"]
    assert loaded.spec.sources["jsick"].layout.options == {"quoting": "none"}
    moved = load_split(plan_of(old), "test", data_dir)
    plain = load_split(plan_of(SPECS / "jsick.yaml"), "test", data_dir)
    assert moved.fingerprint == plain.fingerprint and len(moved.items) == len(plain.items)


def test_the_deprecation_reaches_the_command_line_as_one_line(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["validate", str(_spec_with(tmp_path, "jacsts", _old_style))], capsys)
    assert code == 0, err
    notes = [line for line in err.splitlines() if "deprecated" in line]
    assert len(notes) == 1 and "sources.jacsts.names: deprecated" in notes[0], err


@pytest.mark.parametrize("name, edit, expected", [
    ("jsts", lambda source: source.update(quoting="none"),
     "sources.jsts.options.quoting: format jsonl takes no options"),
    ("jsick", lambda source: source.update(quoting="none"),
     "sources.jsick.quoting: given twice: here and under the source's `options`"),
    ("jsick", lambda source: source.update(options={"quoting": "always"}), "sources.jsick.options.quoting"),
    ("jsick", lambda source: source.update(options={"optional_names": ["a"]}),
     "optional trailing fields need `names`"),
    ("jsick", lambda source: source.update(options={"delimiter": ";"}),
     "sources.jsick.options.delimiter: not an option of format tsv; expected one of: quoting, names, "
     "optional_names, extra_fields"),
    ("jacsts", lambda source: source.update(options={"quoting": "none"}),
     "sources.jacsts.options.quoting: not an option of format xls; expected one of: names"),
])
def test_bad_reader_options_are_one_line(name: str, edit, expected: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["validate", str(_spec_with(tmp_path, name, edit))], capsys)
    assert_one_line_error(code, err, contains=expected)
