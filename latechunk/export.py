"""FAISS export: chunk vectors to an index whose vector id i is row i of the chunk metadata table.

Output folder layout (DESIGN.md): ``index.faiss``, ``chunks.parquet`` (row i = vector id i: doc_id, chunk_index,
char_start, char_end, token_start, token_end, text, heading_path, strategy) and ``manifest.json``.
FAISS: Johnson, Douze & Jégou, "Billion-scale similarity search with GPUs" (https://github.com/facebookresearch/faiss).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.types import Boundaries, Document

__all__ = [
    "IndexSpec",
    "as_float32_rows",
    "build_index",
    "new_index",
    "chunk_table",
    "write_output",
    "load_output",
    "search_index",
    "faiss_gpu_available",
]

CHUNK_COLUMNS = (
    "doc_id",
    "chunk_index",
    "char_start",
    "char_end",
    "token_start",
    "token_end",
    "text",
    "heading_path",
    "strategy",
)


@dataclass(frozen=True)
class IndexSpec:
    """FAISS index settings (recorded in the manifest).

    Attributes:
        kind: ``"flat"`` (exact inner product, default) or ``"hnsw"``.
        metric: ``"cosine"`` (inner product on L2-normalised vectors) or ``"ip"``.
        hnsw_m: HNSW graph degree M.
        ef_construction / ef_search: HNSW build and search beam widths.
        gpu: ``"auto"`` (GPU FAISS when present, flat only), ``"on"`` or ``"off"``.

    Raises:
        ValueError: on unknown kinds, metrics or non-positive HNSW parameters.
    """

    kind: str = "flat"
    metric: str = "cosine"
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    gpu: str = "auto"

    def __post_init__(self) -> None:
        if self.kind not in ("flat", "hnsw"):
            raise ValueError(f"index kind must be 'flat' or 'hnsw', got {self.kind!r}")
        if self.metric not in ("cosine", "ip"):
            raise ValueError(f"metric must be 'cosine' or 'ip', got {self.metric!r}")
        if min(self.hnsw_m, self.ef_construction, self.ef_search) < 1:
            raise ValueError("hnsw_m, ef_construction and ef_search must be >= 1")
        if self.gpu not in ("auto", "on", "off"):
            raise ValueError(f"gpu must be auto, on or off, got {self.gpu!r}")

    def to_dict(self) -> dict:
        """The manifest form: ``kind`` and ``metric``, plus the HNSW parameters for ``kind="hnsw"``."""
        d = {"kind": self.kind, "metric": self.metric}
        if self.kind == "hnsw":
            d.update(hnsw_m=self.hnsw_m, ef_construction=self.ef_construction, ef_search=self.ef_search)
        return d


def faiss_gpu_available() -> bool:
    """True when the installed faiss has GPU support and sees a GPU."""
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def as_float32_rows(x, normalize: bool) -> np.ndarray:
    """A C-contiguous float32 copy of ``x`` (any float dtype, any strides), optionally L2-normalised.

    Never mutates the caller's array (faiss issue #666: faiss takes only C-contiguous float32 and normalises
    in place).

    Args:
        x: (n, dim) array-like of any float dtype (float16, float32, float64), any layout; or a torch tensor.
        normalize: Divide each row by ``max(||row||_2, 1e-12)``.

    Returns:
        (n, dim) float32, C-contiguous, owned by the caller of this function.

    Raises:
        ValueError: if ``x`` is not 2-D or holds NaN/inf.
    """
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    arr = np.array(x, dtype=np.float32, order="C", copy=True)
    if arr.ndim != 2:
        raise ValueError(f"vectors must be 2-D (n, dim), got shape {arr.shape}")
    if arr.size and not np.isfinite(arr).all():
        raise ValueError("vectors contain NaN or inf")
    if normalize and arr.size:
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        np.divide(arr, np.maximum(norms, 1e-12), out=arr)
    return arr


def new_index(spec: IndexSpec, dim: int):
    """An empty CPU FAISS index of ``spec.kind`` over inner products (``IndexFlatIP`` or ``IndexHNSWFlat``).

    Args:
        spec: Index settings (``kind`` and the HNSW parameters are used here).
        dim: Vector dimension, ``>= 1``.

    Returns:
        A ``faiss.Index`` with ``ntotal == 0``; vector id i will be the i-th row added.

    Raises:
        ValueError: if ``spec.gpu == "on"`` and no GPU FAISS is available.
    """
    import faiss

    if spec.gpu == "on" and not faiss_gpu_available():
        raise ValueError("gpu='on' but this faiss has no GPU support or sees no GPU (pip install latechunk[gpu])")
    if spec.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, spec.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = spec.ef_construction
        index.hnsw.efSearch = spec.ef_search
        return index
    return faiss.IndexFlatIP(dim)


def build_index(vectors, spec: IndexSpec | None = None, dim: int | None = None):
    """Build a FAISS index over ``vectors``; vector id i is row i.

    Args:
        vectors: (n, dim) any float dtype/layout (copied, never mutated). ``n`` may be 0 (then give ``dim``).
        spec: Index settings (default flat inner product, cosine).
        dim: Vector dimension when ``vectors`` is empty.

    Returns:
        A CPU ``faiss.Index`` (built on the GPU when ``spec.gpu`` allows and one is present, then copied back).

    Raises:
        ValueError: if ``spec.gpu == "on"`` and no GPU FAISS is available, or the dimension is unknown.
    """
    import faiss

    spec = spec or IndexSpec()
    xb = as_float32_rows(vectors, normalize=spec.metric == "cosine") if np.size(vectors) else None
    d = int(xb.shape[1]) if xb is not None else int(dim or (np.shape(vectors)[1] if np.ndim(vectors) == 2 else 0))
    if d <= 0:
        raise ValueError("cannot build an index: vector dimension unknown (no vectors and no dim)")
    index = new_index(spec, d)
    use_gpu = spec.gpu == "on" or (spec.gpu == "auto" and spec.kind == "flat" and faiss_gpu_available())
    if use_gpu and xb is not None:
        res = faiss.StandardGpuResources()
        gpu_index = faiss.index_cpu_to_gpu(res, 0, index)
        gpu_index.add(xb)
        return faiss.index_gpu_to_cpu(gpu_index)
    if xb is not None:
        index.add(xb)
    return index


def chunk_table(documents: Sequence[Document], boundaries: Sequence[Boundaries], strategy: str):
    """The chunk metadata table, row i = vector id i.

    Args:
        documents: The embedded documents, in order.
        boundaries: Their Boundaries (same order).
        strategy: The strategy spec, stored per row.

    Returns:
        A ``pyarrow.Table`` with columns ``CHUNK_COLUMNS`` (int32 offsets in characters/tokens,
        ``heading_path`` a list of strings).

    Raises:
        ValueError: if a document is paired with the boundaries of another document.
    """
    import pyarrow as pa

    cols: dict[str, list] = {c: [] for c in CHUNK_COLUMNS}
    for doc, b in zip(documents, boundaries):
        if doc.doc_id != b.doc_id:
            raise ValueError(f"document {doc.doc_id!r} paired with boundaries of {b.doc_id!r}")
        n = len(b)
        cols["doc_id"].extend([doc.doc_id] * n)
        cols["chunk_index"].extend(range(n))
        cols["char_start"].extend(b.char_spans[:, 0].tolist())
        cols["char_end"].extend(b.char_spans[:, 1].tolist())
        cols["token_start"].extend(b.token_spans[:, 0].tolist())
        cols["token_end"].extend(b.token_spans[:, 1].tolist())
        cols["text"].extend(b.texts(doc.text))
        cols["heading_path"].extend([list(p) for p in b.heading_paths])
        cols["strategy"].extend([strategy] * n)
    schema = pa.schema(
        [
            ("doc_id", pa.string()),
            ("chunk_index", pa.int32()),
            ("char_start", pa.int32()),
            ("char_end", pa.int32()),
            ("token_start", pa.int32()),
            ("token_end", pa.int32()),
            ("text", pa.string()),
            ("heading_path", pa.list_(pa.string())),
            ("strategy", pa.string()),
        ]
    )
    return pa.table(cols, schema=schema)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_output(out_dir: str | os.PathLike, index, table, manifest: dict) -> None:
    """Write ``index.faiss``, ``chunks.parquet`` and ``manifest.json`` (each to a temp name, then renamed).

    Raises:
        ValueError: if ``index.ntotal`` differs from the table's row count.
    """
    import faiss
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if index.ntotal != table.num_rows:
        raise ValueError(f"index has {index.ntotal} vectors but the chunk table has {table.num_rows} rows")
    tmp_index = out / "index.faiss.tmp"
    faiss.write_index(index, str(tmp_index))
    os.replace(tmp_index, out / "index.faiss")
    tmp_table = out / "chunks.parquet.tmp"
    pq.write_table(table, tmp_table)
    os.replace(tmp_table, out / "chunks.parquet")
    _atomic_write_bytes(out / "manifest.json", (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())


def load_output(out_dir: str | os.PathLike):
    """Read an output folder.

    Returns:
        ``(index, table, manifest)``.

    Raises:
        ValueError: if a file is missing, or the index and table disagree on the row count.
    """
    import faiss
    import pyarrow.parquet as pq

    out = Path(out_dir)
    for name in ("index.faiss", "chunks.parquet", "manifest.json"):
        if not (out / name).is_file():
            raise ValueError(f"{out}: {name} is missing (not a latechunk output folder? run `latechunk embed` first)")
    try:
        index = faiss.read_index(str(out / "index.faiss"))
    except RuntimeError as err:
        raise ValueError(f"{out / 'index.faiss'} is unreadable (truncated or not a FAISS index); "
                         f"run `latechunk verify {out}`") from err
    table = pq.read_table(out / "chunks.parquet")
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{out / 'manifest.json'} is not valid JSON: {err}") from err
    if index.ntotal != table.num_rows:
        raise ValueError(f"{out}: index has {index.ntotal} vectors but chunks.parquet has {table.num_rows} rows")
    return index, table, manifest


def search_index(index, xq, k: int, metric: str = "cosine"):
    """Search ``index`` with query vectors.

    Args:
        index: A FAISS index (e.g. from :func:`build_index` or :func:`load_output`).
        xq: (n_queries, dim), any float dtype/layout (copied).
        k: Results per query (clipped to ``index.ntotal``).
        metric: ``"cosine"`` L2-normalises the queries first; ``"ip"`` searches them as given.

    Returns:
        ``(D, I)``: (n_queries, k') float32 inner products and int64 ids (row numbers of the chunk table), best
        first; ``k' = min(k, ntotal)``.

    Raises:
        ValueError: if ``k < 1``, or ``xq`` is not 2-D or holds NaN/inf.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    q = as_float32_rows(xq, normalize=metric == "cosine")
    k_eff = min(k, index.ntotal)
    if k_eff == 0:
        return np.zeros((q.shape[0], 0), np.float32), np.zeros((q.shape[0], 0), np.int64)
    return index.search(q, k_eff)
