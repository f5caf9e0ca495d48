"""The checks every config shares: a failed one raises ``ValueError`` with its message."""

from __future__ import annotations


def _require(ok: bool, msg: str) -> None:
    if not ok:
        raise ValueError(msg)


def _positive_int(name: str, value, minimum: int = 1) -> None:
    _require(isinstance(value, int) and not isinstance(value, bool) and value >= minimum,
             f"{name} must be an integer >= {minimum}, got {value!r}")


def _known_keys(d, known, what: str) -> None:
    """Refuse a settings mapping with a key that is not among ``known`` (a misspelt setting would be ignored)."""
    _require(hasattr(d, "keys"), f"{what} must be a mapping of settings, got {d!r}")
    unknown = [k for k in d if k not in known]
    _require(not unknown, f"{what}: unknown setting(s) {', '.join(map(repr, unknown))}; the settings are "
             f"{', '.join(sorted(known))}")


def _field_dict(config) -> dict:
    """``{field name: value}`` of a dataclass instance, one level deep (nested configs kept as objects)."""
    import dataclasses

    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
