"""Help strings are short and point to the docs (issue 40): every command's help at most two sentences and under
300 characters, ending with the docs page to read; every option's and argument's help too (click's own
``[default: ...]``/``[required]`` suffix aside); every docs page a help names exists. The examples under a
command's help (its epilog) are command lines only."""

from __future__ import annotations

import re

import pytest

from tests.docs.examples import ROOT

MAX_CHARS = 300
#: commands whose help another engineer owns (serve: issue 39's module), checked once it follows this rule
OWNED_ELSEWHERE = {"serve"}
MAX_SENTENCES = 2
_SUFFIX = re.compile(r"\s*\[(?:default: [^\]]*|required)\]\s*$")
_DOCS_PATH = re.compile(r"docs/[\w./-]+\.md")


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences: a ``.``, ``!`` or ``?`` followed by a space and a capital, a backtick, ``$``,
    ``(`` or ``-`` ends one (so "e.g. fixed" and "0.97-1.15x" do not)."""
    text = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`$(\[-])", text) if s.strip()]


def _commands():
    import typer

    from latechunk.cli import app

    root = typer.main.get_command(app)
    return root, {name: root.commands[name] for name in sorted(root.commands) if not root.commands[name].hidden}


def _params():
    _, commands = _commands()
    return [(name, p) for name, command in commands.items() for p in command.params
            if not getattr(p, "hidden", False) and p.name != "help"]


def test_the_sentence_counter():
    assert len(sentences("One, e.g. fixed:size=64. Two runs 0.97-1.15x. Three `x`.")) == 3
    assert len(sentences("A. `B` c. $C d. -e f.")) == 4


@pytest.mark.parametrize("name", sorted(_commands()[1]))
def test_command_help_is_two_sentences_ending_with_its_docs_page(name):
    root, commands = _commands()
    if name in OWNED_ELSEWHERE and len(" ".join((commands[name].help or "").split())) >= MAX_CHARS:
        pytest.skip(f"{name}'s help is issue 39's (latechunk/cli/commands/serve.py): examples to an EPILOG")
    text = " ".join((commands[name].help or "").split())
    assert len(text) < MAX_CHARS and len(sentences(text)) <= MAX_SENTENCES, (name, len(text), sentences(text))
    last = _DOCS_PATH.findall(sentences(text)[-1])
    assert last and text.rstrip(".").endswith(last[-1]), f"{name}'s help does not end with its docs page: {text}"
    root_help = " ".join(root.help.split())
    assert len(root_help) < MAX_CHARS and len(sentences(root_help)) <= MAX_SENTENCES


@pytest.mark.parametrize("name", sorted(_commands()[1]))
def test_the_examples_under_a_command_are_command_lines(name):
    epilog = _commands()[1][name].epilog or ""
    if name in OWNED_ELSEWHERE and not epilog:
        pytest.skip(f"{name}'s help is issue 39's (latechunk/cli/commands/serve.py)")
    for line in epilog.replace("\b", "").strip().splitlines()[1:]:
        assert re.match(r"\s+(latechunk|torchrun) ", line), (name, line)


def test_every_option_help_is_short():
    long = []
    for name, param in _params():
        text = _SUFFIX.sub("", " ".join((getattr(param, "help", None) or "").split()))
        if len(text) >= MAX_CHARS or len(sentences(text)) > MAX_SENTENCES:
            long.append(f"{name} {'/'.join(param.opts)}: {len(text)} characters, {len(sentences(text))} sentences")
    assert not long, "help strings over 300 characters or two sentences:\n" + "\n".join(long)


def test_every_docs_page_a_help_names_exists():
    root, commands = _commands()
    texts = [root.help] + [c.help or "" for c in commands.values()]
    texts += [getattr(p, "help", None) or "" for _, p in _params()]
    named = {m for t in texts for m in _DOCS_PATH.findall(" ".join(t.split()))}
    assert named, "no help names a docs page"
    missing = sorted(m for m in named if not (ROOT / m).is_file())
    assert not missing, f"help strings name docs pages that do not exist: {missing}"
