"""Triton kernels, each beside its torch reference with the same signature (``reference.py``).

The repository's ``kernels/`` folder, installed as ``latechunk.kernels`` (see setup.py). A leaf: nothing here
imports ``latechunk``, so the kernels and references can be read, tested and copied alone; the dispatcher that
picks the kernel or the reference is :func:`latechunk.pooling.segment_mean`.
"""

if __name__ == "kernels":  # pragma: no cover - exercised by tests/test_packaging.py in a subprocess
    # Imported by the top-level name ``kernels``: the repository root is on sys.path (``python -m pytest`` or
    # ``python -c`` run from a checkout), so this folder shadows Hugging Face's ``kernels`` package, which
    # transformers >= 5.25 imports with every model (``transformers.integrations.hub_kernels``). Hand the name to
    # that package when it is installed elsewhere on sys.path; this folder is only ever used as latechunk.kernels.
    import importlib.machinery as _machinery
    import importlib.util as _util
    import os as _os
    import sys as _sys

    def _checkout(path):  # a latechunk checkout's root: its kernels/ is this folder again, not Hugging Face's
        path = _os.path.abspath(path or _os.curdir)
        return _os.path.isfile(_os.path.join(path, "kernels", "reference.py")) and _os.path.isdir(
            _os.path.join(path, "latechunk"))

    _root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    # other checkouts too (one on PYTHONPATH, one the working folder): each would hand the name to the other
    _elsewhere = [p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _root and not _checkout(p)]
    _spec = _machinery.PathFinder.find_spec("kernels", _elsewhere)
    if _spec is not None and _spec.loader is not None:
        _module = _util.module_from_spec(_spec)
        _sys.modules["kernels"] = _module  # the import statement returns what sys.modules holds after this runs
        try:
            _spec.loader.exec_module(_module)
        except BaseException:
            _sys.modules.pop("kernels", None)
            raise
