"""The runner behind tests/docs/: every ```bash and ```python block of README.md and docs/**/*.md, run in order,
page by page, offline, on the bundled data (issue 40).

Each page runs in its own temporary folder, ``TMP/work`` (the current directory of every block), laid out so that
the commands run as written:

- ``my_docs/``: a copy of ``tests/data/docs_site`` (five markdown pages of a small app's documentation), the
  "your own folder" of the quickstarts;
- ``scripts/`` and ``tests/``: links to the repository's, so ``python3 scripts/...`` and ``tests/data/...`` work;
- ``../shared/data``: ``TMP/shared/data``, with XQuAD linked and, under ``chroma_chunking_eval/corpora``, **a
  subset** of Chroma's corpora (``chatlogs.md``, 40 KB of its 1.44 MB), so the
  README's first command embeds in seconds; ``$LATECHUNK_DATA`` points there.

Bash blocks run with ``bash -euo pipefail``; the Python blocks of a page share one namespace, in page order. The
explicit substitutions (:data:`SUBSTITUTIONS`), each for a reason:

- the README's set-up block: ``bash scripts/setup.sh && `` is dropped (the test environment is that set-up) and
  the test command itself is not run inside the tests (CI step 1, ``.ci/run``, runs it verbatim);
- ``--dataset chroma`` and ``--dataset xquad`` become the tiny datasets of ``tests/data/eval_mini/`` in the same
  formats (a Chroma folder, a SQuAD file), so ``compare`` and ``train`` run in seconds, not minutes;
- ``latechunk train`` gets ``--max-queries 16`` (its inverse-cloze or labelled queries cut to 16);
- a line that starts ``latechunk serve`` is not run in the block: the runner starts it in the background on a free
  loopback port (``--host 127.0.0.1 --port P`` added), waits for ``/health``, rewrites ``http://127.0.0.1:8000``
  in the page's later blocks to that port, and stops the server at the end of the page.

Blocks of any other language (``text``, ``toml``, ``json``, ``mermaid``) are shown, not run; a page uses them for
what cannot run here (a GPU, a cluster, a package index), and :data:`SHOWN_LANGUAGES` lists the allowed ones.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EVAL_MINI = ROOT / "tests" / "data" / "eval_mini"
#: the languages whose blocks are run, and those only shown
RUN_LANGUAGES = ("bash", "python")
SHOWN_LANGUAGES = ("text", "toml", "json", "mermaid", "yaml")
#: the Chroma corpus the README's first command embeds here (the smallest, 40 KB of the 1.44 MB)
CORPUS_SUBSET = ("chatlogs.md",)
SERVER_URL = "http://127.0.0.1:8000"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                    re.MULTILINE | re.DOTALL)

#: (exact text, replacement, why): applied to a bash block before it runs
SUBSTITUTIONS: tuple[tuple[str, str, str], ...] = (
    ("bash scripts/setup.sh && python3 -m pytest -q", ": the test command, run verbatim by CI step 1",
     "the suite does not run itself"),
    ("bash scripts/setup.sh && ", "", "the test environment is the set-up"),
    ("--dataset chroma", f"--dataset {EVAL_MINI / 'chroma'}", "a tiny Chroma-format folder instead of 472 questions"),
    ("--dataset xquad", f"--dataset {EVAL_MINI / 'squad_mini.json'}", "a tiny SQuAD file instead of 1,190 questions"),
    ("latechunk train ", "latechunk train --max-queries 16 ", "16 training queries: seconds, not minutes"),
)


@dataclass
class Block:
    """One fenced code block of a page: its language, its text and its line in the page (1-based)."""

    lang: str
    code: str
    line: int


@dataclass
class PageRun:
    """What running a page left: its working folder and the namespace its Python blocks shared."""

    work: Path
    namespace: dict = field(default_factory=dict)


def pages() -> list[Path]:
    """README.md and every markdown page under docs/, in a fixed order."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order (indented ones dedented)."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        indent = len(m.group("indent"))
        code = "".join(line[indent:] for line in m.group("body").splitlines(keepends=True))
        found.append(Block(m.group("lang"), code, text.count("\n", 0, m.start()) + 1))
    return found


def substitute(code: str) -> str:
    """``code`` with :data:`SUBSTITUTIONS` applied."""
    for old, new, _why in SUBSTITUTIONS:
        code = code.replace(old, new)
    return code


def prepare(tmp: Path) -> Path:
    """Lay out ``tmp`` as the module docstring says and return the working folder ``tmp/work``."""
    from latechunk.eval.datasets import data_root

    real = Path(data_root())
    data = tmp / "shared" / "data"
    corpora = data / "chroma_chunking_eval" / "corpora"
    corpora.mkdir(parents=True)
    for name in CORPUS_SUBSET:
        shutil.copyfile(real / "chroma_chunking_eval" / "corpora" / name, corpora / name)
    (data / "xquad_en").symlink_to(real / "xquad_en")
    work = tmp / "work"
    work.mkdir()
    shutil.copytree(ROOT / "tests" / "data" / "docs_site", work / "my_docs")
    (work / "scripts").symlink_to(ROOT / "scripts")
    (work / "tests").symlink_to(ROOT / "tests")
    return work


def environment(tmp: Path) -> dict[str, str]:
    """The environment of every block: offline, this interpreter's scripts first on PATH, the data subset."""
    env = dict(os.environ)
    env.update({"LATECHUNK_DATA": str(tmp / "shared" / "data"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "COLUMNS": "120", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"})
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``latechunk serve`` command line of a page, started in the background on a free loopback port."""

    def __init__(self, line: str, work: Path, env: dict[str, str]):
        import shlex

        args = shlex.split(line.split("#", 1)[0])
        for flag in ("--port", "--host"):  # the runner chooses these
            while flag in args:
                i = args.index(flag)
                del args[i:i + 2]
        self.port = _free_port()
        self.log = work / f"serve-{self.port}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([*args, "--host", "127.0.0.1", "--port", str(self.port)], cwd=work, env=env,
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"`{line}` exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise AssertionError(f"`{line}` did not answer /health in 180 s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 30 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def has_data() -> bool:
    """Whether the bundled data (``../shared/data`` or ``$LATECHUNK_DATA``) is here (Chroma's corpora and XQuAD)."""
    from latechunk.eval.datasets import data_root

    root = Path(data_root())
    return (root / "chroma_chunking_eval" / "corpora").is_dir() and (root / "xquad_en").is_dir()


def serve_available() -> bool:
    """Whether this checkout's CLI has a ``serve`` command."""
    import typer

    from latechunk.cli import app

    return "serve" in typer.main.get_command(app).commands


def needs_server(page: Path) -> bool:
    """Whether a bash block of ``page`` starts ``latechunk serve``."""
    return any(b.lang == "bash" and re.search(r"^latechunk serve\b", b.code, re.MULTILINE) for b in blocks(page))


def _run_bash(code: str, where: str, work: Path, env: dict[str, str]) -> None:
    if not code.strip():
        return
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], check=False, cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, (f"{where} exited with {proc.returncode}:\n{code}\n"
                                  f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")


def run_page(page: Path, tmp: Path) -> PageRun:
    """Run every bash and Python block of ``page`` in order in a prepared ``tmp``; fail naming the block.

    Returns:
        The working folder and the namespace the page's Python blocks shared.
    """
    work = prepare(tmp)
    env = environment(tmp)
    run = PageRun(work)
    servers: list[Server] = []
    url = SERVER_URL
    old_cwd = os.getcwd()
    rel = page.relative_to(ROOT) if page.is_relative_to(ROOT) else Path(page.name)
    try:
        for block in blocks(page):
            where = f"{rel}:{block.line} ({block.lang})"
            if block.lang == "bash":
                segment: list[str] = []
                for line in substitute(block.code).replace(SERVER_URL, url).splitlines():
                    if re.match(r"latechunk serve\b", line):
                        _run_bash("\n".join(segment), where, work, env)
                        segment = []
                        servers.append(Server(line, work, env))
                        url = f"http://127.0.0.1:{servers[-1].port}"
                    else:
                        segment.append(line)
                _run_bash("\n".join(segment), where, work, env)
            elif block.lang == "python":
                os.chdir(work)
                code = block.code.replace(SERVER_URL, url)
                exec(compile(code, f"{rel}:{block.line}", "exec"), run.namespace)  # noqa: S102 (our own pages)
    finally:
        os.chdir(old_cwd)
        for server in servers:
            server.stop()
    return run
