"""SPEC parsing (latechunk/strategies/base.py, the bounds in latechunk/strategies/_common.py): an empty setting or
an empty sweep alternative is refused, not skipped; every int setting has an upper bound, checked when the
strategy is built (before any work), so a value no one means never reaches a document's split."""

from __future__ import annotations

import re

import pytest

from latechunk.eval.config import CompareConfig
from latechunk.strategies import expand_spec, get_strategy, parse_spec
from latechunk.strategies._common import MAX_SENTENCES, MAX_TOKENS
from latechunk.strategies.fixed import Fixed
from latechunk.strategies.sentence_window import SentenceWindow
from latechunk.types import Document
from tests.invariants import check_boundaries

HUGE = "99999999999999999999999"  # past int64: the split overflowed on every document (OverflowError)


# --- empty settings ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, where",
    [
        ("fixed:size=64,,overlap=2", "between commas"),
        ("fixed:size=64, ,overlap=2", "between commas"),
        ("fixed:size=64,", "after the last comma"),
        ("fixed:,size=64", "before the first comma"),
        ("fixed:,", "before the first comma"),
        ("recursive:max_tokens=64,,", "between commas"),
    ],
)
def test_an_empty_setting_is_refused_naming_the_spec(spec, where):
    """User trial: `fixed:size=64,,overlap=2` was taken as `fixed:size=64,overlap=2` (the empty item ignored)."""
    for parse in (parse_spec, get_strategy, expand_spec):
        with pytest.raises(ValueError) as err:
            parse(spec)
        assert f"strategy spec {spec!r}: empty setting {where}" in str(err.value), parse


def test_a_spec_without_empty_settings_still_parses():
    assert parse_spec("fixed: size=64 , overlap=2 ") == ("fixed", {"size": "64", "overlap": "2"})
    assert parse_spec("fixed") == ("fixed", {})
    with pytest.raises(ValueError, match="nothing after ':'"):  # a name and a colon: a setting was meant
        parse_spec("fixed:")
    assert get_strategy("fixed:size=64,overlap=2") == Fixed(size=64, overlap=2)


@pytest.mark.parametrize(
    "spec", ["fixed:size=32||64", "fixed:size=32|64|", "fixed:size=|32", "fixed:size=32| |64",
             "semantic:max_tokens=32||64"],
)
def test_an_empty_sweep_alternative_is_refused_naming_the_spec(spec):
    """`size=32||64` expanded to a SPEC `fixed:size=` (a bad int; for `semantic:max_tokens` silently the default)."""
    with pytest.raises(ValueError) as err:
        expand_spec(spec)
    key_value = spec.partition(":")[2]
    assert f"strategy spec {spec!r}: empty alternative in {key_value}" in str(err.value)
    with pytest.raises(ValueError, match="empty alternative"):  # compare's config, before any work
        CompareConfig.from_options(dataset="x", strategies=[spec], modes="late", k="1")


def test_a_sweep_without_empty_alternatives_still_expands():
    assert expand_spec("fixed:size=32 | 64,overlap=0") == ["fixed:size=32,overlap=0", "fixed:size=64,overlap=0"]


# --- upper bounds ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, key, bound",
    [
        (f"fixed:size={HUGE}", "size", "1,000,000 tokens"),
        (f"fixed:chunk_size={MAX_TOKENS + 1}", "size", "1,000,000 tokens"),
        (f"fixed:size=8,overlap={HUGE}", "overlap", "1,000,000 tokens"),
        (f"recursive:max_tokens={HUGE}", "max_tokens", "1,000,000 tokens"),
        (f"recursive:overlap={HUGE}", "overlap", "1,000,000 tokens"),
        (f"heading:max_tokens={HUGE}", "max_tokens", "1,000,000 tokens"),
        (f"heading:overlap={HUGE}", "overlap", "1,000,000 tokens"),
        (f"sentence_window:window={HUGE}", "window", "100,000 sentences"),
        (f"sentence_window:window={MAX_SENTENCES + 1}", "window", "100,000 sentences"),
        (f"semantic:max_tokens={HUGE}", "max_tokens", "1,000,000 tokens"),
        (f"semantic:min_tokens={HUGE}", "min_tokens", "1,000,000 tokens"),
        (f"code:max_tokens={HUGE}", "max_tokens", "1,000,000 tokens"),
        (f"code:min_tokens={HUGE}", "min_tokens", "1,000,000 tokens"),
    ],
)
def test_an_int_setting_over_its_bound_is_refused_naming_spec_key_and_bound(spec, key, bound):
    """User trial: `fixed:size=99999999999999999999999` passed the checks, then every document was skipped with
    `OverflowError: Python int too large to convert to C long`."""
    with pytest.raises(ValueError) as err:
        get_strategy(spec)
    assert f"strategy spec {spec!r}: {key} must be at most {bound}" in str(err.value)


def test_the_other_settings_were_already_bounded():
    """Settings with a range of their own keep it (and its message): no second bound in front of it."""
    for spec, needle in [
        (f"heading:levels={HUGE}", "levels must be in 1..6"),
        (f"sentence_window:window=1,stride={HUGE}", "stride must be at most 2 * window + 1 = 3"),
        ("semantic:percentile=1e999", "percentile must be in [0, 100]"),
        ("semantic:percentile=nan", "percentile='nan' is not a number"),
    ]:
        with pytest.raises(ValueError) as err:
            get_strategy(spec)
        assert needle in str(err.value) and "at most 1,000,000" not in str(err.value), spec


def test_the_bound_holds_for_a_strategy_built_in_python():
    with pytest.raises(ValueError, match="fixed: size must be at most 1,000,000 tokens"):
        Fixed(size=int(HUGE))
    with pytest.raises(ValueError, match="sentence_window: window must be at most 100,000 sentences"):
        SentenceWindow(window=MAX_SENTENCES + 1)


@pytest.mark.parametrize(
    "spec",
    [
        f"fixed:size={MAX_TOKENS},overlap={MAX_TOKENS - 1}",
        f"recursive:max_tokens={MAX_TOKENS},overlap={MAX_TOKENS - 1}",
        f"heading:max_tokens={MAX_TOKENS},overlap={MAX_TOKENS - 1}",
        f"sentence_window:window={MAX_SENTENCES},stride={2 * MAX_SENTENCES + 1}",
    ],
)
def test_a_setting_at_its_bound_splits_a_document(minilm_tokenizer, spec):
    """The bounds lie far below any overflow: a strategy at them cuts a document as one chunk."""
    text = "# Rivers\n\nRivers flow to the sea. The sea is salt.\n\nClouds bring the rain back.\n"
    doc = Document("case", text)
    tok = minilm_tokenizer(doc)
    b = get_strategy(spec).split(doc, tok)
    check_boundaries(text, tok, b)
    assert len(b) >= 1


# --- the command line -----------------------------------------------------------------------------------------

def test_embed_refuses_a_bad_spec_with_exit_2_before_the_model_loads(tmp_path):
    """`latechunk embed /tmp/x --out /tmp/y -q --strategy 'fixed:size=64,,overlap=2'` (and a size past its
    bound) exit 2 with the message, torch never imported and nothing written."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nRivers flow to the sea.\n", encoding="utf-8")
    cases = [
        ("fixed:size=64,,overlap=2", "strategy spec 'fixed:size=64,,overlap=2': empty setting between commas"),
        (f"fixed:size={HUGE}", f"strategy spec 'fixed:size={HUGE}': size must be at most 1,000,000 tokens"),
    ]
    from tests.cli.test_cli import _cli_in_a_fresh_process

    calls = [["embed", str(tmp_path / "docs"), "--out", str(tmp_path / "out"), "-q", "--strategy", spec]
             for spec, _ in cases]
    for (spec, needle), r in zip(cases, _cli_in_a_fresh_process(*calls)):
        assert r["code"] == 2 and needle in " ".join(r["output"].split()), (spec, r)
        assert not r["torch"], spec
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("spec, value", [
    ("fixed:size=+5", "'+5'"), ("fixed:size=1_000", "'1_000'"), ("fixed:size=\u0665", "'\u0665'"),
    ("heading:levels=1//2", "'1//2'"), ("heading:levels=1/2/", "'1/2/'"), ("semantic:percentile=nan", "'nan'"),
    ("semantic:percentile=1e", "'1e'"),
])
def test_a_number_not_written_in_plain_ascii_digits_is_refused(spec, value):
    """Trial: Python's int()/float() took `+5`, `1_000`, an Arabic-Indic digit and `nan`, and `levels=1//2`
    skipped its empty level; each is refused, naming the setting as written."""
    with pytest.raises(ValueError, match=f"parameter .*={re.escape(value)} is not a (whole )?(number|list)") as err:
        get_strategy(spec)
    assert "tuple[" not in str(err.value)  # a Python type name leaked into the message (trial)


def test_plain_numbers_still_parse():
    assert get_strategy("fixed:size= 64,overlap=-0").spec == "fixed:size=64,overlap=0"
    assert get_strategy("heading:levels=1/2").levels == (1, 2)
    assert get_strategy("semantic:percentile=.5").percentile == 0.5
    assert get_strategy("semantic:percentile=2.5e1").percentile == 25.0
