"""Fixtures of the server tests: the bundled MiniLM encoder and a server on a free loopback port (one per test
module)."""

from __future__ import annotations

import pytest
from models import minilm_encoder
from serve_helpers import served


@pytest.fixture(scope="module")
def encoder():
    return minilm_encoder()


@pytest.fixture(scope="module")
def server(encoder):
    with served(encoder) as (url, app):
        yield url, app
