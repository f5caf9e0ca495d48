"""latechunk/strategies/code.py: the ``code`` strategy (issue 12, item 2): source files cut at function and class
boundaries with tree-sitter, in six languages, through the invariants every strategy holds (``tests/invariants``)
and through ``latechunk chunk`` on real files. Tokenization: the bundled all-MiniLM-L6-v2 tokenizer."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.io import CODE_SUFFIXES, iter_inputs
from latechunk.models import resolve_model_path
from latechunk.strategies import get_strategy, registry
from latechunk.strategies.code import SUFFIX_LANGUAGES, Code, language_of, parse_tree
from latechunk.strategies.recursive import Recursive
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Document
from tests.invariants import check_boundaries, check_chunk_rows

runner = CliRunner()
# LATECHUNK_EXAMPLES=2000 for a longer hunt (as tests/strategies/strategy_helpers.py)
EXAMPLES = int(os.environ.get("LATECHUNK_EXAMPLES", "60"))

# three functions and a class; each definition well over the default min_tokens (24)
PYTHON = '''def load(path):
    """Read a file and return its lines, stripped of trailing spaces."""
    with open(path) as fh:
        return [line.rstrip() for line in fh]


# Save lines to a path, one per line.
@retry(times=3)
def save(path, lines):
    """Write lines to a file, one per line, with a final newline."""
    with open(path, "w") as fh:
        fh.write("\\n".join(lines) + "\\n")


class Store:
    """A store of named values kept in memory and flushed to disk on demand."""

    def get(self, key, default=None):
        """Return the value stored under key, or default when there is none."""
        return self.values.get(key, default)

    def put(self, key, value):
        """Store value under key and remember that the store is dirty now."""
        self.values[key] = value
        self.dirty = True

    def flush(self, path):
        """Write every stored value to path and mark the store as clean again."""
        save(path, [str(v) for v in self.values.values()])
        self.dirty = False


def main():
    """Entry point: load the input, store each line, save everything again."""
    store = Store()
    for i, line in enumerate(load(sys.argv[1])):
        store.put(i, line)
    store.flush(sys.argv[2])
'''

# per language: a file with two functions (the first with a doc comment above it), and their names
TWO_FUNCTIONS = {
    ".py": ('# Add two numbers.\ndef add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n',
            ["add", "sub"]),
    ".js": (('// Add two numbers.\nfunction add(a, b) {\n  return a + b;\n}\n\n'
            'export const sub = (a, b) => {\n  return a - b;\n};\n'), ["add", "sub"]),
    ".ts": (('/** Add two numbers. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n\n'
            'function sub(a: number, b: number): number {\n  return a - b;\n}\n'), ["add", "sub"]),
    ".go": (('package calc\n\n// Add adds two numbers.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n'
            'func Sub(a, b int) int {\n\treturn a - b\n}\n'), ["Add", "Sub"]),
    ".rs": (('/// Add two numbers.\n#[inline]\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n'
            'fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n'), ["add", "sub"]),
    ".java": (('/** Add two numbers. */\nstatic int add(int a, int b) {\n    return a + b;\n}\n\n'
              'static int sub(int a, int b) {\n    return a - b;\n}\n'), ["add", "sub"]),
}


@pytest.fixture(scope="module")
def tokenizer():
    return DocumentTokenizer.from_pretrained(resolve_model_path(None))


def _split(spec, text, tokenizer, source="m.py"):
    doc = Document(source, text, {"source": source})
    tok = tokenizer(doc)
    strategy = get_strategy(spec)
    b = strategy.split(doc, tok)
    check_boundaries(text, tok, b, max_tokens=strategy.max_tokens)
    return tok, b


def _texts(text, b):
    return [text[s:e] for s, e in b.char_spans.tolist()]


def _chunk(tmp_path, path, spec):
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["chunk", str(path), "--strategy", spec, "--out", str(out), "--force"])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_chunk_cli_gives_one_chunk_per_definition_and_names_the_class_of_split_methods(tmp_path, tokenizer):
    path = tmp_path / "store.py"
    path.write_text(PYTHON, encoding="utf-8")
    # a budget that holds every definition whole: one chunk per definition, the doc comment and decorator kept
    rows = _chunk(tmp_path, path, "code:max_tokens=256")
    check_chunk_rows({"store.py": PYTHON}, rows, tokenizer)
    assert [r["heading_path"] for r in rows] == [["load"], ["save"], ["Store"], ["main"]]
    assert rows[1]["text"].startswith("# Save lines to a path, one per line.\n@retry(times=3)\ndef save(")
    assert rows[2]["text"].startswith("class Store:") and rows[2]["text"].rstrip().endswith("self.dirty = False")
    # a budget under the class but over each method: the class is cut at its methods, which name the class
    n_class = next(r["token_end"] - r["token_start"] for r in rows if r["heading_path"] == ["Store"])
    rows = _chunk(tmp_path, path, f"code:max_tokens={n_class - 1}")
    check_chunk_rows({"store.py": PYTHON}, rows, tokenizer)
    paths = [tuple(r["heading_path"]) for r in rows]
    assert paths == [("load",), ("save",), ("Store",), ("Store", "get"), ("Store", "put"), ("Store", "flush"),
                     ("main",)]
    header = rows[2]["text"]
    assert header.startswith("class Store:") and "A store of named values" in header and "def " not in header
    assert rows[3]["text"].startswith("def get(self")


@pytest.mark.parametrize("suffix", sorted(TWO_FUNCTIONS))
def test_each_language_gives_one_chunk_per_function(suffix, tokenizer):
    text, names = TWO_FUNCTIONS[suffix]
    tree = parse_tree(text, SUFFIX_LANGUAGES[suffix])  # a clean parse (Java: a file of top-level methods, JEP 445)
    assert not tree.root_node.has_error
    _, b = _split("code:max_tokens=128,min_tokens=0", text, tokenizer, source=f"src/calc{suffix}")
    defs = [(p[-1], t) for p, t in zip(b.heading_paths, _texts(text, b)) if p]
    assert [n for n, _ in defs] == names, list(zip(b.heading_paths, _texts(text, b)))
    first = defs[0][1]
    assert "two numbers" in first and names[1] not in first  # the doc comment is in its function's chunk
    assert defs[1][1].rstrip().endswith(("b", "b;", "b\n}", "}", "};"))


def test_small_neighbours_merge_up_to_the_budget(tokenizer):
    text = ("import os\nimport sys\n\nLIMIT = 10\nNAME = 'x'\n\n\ndef tiny():\n    return 1\n\n\n"
            "def other():\n    return 2\n\n\n" + PYTHON.split("\n\n\n# Save")[0] + "\n")
    _, b = _split("code:max_tokens=256,min_tokens=24", text, tokenizer)
    texts = _texts(text, b)
    assert len(b) == 2 and b.heading_paths == ((), ("load",))
    assert texts[0].startswith("import os") and texts[0].rstrip().endswith("return 2")
    # min_tokens=0: every definition is its own chunk, the imports and constants one chunk before them
    _, b = _split("code:max_tokens=256,min_tokens=0", text, tokenizer)
    assert b.heading_paths == ((), ("tiny",), ("other",), ("load",))


def test_a_small_header_or_tail_joins_its_neighbouring_definition(tokenizer):
    """Fresh-user trial: ``code:max_tokens=64,min_tokens=8`` made the 3-token chunk ``class Big:`` (the header of a
    class cut at its methods). A run of small units under min_tokens now opens the next definition's chunk when
    it fits (and a small tail closes the chunk before it); chunks under min_tokens are left only where nothing fits."""
    methods = "".join(f"    def method_{i}(self, value):\n        return self.table[{i}] * value + {i}\n\n"
                      for i in range(4))
    text = "import os\n\n\nclass Big:\n" + methods + "\nx = 1\n"
    _, b = _split("code:max_tokens=64,min_tokens=8", text, tokenizer)
    texts, sizes = _texts(text, b), (b.token_spans[:, 1] - b.token_spans[:, 0]).tolist()
    assert not any(t.strip() == "class Big:" for t in texts), list(zip(b.heading_paths, texts))
    first = next(t for t, p in zip(texts, b.heading_paths) if p[-1:] == ("method_0",))
    assert first.startswith("class Big:\n    def method_0"), texts
    # "x = 1" closes the last method's chunk; the import stays alone: the class after it does not fit whole
    assert texts[0] == "import os" and min(sizes[1:]) >= 8, list(zip(sizes, texts))
    assert texts[-1].rstrip().endswith("x = 1")
    # min_tokens=0 keeps the old rule: every unit is its own chunk where it is a definition
    _, b0 = _split("code:max_tokens=64,min_tokens=0", text, tokenizer)
    assert ("Big",) in b0.heading_paths


def test_a_long_function_is_cut_at_statements_then_lines_within_the_budget(tokenizer):
    body = "".join(f"    total = total + compute_value_number_{i}(argument_{i})\n" for i in range(40))
    text = f"def big(total):\n    \"\"\"Sum many values.\"\"\"\n{body}    return total\n"
    _, b = _split("code:max_tokens=48", text, tokenizer)
    assert len(b) > 3 and set(b.heading_paths) == {("big",)}
    assert _texts(text, b)[0].startswith('def big(total):\n    """Sum many values."""')
    assert (np.diff(b.token_spans, axis=1) <= 48).all()


def test_a_last_statement_after_a_full_chunk_takes_lines_from_it(tokenizer):
    """Review of the code strategy: the greedy merge of a long function's statements left its last ``return
    total`` (2 tokens) as a chunk of its own after a chunk filled to the budget (26 chunks under min_tokens over
    latechunk/*.py at 256/24). The chunk before now hands over its last lines, so both hold min_tokens."""
    body = "".join(f"    total = total + value_{i}\n" for i in range(60))
    text = f"def big(total):\n{body}    return total\n"
    for max_tokens in range(40, 80, 3):  # some budget leaves the greedy tail short; none may now
        _, b = _split(f"code:max_tokens={max_tokens},min_tokens=16", text, tokenizer)
        sizes = (b.token_spans[:, 1] - b.token_spans[:, 0]).tolist()
        texts = _texts(text, b)
        assert min(sizes) >= 16 and max(sizes) <= max_tokens, (max_tokens, list(zip(sizes, texts)))
        assert texts[-1].rstrip().endswith("return total") and "total = total" in texts[-1]
        assert all(t.lstrip().startswith(("def big", "total")) for t in texts)  # cuts at line starts only (_split
        # checks the invariants: exact slices tiling the content, within the budget)
    # a signature before a docstring too long to join it takes the docstring's first lines
    doc = "".join(f"    line {i} of a long docstring about totals\n" for i in range(20))
    text = f'def f(total):\n    """\n{doc}    """\n    return total + 1\n'
    _, b = _split("code:max_tokens=64,min_tokens=16", text, tokenizer)
    sizes = (b.token_spans[:, 1] - b.token_spans[:, 0]).tolist()
    assert min(sizes) >= 16, list(zip(sizes, _texts(text, b)))


def test_non_ascii_source_cuts_at_the_right_characters(tokenizer):
    text = ('GREETING = "héllo wörld 😀 中文"\n\n\ndef café(x):\n    """Dé-dup ünïcode 😀 names and values."""\n'
            '    return x\n\n\ndef naïve(y):\n    """Straße und Grüße: 日本語のテキスト, again and again."""\n    return y\n')
    _, b = _split("code:max_tokens=128,min_tokens=0", text, tokenizer)
    texts = _texts(text, b)
    assert b.heading_paths == ((), ("café",), ("naïve",))
    assert texts[1].startswith("def café(x):") and texts[2].startswith("def naïve(y):")


def test_language_comes_from_the_suffix_or_the_parameter(tokenizer):
    assert language_of(Document("a", "x", {"source": "pkg/mod.PY"})) == "python"
    assert language_of(Document("lib.rs", "x")) == "rust"  # no source: the id
    assert language_of(Document("a", "x", {"source": "corpus.jsonl:3"})) == ""
    assert all(s in SUFFIX_LANGUAGES for s in CODE_SUFFIXES)  # every code file read is parsed
    text = TWO_FUNCTIONS[".go"][0]
    _, b = _split("code:max_tokens=128,min_tokens=0,language=go", text, tokenizer, source="notes.txt")
    assert [p for p in b.heading_paths if p] == [("Add",), ("Sub",)]


def test_markdown_is_cut_as_recursive(tokenizer):
    text = "# Title\n\nSome prose here.\n\n## Part\n\n" + "More prose, sentence after sentence. " * 30
    doc = Document("a.md", text, {"source": "a.md"})
    tok = tokenizer(doc)
    b = Code(max_tokens=40).split(doc, tok)
    r = Recursive(max_tokens=40).split(doc, tok)
    assert np.array_equal(b.token_spans, r.token_spans) and b.strategy == Code(max_tokens=40).spec
    check_boundaries(text, tok, b, max_tokens=40)


def test_class_split_by_members_in_java_and_rust(tokenizer):
    java = ("package a;\n\n/** A counter. */\npublic class Counter {\n    private int n;\n\n"
            "    /** Add one to the count and return the new count to the caller. */\n"
            "    @Override\n    public int inc() {\n        n = n + 1;\n        return n;\n    }\n\n"
            "    /** Reset the count to zero so that counting starts over again. */\n"
            "    public void reset() {\n        n = 0;\n    }\n}\n")
    _, b = _split("code:max_tokens=40,min_tokens=0", java, tokenizer, source="Counter.java")
    texts = _texts(java, b)
    assert ("Counter", "inc") in b.heading_paths and ("Counter", "reset") in b.heading_paths
    inc = texts[b.heading_paths.index(("Counter", "inc"))]
    assert inc.startswith("/** Add one") and "@Override" in inc
    rust = ("struct Point { x: i32, y: i32 }\n\nimpl Point {\n    /// The distance to the origin, squared.\n"
            "    fn norm2(&self) -> i32 {\n        self.x * self.x + self.y * self.y\n    }\n\n"
            "    /// The point moved by dx and dy, a new point.\n"
            "    fn shift(&self, dx: i32, dy: i32) -> Point {\n        Point { x: self.x + dx, y: self.y + dy }\n"
            "    }\n}\n")
    _, b = _split("code:max_tokens=40,min_tokens=0", rust, tokenizer, source="point.rs")
    assert ("impl Point", "norm2") in b.heading_paths and ("impl Point", "shift") in b.heading_paths


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("code:max_tokens=0", ["max_tokens"]),
        ("code:max_tokens=16,min_tokens=17", ["min_tokens", "max_tokens"]),
        ("code:language=cobol", ["language", "cobol", "python"]),
        ("code:min_tokens=x", ["min_tokens"]),
    ],
)
def test_bad_parameters_name_the_option(spec, words):
    with pytest.raises(ValueError) as err:
        get_strategy(spec)
    for word in words:
        assert word in str(err.value)


def test_default_min_tokens_never_exceeds_a_small_max_tokens():
    # the user set only max_tokens: the default min_tokens (24) follows it down, as semantic's does
    s = get_strategy("code:max_tokens=10")
    assert (s.max_tokens, s.min_tokens) == (10, 10)
    assert get_strategy(s.spec).min_tokens == 10
    assert get_strategy("code").min_tokens == 24
    with pytest.raises(ValueError, match="min_tokens=30"):  # a min_tokens the user gave is still checked
        get_strategy("code:max_tokens=10,min_tokens=30")


def test_registered_with_help_and_a_round_trip_spec():
    cls = registry()["code"]
    assert cls is Code and cls.bet
    s = get_strategy("code:chunk_size=100,language=rust")
    assert s.spec == "code:max_tokens=100,min_tokens=24,language=rust" and get_strategy(s.spec) == s
    res = runner.invoke(app, ["strategies"])
    assert res.exit_code == 0 and "code" in res.output and "min_tokens" in res.output


def test_code_files_are_inputs(tmp_path):
    for suffix, (text, _) in TWO_FUNCTIONS.items():
        (tmp_path / f"calc{suffix}").write_text(text, encoding="utf-8")
    docs = {d.doc_id: d for d in iter_inputs([tmp_path])}
    assert set(docs) == {f"calc{s}" for s in TWO_FUNCTIONS}
    assert all(d.text == TWO_FUNCTIONS[d.doc_id[4:]][0] for d in docs.values())


CODE_FRAGMENTS = ["def f(x):\n", "    return x\n", "class A:\n", "    def m(self):\n", "        pass\n", "@dec\n",
                  "# note\n", "\n", "\n\n", "import os\n", "x = [1, 2,\n", "]\n", '"""doc"""\n', "    ", "😀", "é",
                  "func F() {\n", "}\n", "fn g() -> i32 { 1 }\n", "function h() {\n", "const k = () => 1;\n",
                  "public class C {\n", "/** c */\n", "\r\n", "\t", "((((", "'unterminated\n"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.one_of(st.sampled_from(CODE_FRAGMENTS), st.text(max_size=6)), max_size=40),
       max_tokens=st.integers(1, 40), min_tokens=st.integers(0, 40),
       language=st.sampled_from(["python", "javascript", "typescript", "tsx", "go", "rust", "java", ""]))
def test_invariants_on_random_code(tokenizer, parts, max_tokens, min_tokens, language):
    text = "".join(parts)
    spec = f"code:max_tokens={max_tokens},min_tokens={min(min_tokens, max_tokens)},language={language}"
    doc = Document("r.txt", text, {"source": "r.txt"})
    tok = tokenizer(doc)
    b = get_strategy(spec).split(doc, tok)
    check_boundaries(text, tok, b, max_tokens=max_tokens)
