"""What the server tests share: the bundled MiniLM served on a free loopback port in a background thread (real
HTTP, :class:`latechunk.serve.ServerThread`), and a long markdown document."""

from __future__ import annotations

import contextlib
import dataclasses

import httpx

from latechunk.serve import ServeConfig, ServerThread, build_app

RIVERS = """# Rivers

The Danube flows through ten countries before it reaches the Black Sea. Its delta is a wetland of reeds, lakes and
channels where pelicans nest in spring, and fishermen still row between the islands at dawn.

## Bridges

Budapest has many bridges over the Danube; the Chain Bridge was the first permanent one, opened in 1849. Vienna
built its bridges later, after the river was straightened to stop the floods that came every spring.

## Cities

Belgrade stands where the Sava meets the Danube. Bratislava lies close to two borders, and Linz is known for steel
and music. Each city has a harbour, a promenade and a festival on the water in summer.

# Mountains

The Alps run from France to Slovenia. Their glaciers feed the Rhine, the Rhone and the Po, and their passes were
trade routes long before the railways. Mont Blanc is the highest summit, at 4,806 metres.

## Weather

Foehn winds warm the northern valleys in winter; storms build over the peaks on summer afternoons, so climbers
start before sunrise and come down by noon.
"""


@contextlib.contextmanager
def served(encoder, index=None, pipeline=None, **settings):
    """``(url, app)`` of a server over ``encoder`` on 127.0.0.1 and a free port, stopped on exit.

    Args:
        encoder: The Encoder.
        index: An output folder for /v1/search, or None.
        pipeline: A PipelineConfig for the late pass, or None.
        **settings: ServeConfig fields.
    """
    config = dataclasses.replace(ServeConfig(port=0), **settings)
    app = build_app(config=config, pipeline=pipeline, index=index, encoder=encoder)
    with ServerThread(app, config) as url:
        yield url, app


def post(url: str, path: str, body, headers: dict | None = None, timeout: float = 60.0) -> httpx.Response:
    """One POST (a JSON body, or bytes as they are)."""
    if isinstance(body, (bytes, bytearray)):
        return httpx.post(url + path, content=bytes(body), timeout=timeout,
                          headers={"content-type": "application/json", **(headers or {})})
    return httpx.post(url + path, json=body, headers=headers, timeout=timeout)
