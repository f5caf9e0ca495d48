"""Two diagnostics of the chunks themselves, added to a result's manifest before ``results.json`` is written
(:func:`add_diagnostics`, from the result's pipeline runs): parse alarms per strategy
(:func:`latechunk.alarms.parse_alarms`) and the boundary agreement of every strategy pair
(:func:`latechunk.agree.agreement_report`); :func:`print_alarms` prints the alarms for the terminal.
"""

from __future__ import annotations

from ..plots import short_spec


def add_diagnostics(result) -> None:
    """Add parse alarms per strategy and the boundary agreement of every strategy pair to ``result.manifest``
    (``alarms``: ``{spec: [Alarm.to_dict()]}``; ``agreement``: :func:`latechunk.agree.agreement_report`'s counts,
    without the per-document lists, plus ``window``), computed from the chunks of the first macro window's pass.
    A result without its pipeline runs (:func:`load_result`) or that has both already is left as it is.

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult`.
    """
    from latechunk.agree import agreement_report
    from latechunk.alarms import alarms_unchecked, parse_alarms, source_type

    man = result.manifest
    if not result.embeds or ("alarms" in man and "agreement" in man):
        return
    first = ((man["windows"][0]["window"], man["windows"][0]["overlap"]) if man.get("windows")
             else next(iter(result.embeds)))
    res = result.embeds.get(first) or next(iter(result.embeds.values()))
    specs = list(dict.fromkeys(s.strategy for s in result.systems))
    alarms = {}
    for spec in specs:
        rows = [(d.doc_id, source_type(d.doc_id, str(d.metadata.get("source", ""))), int(t.n_content), len(b))
                for d, t, b in zip(res.documents, res.tokenizations, res.run(spec).boundaries)
                if t.n_content >= 1 and len(b) >= 1]
        alarms[spec] = [a.to_dict() for a in parse_alarms(rows)]
        unchecked = alarms_unchecked(rows)
        if unchecked:
            man.setdefault("alarms_unchecked", {})[spec] = unchecked
    man["alarms"] = alarms
    if len(specs) >= 2:
        try:
            rep = agreement_report({spec: res.run(spec).boundaries for spec in specs}, [d.text for d in res.documents])
        except ValueError as err:
            man["agreement"] = {"error": str(err)}
            return
        for pair in rep["pairs"]:
            pair.pop("documents", None)
        man["agreement"] = {**rep, "window": first[0] if isinstance(first, tuple) else first}


def print_alarms(result, file=None) -> None:
    """Print each parse alarm of the result on stderr as plain text (``strategy: message``).

    Args:
        result: A :class:`~latechunk.eval.result.CompareResult` (after :func:`add_diagnostics`).
        file: Where to write; None: ``sys.stderr``.
    """
    import sys

    for spec, found in (result.manifest.get("alarms") or {}).items():
        for a in found:
            print(f"{short_spec(spec)}: {a['message']}", file=file or sys.stderr)
