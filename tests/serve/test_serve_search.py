"""latechunk/serve's POST /v1/search over ``--index``: the hits equal what ``latechunk search --json`` prints (chunk
ids, spans, scores), with ``where`` and ``expand``; bad searches are 400s."""

from __future__ import annotations

import json

import pytest
from models import minilm_encoder
from serve_helpers import RIVERS, post, served
from typer.testing import CliRunner

from latechunk.cli import app

runner = CliRunner()
BREAD = """---
lang: fr
---
# Bread

Sourdough bread rises because wild yeast and lactic acid bacteria ferment the dough for many hours. A starter
is fed with flour and water every day.
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    src = tmp_path_factory.mktemp("corpus")
    (src / "rivers.md").write_text(RIVERS, encoding="utf-8")
    (src / "bread.md").write_text(BREAD, encoding="utf-8")
    out = tmp_path_factory.mktemp("idx") / "out"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "-q", "--device", "cpu", "--sentence-workers", "0",
                              "--strategy", "heading:max_tokens=64", "--metadata-fields", "lang"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def server(index):
    with served(minilm_encoder(), index=str(index)) as (url, _):
        yield url


def _cli(index, *args) -> list[dict]:
    res = runner.invoke(app, ["search", str(index), *args, "--json", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize(("body", "args"), [
    ({"query": "bridges over the Danube", "k": 3}, ["bridges over the Danube", "-k", "3"]),
    ({"query": "glaciers", "k": 2, "expand": "section"}, ["glaciers", "-k", "2", "--expand", "section"]),
    ({"query": "yeast", "where": {"lang": "fr"}}, ["yeast", "--where", "lang=fr"]),
    ({"query": "yeast", "where": ["doc_id=rivers.md"], "expand": "neighbors:1"},
     ["yeast", "--where", "doc_id=rivers.md", "--expand", "neighbors:1"]),
])
def test_search_equals_cli_search_json(server, index, body, args):
    resp = post(server, "/v1/search", body)
    assert resp.status_code == 200, resp.text
    got, want = resp.json(), _cli(index, *args)
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        assert g["score"] == pytest.approx(w["score"], abs=1e-5)
        assert {k: v for k, v in g.items() if k != "score"} == {k: v for k, v in w.items() if k != "score"}
    if "expand" not in body:
        assert all(h["chunk_id"] for h in got)


@pytest.mark.parametrize(("body", "words"), [
    ({"query": ""}, "query"),
    ({"query": "x", "k": 0}, "k"),
    ({"query": "x", "where": {"nosuchfield": "a"}}, "nosuchfield"),
    ({"query": "x", "where": ["no-equals-sign"]}, "="),
    ({"query": "x", "expand": "paragraph"}, "expand"),
    ({"query": "x", "nprobe": 4}, "nprobe"),
])
def test_bad_search_is_400(server, body, words):
    resp = post(server, "/v1/search", body)
    assert resp.status_code == 400, resp.text
    assert words in resp.json()["error"]["message"]


def test_query_tokens_count_against_the_limit(index):
    with served(minilm_encoder(), index=str(index), max_request_tokens=50) as (url, _):
        assert post(url, "/v1/search", {"query": "rivers of Europe", "k": 1}).status_code == 200
        resp = post(url, "/v1/search", {"query": "river " * 200, "k": 1})
        assert resp.status_code == 413, resp.text[:300]
        msg = resp.json()["error"]["message"]
        assert "the query has 202 tokens" in msg and "limit of 50 tokens" in msg, msg
