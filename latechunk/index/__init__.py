"""FAISS: chunk vectors to an index whose vector id i is row i of the chunk table, from a faiss ``index_factory``
string (:class:`~latechunk.config.IndexConfig`; ``flat`` and ``hnsw`` are aliases of ``Flat`` and ``HNSW{M}``).

Every index compares by inner product (``faiss.METRIC_INNER_PRODUCT``). Vectors are normalised once, in the
pipeline (the manifest records ``normalize``); nothing here normalises, so an index holds exactly the vectors it
was given, and queries are normalised by the encoder the same way at search time. A flat index is an
``IndexFlatIP`` (the same bytes as ``faiss.IndexFlatIP(d)``).

Index types that need training (``IVF...``, ``PQ...``, ``SQ8``) are trained before any vector is added: on all
vectors with :func:`build_index`, by :func:`add_batches` on the first batches up to :data:`TRAIN_MAX_ROWS` rows,
and by :func:`build_batched` (what assembly uses) on a **seeded uniform sample** of all rows
(:func:`train_sample_size` rows: ``min(n, max(TRAIN_MIN_ROWS, TRAIN_PER_LIST * nlist), SAMPLE_MAX_ROWS)``, drawn
without replacement by ``numpy.random.default_rng(seed)``; faiss's k-means warns below 39 points per centroid
and uses at most 256, and a ``PQ`` sub-quantizer's 256 centroids use at most 65,536 points).

**Indexes larger than RAM** (:func:`build_batched` with ``ivfdata``): an IVF index (any factory string whose index
faiss's ``extract_index_ivf`` finds: ``IVF4096,Flat``, ``IVF65536,PQ64``, ``IVF1024,SQ8``, ``OPQ16,IVF1024,PQ16``)
is trained on the sample, then each batch (shard) is added to its own copy of the trained empty index with its
global row numbers as ids, written to a part file, and the parts' inverted lists are merged on disk with faiss
contrib's ``merge_ondisk`` into an ``.ivfdata`` file beside ``index.faiss`` (``OnDiskInvertedLists``, memory-mapped
when searched; Jégou et al., "Product quantization for nearest neighbor search", TPAMI 2011, for IVF/PQ; the
faiss wiki's "Indexes that do not fit in RAM"). Only the training sample and one shard are ever in memory. Other
factory strings (``Flat``, ``HNSW32``, ``PQ32``, ...) are built in memory: their size is the index's own.
When a corpus has fewer than ``39 * nlist`` vectors, ``nlist`` is lowered to ``max(1, n // 39)`` (:func:`fit_nlist`,
recorded in the manifest as ``nlist`` and ``built``). An IVF index is searched with ``nprobe`` lists
(:data:`DEFAULT_NPROBE`, stored in the index file, or ``search_index(..., nprobe=)``).

**Compact vectors** (:attr:`IndexConfig.precision <latechunk.config.IndexConfig.precision>`,
:attr:`~latechunk.config.IndexConfig.truncate_dim`), with the semantics of sentence-transformers'
``quantize_embeddings`` (``sentence_transformers.util.quantization``): the shards keep float32 full vectors; only
the index is compact. ``truncate_dim`` keeps the first N dimensions (Matryoshka representation learning, Kusupati
et al., arXiv:2205.13147) and renormalises when the run normalises, for indexed and query vectors alike
(:func:`query_transform`). ``float16`` is faiss's ``SQfp16``; ``int8`` is faiss's ``SQ8``, whose per-dimension
min/max ranges are trained on the corpus (the codes are ``quantize_embeddings(x, "uint8",
calibration_embeddings=corpus)``'s, up to float rounding at a bucket edge) and which scores the float query
against the decoded codes (no query quantisation); ``ubinary`` packs ``x > 0`` into bits (``np.packbits``) in a
faiss ``IndexBinaryFlat``: :func:`search_index` fetches ``RESCORE_MULTIPLIER * k`` candidates by Hamming distance
and rescores them with the float query against the ±1 codes, as ``semantic_search_faiss(..., rescore=True)`` does
(Yamada et al., "Efficient Passage Retrieval with Hashing for Open-domain QA", arXiv:2106.00882; Shakir, Aarsen &
Lee, "Binary and Scalar Embedding Quantization", Hugging Face blog, 2024).

FAISS: Johnson, Douze & Jégou, "Billion-scale similarity search with GPUs" (https://github.com/facebookresearch/faiss);
index factory strings: https://github.com/facebookresearch/faiss/wiki/The-index-factory.

Tests: ``tests/test_index.py``.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from latechunk.config import RESCORE_MULTIPLIER, IndexConfig
from latechunk.io import quiet_c_stdout

__all__ = [
    "DEFAULT_NPROBE",
    "MIN_POINTS_PER_LIST",
    "RESCORE_MULTIPLIER",
    "SAMPLE_MAX_ROWS",
    "TRAIN_MAX_ROWS",
    "TRAIN_MIN_ROWS",
    "TRAIN_PER_LIST",
    "TRAIN_SEED",
    "BuildFacts",
    "IndexConfig",
    "add_batches",
    "IndexTrainingError",
    "check_factory",
    "add_vectors",
    "as_float32_rows",
    "build_batched",
    "build_index",
    "check_ivf_rows",
    "check_nprobe",
    "check_rows",
    "faiss_gpu_available",
    "fit_nlist",
    "has_exact_codes",
    "index_bytes",
    "is_binary_index",
    "ivf_of",
    "new_index",
    "query_problem",
    "query_transform",
    "search_index",
    "self_search",
    "set_ondisk_name",
    "train_sample_size",
]

#: rows a trained index type (IVF, PQ) is trained on by :func:`add_batches` (the first batches, in order)
TRAIN_MAX_ROWS = 1 << 17
#: :func:`build_batched`: the training sample has at least this many rows (or all of them): 65,536 = 256 points
#: for each of a PQ sub-quantizer's 256 centroids, faiss's own cap
TRAIN_MIN_ROWS = 1 << 16
#: :func:`build_batched`: sample rows per IVF list (faiss's k-means warns below 39 and uses at most 256)
TRAIN_PER_LIST = 64
#: :func:`build_batched`: the sample's cap in rows (1,048,576: 1.6 GB of float32 at 384 dimensions); an
#: ``IVF65536`` gets 16 points per list at this cap, so train it with ``train_rows`` given
SAMPLE_MAX_ROWS = 1 << 20
#: the seed of the training sample (``numpy.random.default_rng``), recorded in the manifest
TRAIN_SEED = 0
#: fewer training vectors per list than this and :func:`fit_nlist` lowers ``nlist`` (faiss's k-means minimum)
MIN_POINTS_PER_LIST = 39
#: IVF lists probed per query by default (stored in index.faiss at assembly; at most ``nlist``)
DEFAULT_NPROBE = 16


def faiss_gpu_available() -> bool:
    """Whether the installed faiss has GPU support and sees a GPU.

    Returns:
        True when ``faiss.StandardGpuResources`` exists and ``faiss.get_num_gpus() > 0``.
    """
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def as_float32_rows(x) -> np.ndarray:
    """A C-contiguous float32 copy of ``x`` (any float dtype, any strides); never mutates the caller's array.

    faiss takes only C-contiguous float32 (faiss issue #666), so every vector goes through here first.

    Args:
        x: (n, dim) array-like of any float dtype (float16, float32, float64), any layout; or a torch tensor.

    Returns:
        (n, dim) float32, C-contiguous, a new array.

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
    return arr


def is_binary_index(index) -> bool:
    """Whether ``index`` is a faiss ``IndexBinary`` (a ``ubinary`` index: packed bits, Hamming distance).

    Args:
        index: A faiss index.

    Returns:
        True for an ``IndexBinary``.
    """
    import faiss

    return isinstance(index, faiss.IndexBinary)


def query_transform(xq, config: IndexConfig) -> np.ndarray:
    """Vectors as the index of ``config`` holds them, before quantisation: the first ``config.truncate_dim``
    dimensions, L2-normalised again when ``config.renormalize`` (the run normalises); unchanged without
    ``truncate_dim``. Apply it to every query before :func:`search_index` (the indexed vectors got it too).

    Args:
        xq: (n, dim) any float dtype/layout (copied), ``dim`` the model's vector dimension.
        config: The index settings (e.g. ``IndexConfig.from_dict(manifest["index"])``).

    Returns:
        (n, truncate_dim or dim) float32, C-contiguous, a new array; a zero row stays zero.

    Raises:
        ValueError: if ``xq`` is not 2-D or holds NaN/inf, or ``truncate_dim`` exceeds its dimension.
    """
    q = as_float32_rows(xq)
    if config.truncate_dim is None:
        return q
    if config.truncate_dim > q.shape[1]:
        raise ValueError(f"--truncate-dim {config.truncate_dim} exceeds the vectors' dimension {q.shape[1]}")
    q = np.ascontiguousarray(q[:, : config.truncate_dim])
    if config.renormalize:
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        q /= np.where(norms > 0, norms, 1.0)
    return q


def _encode_rows(x, config: IndexConfig) -> np.ndarray:
    """What :func:`add_vectors` adds: the transformed float32 rows, or their packed bits for ``ubinary``."""
    q = query_transform(x, config)
    return np.packbits(q > 0, axis=-1) if config.is_binary else q


def new_index(config: IndexConfig, dim: int):
    """An empty CPU FAISS index of ``config.faiss_factory`` over inner products (a binary flat index, Hamming
    distance, for ``ubinary``).

    HNSW indexes get ``efConstruction = config.ef_construction`` and ``efSearch = config.ef_search``.

    Args:
        config: The index settings.
        dim: The input vectors' dimension (the model's), ``>= 1``; the index holds
            ``config.index_dim(dim)`` dimensions (``truncate_dim`` when set).

    Returns:
        A ``faiss.Index`` (a ``faiss.IndexBinaryFlat`` of ``dim`` bits for ``ubinary``) with ``ntotal == 0``
        (``is_trained`` False for types that need training, e.g. ``SQ8``); vector id i will be the i-th row
        added.

    Raises:
        ValueError: on a factory string faiss does not know, ``dim < 1``, a ``truncate_dim`` above ``dim``, a
            ``ubinary`` dimension that is not a multiple of 8, or ``config.gpu == "on"`` without GPU FAISS.
    """
    import faiss

    if dim < 1:
        raise ValueError(f"cannot build an index: vector dimension must be >= 1, got {dim}")
    if config.gpu == "on" and not faiss_gpu_available():
        raise ValueError("gpu='on' but this faiss has no GPU support or sees no GPU (pip install latechunk[gpu])")
    d = config.index_dim(int(dim))
    if config.is_binary:
        return faiss.IndexBinaryFlat(d)
    try:
        index = faiss.index_factory(d, config.faiss_factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise ValueError(f"--index {config.factory!r}: faiss cannot build this index_factory string for inner-product "
                         f"search at dimension {d} (an unknown string, or an index without inner product such as LSH; e.g. "
                         f"Flat, HNSW32, IVF1024,Flat; see the faiss wiki 'The index factory'): "
                         f"{_faiss_message(err)}") from err
    ivf = ivf_of(index)
    if ivf is not None and hasattr(faiss.downcast_index(ivf), "do_polysemous_training"):
        # index_factory turns polysemous training on for IVF..,PQ: a simulated annealing that only serves a Hamming
        # pre-filter (polysemous_ht) latechunk never uses, and triples training time; inner products are the same
        faiss.downcast_index(ivf).do_polysemous_training = False
    hnsw = getattr(index, "hnsw", None)  # faiss's Python layer returns the concrete class (IndexHNSWFlat, ...)
    if hnsw is not None:
        hnsw.efConstruction = config.ef_construction
        hnsw.efSearch = config.ef_search
    return index


def _faiss_message(err: Exception) -> str:
    """The reason in a faiss C++ error, without its ``Error in <function> at <file>:<line>:`` prefix."""
    text = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    return re.sub(r"^Error in .*? at \S+:\d+: (Error: )?", "", text)


def product_quantizer_of(index):
    """The ``faiss.ProductQuantizer`` of a PQ index (``PQ``, ``IVF...,PQ``, ``HNSW..,PQ``, fast-scan, under a
    pre-transform such as ``OPQ``), or None for any other index.

    Args:
        index: A faiss index.

    Returns:
        The product quantizer (``M`` sub-quantizers of ``ksub = 2**nbits`` centroids each) or None.
    """
    import faiss

    seen = 0
    while index is not None and seen < 8:  # wrappers: IndexPreTransform.index, IndexHNSW.storage
        index = faiss.downcast_index(index)
        if hasattr(index, "pq"):
            return index.pq
        index = getattr(index, "index", None) or getattr(index, "storage", None)
        seen += 1
    return None


def pq_training_warning(index, rows: int, factory: str) -> str | None:
    """A warning when a PQ index's codebooks are trained on fewer vectors than faiss's k-means asks for
    (:data:`MIN_POINTS_PER_LIST` per centroid: ``39 * 2**nbits``, 9,984 for the default 8 bits), else None.
    faiss then only prints its own "WARNING clustering ..." line, and recall can drop well below a Flat index's.

    Args:
        index: The untrained faiss index.
        rows: Training vectors it gets.
        factory: The factory string (for the message).
    """
    pq = product_quantizer_of(index)
    if pq is None:
        return None
    need = MIN_POINTS_PER_LIST * int(pq.ksub)
    if rows >= need:
        return None
    return (f"index {factory!r}: its product quantizer ({pq.M} codebooks of {pq.ksub} centroids) is trained on "
            f"{rows:,} vectors, fewer than the {need:,} faiss's k-means asks for; recall can fall well below a "
            "Flat index's. For a corpus this small use Flat, HNSW32 or SQ8 (or fewer bits: PQ<m>x4)")


class IndexTrainingError(ValueError):
    """An index type that cannot be trained on the vectors there are (too few for its quantizers, or none)."""


def _train(index, xt: np.ndarray, factory: str) -> None:
    if xt.shape[0] == 0:
        raise IndexTrainingError(f"index {factory!r} needs training, but there are no vectors to train it on")
    message = pq_training_warning(index, int(xt.shape[0]), factory)
    if message:
        import warnings

        warnings.warn(message, UserWarning, stacklevel=3)
        product_quantizer_of(index).cp.min_points_per_centroid = 1  # only silences faiss's own line per codebook
    try:
        index.train(xt)
    except RuntimeError as err:
        raise IndexTrainingError(f"cannot train index {factory!r} on {xt.shape[0]} vectors: "
                         f"{_faiss_message(err)} (each quantizer of the index needs at least as many training "
                         "vectors as it has centroids: IVF<n> needs n, PQ<m>x<b> 2**b (256 for the default 8 bits), "
                         "PCA<d> more vectors than d; for a small corpus use Flat or HNSW32)") from err


def _use_gpu(config: IndexConfig) -> bool:
    if config.precision != "float32":  # compact indexes are built on the CPU
        return False
    return config.gpu == "on" or (config.gpu == "auto" and config.factory == "Flat" and faiss_gpu_available())


def build_index(vectors, config: IndexConfig | None = None, dim: int | None = None):
    """Build a FAISS index over ``vectors`` (added as given, never normalised here, except that ``truncate_dim``
    truncates and renormalises as :func:`query_transform`); vector id i is row i.

    Args:
        vectors: (n, dim) any float dtype/layout (copied, never mutated). ``n`` may be 0 (then give ``dim``).
        config: Index settings (default ``Flat``, float32). A type that needs training (``IVF``, ``SQ8`` of
            ``int8``) is trained on all ``vectors``.
        dim: Vector dimension when ``vectors`` is empty.

    Returns:
        A CPU ``faiss.Index`` (built on the GPU when ``config.gpu`` allows and one is present, then copied back),
        or a ``faiss.IndexBinaryFlat`` for ``ubinary``.

    Raises:
        ValueError: on an unknown factory string, an unknown dimension, training that fails, a bad
            ``truncate_dim``, or ``config.gpu == "on"`` without GPU FAISS.
    """
    import faiss

    config = config or IndexConfig()
    xb = as_float32_rows(vectors) if np.size(vectors) else None
    d = int(xb.shape[1]) if xb is not None else int(dim or (np.shape(vectors)[1] if np.ndim(vectors) == 2 else 0))
    if d <= 0:
        raise ValueError("cannot build an index: vector dimension unknown (no vectors and no dim)")
    index = new_index(config, d)
    if xb is None:
        return index
    xb = _encode_rows(xb, config)
    if not index.is_trained:
        _train(index, xb, config.faiss_factory)
    if _use_gpu(config):
        res = faiss.StandardGpuResources()
        gpu_index = faiss.index_cpu_to_gpu(res, 0, index)
        gpu_index.add(xb)
        return faiss.index_gpu_to_cpu(gpu_index)
    index.add(xb)
    return index


def add_batches(config: IndexConfig, dim: int, batches: Callable[[], Iterable[np.ndarray]],
                train_max_rows: int = TRAIN_MAX_ROWS):
    """Build a CPU index from vectors that arrive in batches (one shard at a time), in order.

    A type that needs training is trained first on the first batches, up to ``train_max_rows`` rows (so
    ``batches`` is called twice then); then every batch is added in order (:func:`add_vectors`). Nothing is
    normalised, except by ``truncate_dim`` (:func:`query_transform`).

    Args:
        config: Index settings.
        dim: Vector dimension.
        batches: Returns a fresh iterable of (rows_i, dim) float arrays (e.g. memory-mapped shard vectors);
            row j of the index is row j of the concatenated batches.
        train_max_rows: Training sample cap (rows).

    Returns:
        The CPU ``faiss.Index``; with no vectors at all, an empty one (untrained for a type that needs training,
        as :func:`build_index` gives it).

    Raises:
        ValueError: as :func:`new_index`, or when training fails.
    """
    index = new_index(config, dim)
    if not index.is_trained:
        parts, n = [], 0
        for v in batches():
            if n >= train_max_rows:
                break
            take = _encode_rows(np.asarray(v[: train_max_rows - n]), config)
            parts.append(take)
            n += take.shape[0]
        if n == 0:  # no vectors at all (0 documents embedded): an empty, untrained index, as build_index gives
            return index
        _train(index, np.concatenate(parts), config.faiss_factory)
    for v in batches():
        if len(v):
            add_vectors(index, v, config)
    return index


def check_factory(config: IndexConfig, dim: int) -> None:
    """Refuse, before anything is encoded, a factory string that faiss knows but latechunk cannot build.

    latechunk numbers vectors by chunk-table row itself (``add_with_ids`` for IVF parts, ``add`` otherwise) and
    searches by inner product, so these are refused: an IVF with fewer than 1 inverted list (``IVF0``), an ID map
    (``IDMap``/``IDMap2``: ids are the row numbers already) and a refine wrapper (``...,RFlat``/``Refine(...)``:
    use ``--precision`` with rescoring instead) and an NSG graph (``NSG32``: faiss builds it in one ``add`` and
    refuses later ones, while latechunk adds shard by shard), besides what :func:`new_index` refuses (unknown strings, indexes
    without inner product such as ``LSH``).

    Args:
        config: The run's index settings.
        dim: The model's embedding dimension (before ``truncate_dim``).

    Raises:
        ValueError: naming ``--index`` and the reason.
    """
    import faiss

    if config.is_binary:
        return
    index = new_index(config, dim)
    kind = type(index).__name__
    if "IDMap" in kind:
        raise ValueError(f"--index {config.factory!r}: an ID map is not needed (vector id i is row i of "
                         "chunks.parquet already); use the index inside it, e.g. 'Flat'")
    if "Refine" in kind:
        raise ValueError(f"--index {config.factory!r}: refine wrappers (RFlat, Refine(...)) are not supported; "
                         "use the base index with --precision (compact codes are rescored with float vectors)")
    inner = faiss.downcast_index(index.index) if "PreTransform" in kind else index
    if "NSG" in type(inner).__name__:
        # faiss builds an NSG graph in one add() of at least 100 vectors and refuses any later add, while latechunk
        # adds one shard at a time (and --append, Index.add add later)
        raise ValueError(f"--index {config.factory!r}: an NSG graph cannot be added to once built (faiss builds it "
                         "in one add of at least 100 vectors; latechunk adds one shard at a time and --append adds "
                         "later); use HNSW32, the graph index that grows")
    for m in re.findall(r"HNSW(\d+)", config.factory):
        if int(m) < 2:
            # faiss accepts HNSW0 and then aborts the process (an assertion in HNSW.cpp) while adding vectors
            raise ValueError(f"--index {config.factory!r}: HNSW needs at least 2 neighbours per node (HNSW<M>, "
                             "M >= 2, e.g. HNSW32)")
    ivf = ivf_of(index)
    if ivf is not None and faiss.downcast_index(ivf).nlist < 1:
        raise ValueError(f"--index {config.factory!r}: an IVF index needs at least 1 inverted list (IVF<nlist>, "
                         "e.g. IVF1024,Flat)")


def ivf_of(index):
    """The ``faiss.IndexIVF`` inside ``index`` (itself, or under a pre-transform such as ``OPQ``), or None.

    Args:
        index: A faiss index (or binary index).

    Returns:
        The IVF index (sharing ``index``'s memory), or None for a non-IVF index (Flat, HNSW, PQ, binary).
    """
    import faiss

    if is_binary_index(index):
        return None
    try:
        return faiss.extract_index_ivf(index)
    except (RuntimeError, AttributeError, TypeError):
        return None


def fit_nlist(config: IndexConfig, dim: int, n: int) -> tuple[IndexConfig, int | None, int | None]:
    """The config actually built for ``n`` vectors: an IVF factory whose ``nlist`` needs more training vectors
    than the corpus has (fewer than :data:`MIN_POINTS_PER_LIST` per list) gets ``nlist = max(1, n // 39)``
    (the first ``IVF{nlist}`` of the string rewritten); every other config is returned as is.

    Args:
        config: The index settings.
        dim: The input vectors' dimension.
        n: Vectors in the corpus.

    Returns:
        ``(config, requested nlist, built nlist)``; both None for a non-IVF factory.

    Raises:
        ValueError: as :func:`new_index`.
    """
    ivf = ivf_of(new_index(config, dim))
    if ivf is None:
        return config, None, None
    want = int(ivf.nlist)
    if n <= 0 or n >= MIN_POINTS_PER_LIST * want:
        return config, want, want
    got = max(1, n // MIN_POINTS_PER_LIST)
    factory, hits = re.subn(r"IVF\d+", f"IVF{got}", config.factory, count=1)
    if not hits:  # nlist not spelled IVF<n> (cannot happen for faiss's factory grammar): keep it, faiss decides
        return config, want, want
    return dataclasses.replace(config, factory=factory), want, got


def train_sample_size(n: int, nlist: int | None = None, cap: int = SAMPLE_MAX_ROWS) -> int:
    """Rows an index is trained on by :func:`build_batched`: ``min(n, max(TRAIN_MIN_ROWS, TRAIN_PER_LIST * nlist),
    cap)``.

    Args:
        n: Vectors in the corpus.
        nlist: IVF lists (None or 0 for a non-IVF index).
        cap: Upper bound in rows.

    Returns:
        The sample size in rows (0 when ``n`` is 0).
    """
    return int(min(n, max(TRAIN_MIN_ROWS, TRAIN_PER_LIST * int(nlist or 0)), cap))


def _sample_ids(sizes: Sequence[int], size: int, seed: int) -> list[np.ndarray]:
    """Per batch, the sorted local rows of a uniform sample (without replacement) of ``size`` global rows."""
    n = int(sum(sizes))
    rows = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)) if size < n else np.arange(n)
    bounds = np.cumsum([0, *sizes])
    return [rows[(rows >= a) & (rows < b)] - a for a, b in itertools.pairwise(bounds)]


@dataclasses.dataclass(frozen=True)
class BuildFacts:
    """How :func:`build_batched` built an index (recorded in the manifest's ``index`` record).

    Attributes:
        factory: The faiss factory string built (``config.faiss_factory`` after :func:`fit_nlist`).
        train_rows: Rows of the training sample (0 for an index that needs no training).
        train_seed: The sample's seed.
        nlist: IVF lists built (None for a non-IVF index); ``nlist_requested`` what the factory string asked.
        nprobe: The default ``nprobe`` stored in the index (None for a non-IVF index).
        ondisk: True when the inverted lists were merged on disk into the ``.ivfdata`` file.
    """

    factory: str
    train_rows: int = 0
    train_seed: int = TRAIN_SEED
    nlist: int | None = None
    nlist_requested: int | None = None
    nprobe: int | None = None
    ondisk: bool = False

    def to_dict(self) -> dict:
        """The manifest form: ``train`` (``rows``, ``seed``, ``sample``) when trained; ``nlist``, ``nprobe`` and
        ``ondisk`` for IVF; ``built`` (the faiss string) and ``nlist_requested`` when :func:`fit_nlist` changed
        ``nlist``.

        Returns:
            A JSON-ready dict.
        """
        d: dict = {}
        if self.train_rows:
            d["train"] = {"rows": self.train_rows, "seed": self.train_seed,
                          "sample": "uniform without replacement over all rows (numpy default_rng(seed))"}
        if self.nlist is not None:
            d.update(nlist=self.nlist, nprobe=self.nprobe, ondisk=self.ondisk)
            if self.nlist != self.nlist_requested:
                d.update(built=self.factory, nlist_requested=self.nlist_requested)
        return d


def build_batched(config: IndexConfig, dim: int, batches: Callable[[], Iterable[np.ndarray]], sizes: Sequence[int],
                  *, ivfdata: Path | None = None, work_dir: Path | None = None, seed: int = TRAIN_SEED,
                  train_rows: int | None = None, progress: Callable[[str], None] | None = None):
    """Build a CPU index from vectors that arrive in batches (one shard at a time), in order; row j of the index
    is row j of the concatenated batches. What assembly uses (see the module doc).

    A type that needs training is trained on a seeded uniform sample of all rows (:func:`train_sample_size`,
    read from the batches: ``batches`` is called twice then). An IVF index with ``ivfdata`` given is then filled
    on disk: each non-empty batch is added (ids = its global rows) to a copy of the trained empty index and
    written as a part file under ``work_dir``; ``faiss.contrib.ondisk.merge_ondisk`` merges the parts' inverted
    lists into ``ivfdata`` (the parts are deleted afterwards; disk holds both for a while). Peak memory: the
    training sample plus one batch (plus what faiss maps of the parts while merging). Any other index is filled
    in memory (:func:`add_vectors`). IVF lists are fitted to the corpus (:func:`fit_nlist`) and the index's
    ``nprobe`` set to ``min(DEFAULT_NPROBE, nlist)``.

    Args:
        config: Index settings.
        dim: The input vectors' dimension.
        batches: Returns a fresh iterable of (sizes[i], dim) float arrays (e.g. memory-mapped shard vectors).
        sizes: Rows of each batch, in order (all batches, empty ones included).
        ivfdata: Where the merged inverted lists go (e.g. ``DIR/index.ivfdata.tmp``; the index records this name,
            so read it back with ``faiss.IO_FLAG_ONDISK_SAME_DIR`` after renaming); None: an IVF index is built
            in memory.
        work_dir: A folder for the part files (created, then removed); default ``ivfdata`` + ``.parts``.
        seed: Seed of the training sample.
        train_rows: Sample size in rows; default :func:`train_sample_size`.
        progress: Called with a short message before each stage (train, add shard k/n, merge).

    Returns:
        ``(index, facts)``: the CPU ``faiss.Index`` (an empty, untrained one when there are no vectors, as
        :func:`build_index` gives it; then no ``ivfdata`` is written) and its :class:`BuildFacts`.

    Raises:
        ValueError: as :func:`new_index`, when training fails, or a batch's length differs from ``sizes``.
    """
    import faiss

    say = progress or (lambda msg: None)
    n = int(sum(sizes))
    given = config.faiss_factory
    config, want, nlist = fit_nlist(config, dim, n)
    # the name errors give: the string the user typed, and the one built when nlist was fitted to the vectors
    shown = config.faiss_factory if config.faiss_factory == given else f"{given} (built as {config.faiss_factory})"
    index = new_index(config, dim)
    ivf = ivf_of(index)
    facts = BuildFacts(factory=config.faiss_factory, train_seed=seed, nlist=nlist, nlist_requested=want,
                       nprobe=min(DEFAULT_NPROBE, nlist) if nlist else None)
    if n == 0:
        return index, facts
    if not index.is_trained:
        size = train_sample_size(n, nlist) if train_rows is None else int(min(n, train_rows))
        say(f"training {config.faiss_factory} on {size:,} of {n:,} vectors (seed {seed})")
        picks, parts = _sample_ids(sizes, size, seed), []
        for i, v in enumerate(batches()):
            if len(v) != sizes[i]:
                raise ValueError(f"batch {i} has {len(v)} rows but sizes says {sizes[i]}")
            if len(picks[i]):
                parts.append(_encode_rows(np.asarray(v[picks[i]]), config))
        xt = np.concatenate(parts)
        del parts
        _train(index, xt, shown)
        del xt
        facts = dataclasses.replace(facts, train_rows=size)
    if ivf is not None:
        ivf.nprobe = facts.nprobe
    if ivf is None or ivfdata is None:
        for i, v in enumerate(batches()):
            say(f"adding batch {i + 1}/{len(sizes)}")
            if len(v):
                add_vectors(index, v, config)
        return index, facts
    from faiss.contrib import ondisk

    ivfdata = Path(ivfdata)
    work = Path(work_dir) if work_dir is not None else ivfdata.with_name(ivfdata.name + ".parts")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        trained = faiss.serialize_index(index)
        names, offset = [], 0
        for i, v in enumerate(batches()):
            if len(v) != sizes[i]:
                raise ValueError(f"batch {i} has {len(v)} rows but sizes says {sizes[i]}")
            if not len(v):
                continue
            say(f"adding batch {i + 1}/{len(sizes)} to its part")
            part = faiss.deserialize_index(trained)  # a copy of the trained, empty index
            x = _encode_rows(v, config)
            part.add_with_ids(x, np.arange(offset, offset + len(x), dtype=np.int64))
            offset += len(x)
            names.append(str(work / f"{i:05d}.index"))
            faiss.write_index(part, names[-1])
            del part, x
        say(f"merging {len(names)} parts into {ivfdata.name}")
        if ivfdata.exists():
            ivfdata.unlink()
        with quiet_c_stdout():
            ondisk.merge_ondisk(index, names, str(ivfdata))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return index, dataclasses.replace(facts, ondisk=True)


def set_ondisk_name(index, name: str) -> None:
    """Record ``name`` as the ``.ivfdata`` file of an on-disk IVF index (before writing it; read it back with
    ``faiss.IO_FLAG_ONDISK_SAME_DIR``, which takes the file name from here and the folder from index.faiss's).

    Args:
        index: An index whose inverted lists are ``faiss.OnDiskInvertedLists`` (from :func:`build_batched`).
        name: The file name (e.g. ``index.ivfdata``).

    Raises:
        TypeError: if the index has no on-disk inverted lists.
    """
    import faiss

    ivf = ivf_of(index)
    lists = faiss.downcast_InvertedLists(ivf.invlists) if ivf is not None else None
    if not isinstance(lists, faiss.OnDiskInvertedLists):
        raise TypeError("not an index with on-disk inverted lists")
    lists.filename = name


def has_exact_codes(index) -> bool:
    """Whether an IVF index stores vectors well enough that a stored vector finds itself first (``Flat``,
    ``SQfp16``, ``SQ8`` codes; not ``PQ``, whose codes are a lossy product quantization).

    Args:
        index: A faiss index.

    Returns:
        True for ``IndexIVFFlat`` and ``IndexIVFScalarQuantizer``; False for other IVF codes and non-IVF indexes.
    """
    import faiss

    ivf = ivf_of(index)
    if ivf is None:
        return False
    ivf = faiss.downcast_index(ivf)
    return isinstance(ivf, (faiss.IndexIVFFlat, faiss.IndexIVFScalarQuantizer))


def add_vectors(index, vectors, config: IndexConfig) -> None:
    """Append vectors to an index built with ``config`` (vector ids continue from ``index.ntotal``): the one way
    rows enter an index, so an appended row is stored as a built one (``--append``, ``Index.add``).

    Args:
        index: A trained index of :func:`new_index`/:func:`build_index`/:func:`add_batches` (or read back from
            an output folder) of the same ``config``; an ``int8`` index keeps the ranges it was trained on
            (values outside them are clipped, as ``quantize_embeddings`` with given ranges does).
        vectors: (n, dim) any float dtype/layout (copied), ``dim`` the model's dimension; transformed by
            :func:`query_transform`, packed to bits for ``ubinary``.
        config: The index settings.

    Raises:
        ValueError: on vectors that are not 2-D, hold NaN/inf, or whose dimension does not fit the index, or an
            index that is not trained.
    """
    x = _encode_rows(vectors, config)
    if not len(x):
        return
    if not index.is_trained:
        raise ValueError(f"cannot add vectors to an untrained {config.faiss_factory!r} index (train it first)")
    width = x.shape[1] * (8 if config.is_binary else 1)
    if width != index.d:
        raise ValueError(f"vectors of dimension {x.shape[1]} (after --truncate-dim) do not fit an index of "
                         f"dimension {index.d}")
    try:
        index.add(x)
    except RuntimeError as err:  # what faiss refuses at add time (check_factory refuses the known cases earlier)
        raise ValueError(f"cannot add {len(x):,} vectors to the {config.faiss_factory!r} index: "
                         f"{_faiss_message(err)}") from err


def search_index(index, xq, k: int, rescore_multiplier: int = RESCORE_MULTIPLIER, nprobe: int | None = None,
                 allowed: np.ndarray | None = None):
    """Search ``index`` with query vectors (as given: normalise them as the indexed vectors were, and apply
    :func:`query_transform` of the index's config).

    A float index (flat, HNSW, IVF, scalar-quantised) scores inner products with the float query (faiss decodes
    ``SQfp16``/``SQ8`` codes on the fly). A binary (``ubinary``) index is searched for
    ``rescore_multiplier * k`` candidates by Hamming distance of the packed signs (``np.packbits(xq > 0)``); each
    candidate is then scored as ``xq · s / sqrt(dim)`` with ``s`` its unpacked ±1 code (the cosine of a
    unit-norm query and the code), and the best ``k`` are kept: sentence-transformers'
    ``semantic_search_faiss(..., rescore=True)``, whose score ``xq · b`` with ``b`` in {0, 1} differs from this by
    a per-query affine map, so the ranking is the same.

    Args:
        index: A FAISS index (from :func:`build_index` or :meth:`OutputFolder.read_index
            <latechunk.output.OutputFolder.read_index>`).
        xq: (n_queries, dim), any float dtype/layout (copied); ``dim == index.d``.
        k: Results per query (clipped to ``index.ntotal``).
        rescore_multiplier: Binary indexes: candidates fetched per result before rescoring (>= 1).
        nprobe: IVF indexes: inverted lists probed per query (clipped to ``nlist``; more: slower, closer to
            exact; ``nprobe == nlist`` is exact for ``IVF...,Flat``); None: the index's own (what assembly
            stored: ``min(DEFAULT_NPROBE, nlist)``). The index is not changed (faiss ``SearchParametersIVF``).
            An HNSW index is searched with a beam (``efSearch``) of at least ``k``: with a narrower one faiss
            returns fewer than ``k`` results (``-k 5000`` over 2,417 vectors gave 942 at ``efSearch`` 128).
        allowed: Only these vector ids may be returned (a metadata filter: :func:`latechunk.output.allowed_rows`);
            None: all. A float index is searched with a faiss ``IDSelectorBatch`` in its search parameters (an
            HNSW or IVF search that finds fewer than ``min(k, len(allowed))`` of them is done again exhaustively
            over the index's results); a binary index rescores exactly the allowed rows.

    Returns:
        ``(D, I)``: (n_queries, k') float32 scores (inner products; rescored cosines for a binary index) and
        int64 ids (row numbers of the chunk table), best first; ``k' = min(k, ntotal)``; an approximate index
        may return id ``-1`` where it found fewer.

    Raises:
        ValueError: if ``k < 1`` or ``rescore_multiplier < 1``, or ``xq`` is not 2-D, holds NaN/inf or has
            another dimension than the index (a query without :func:`query_transform`?), or ``nprobe`` is given
            for a non-IVF index or is below 1.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if rescore_multiplier < 1:
        raise ValueError(f"rescore_multiplier must be >= 1, got {rescore_multiplier}")
    q = as_float32_rows(xq)
    if q.shape[1] != index.d:
        raise ValueError(f"queries of dimension {q.shape[1]} do not fit an index of dimension {index.d} (apply "
                         "latechunk.index.query_transform with the index's config: --truncate-dim)")
    k_eff = min(k, index.ntotal)
    if allowed is not None:
        allowed = np.unique(np.asarray(allowed, dtype=np.int64))
        allowed = allowed[(allowed >= 0) & (allowed < index.ntotal)]
        k_eff = min(k_eff, len(allowed))
    if k_eff == 0:
        return np.zeros((q.shape[0], 0), np.float32), np.zeros((q.shape[0], 0), np.int64)
    if allowed is not None:
        return _search_allowed(index, q, k_eff, allowed, nprobe)
    params = _nprobe_params(index, nprobe)
    if not is_binary_index(index):
        params = params or _hnsw_params(index, k_eff)
        return index.search(q, k_eff) if params is None else index.search(q, k_eff, params=params)
    return _search_binary(index, q, k_eff, rescore_multiplier)


def _search_allowed(index, q: np.ndarray, k: int, allowed: np.ndarray, nprobe: int | None):
    """:func:`search_index` restricted to the ``allowed`` ids (sorted, unique, in range, ``k <= len(allowed)``)."""
    import faiss

    if is_binary_index(index):  # rescore every allowed row exactly (as _search_binary rescores its candidates)
        signs = np.unpackbits(_binary_codes(index, allowed), axis=-1)[:, : index.d].astype(np.float32) * 2.0 - 1.0
        scores = q @ signs.T / np.float32(np.sqrt(index.d))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, axis=1).astype(np.float32), allowed[order]
    _nprobe_params(index, nprobe)  # the same errors as an unfiltered search
    sel = faiss.IDSelectorBatch(allowed)  # held here while faiss searches: params.sel does not own it
    inner = faiss.downcast_index(index)
    wrapped = isinstance(inner, faiss.IndexPreTransform)
    if wrapped:
        inner = faiss.downcast_index(inner.index)
    ivf = ivf_of(index)
    if ivf is not None:
        params = faiss.SearchParametersIVF(nprobe=int(min(nprobe or ivf.nprobe, ivf.nlist)))
    elif isinstance(inner, faiss.IndexHNSW):
        params = faiss.SearchParametersHNSW()
        params.efSearch = int(max(inner.hnsw.efSearch, k))
    else:
        params = faiss.SearchParameters()
    params.sel = sel
    try:
        D, I = index.search(q, k, params=faiss.SearchParametersPreTransform(index_params=params) if wrapped else params)
        if not (I < 0).any():
            return D, I
    except RuntimeError:  # an index kind whose search takes no selector
        pass
    # exhaustive: every result of the index, the allowed ones kept (a narrow filter on a graph or few lists)
    D, I = search_index(index, q, int(index.ntotal), nprobe=None if ivf is None else int(ivf.nlist))
    keep = np.isin(I, allowed)
    out_d = np.full((q.shape[0], k), -np.inf, np.float32)
    out_i = np.full((q.shape[0], k), -1, np.int64)
    for r in range(q.shape[0]):
        d, i = D[r][keep[r]][:k], I[r][keep[r]][:k]
        out_d[r, : len(d)], out_i[r, : len(i)] = d, i
    return out_d, out_i


def query_problem(query: str) -> str:
    r"""What makes a search query unusable, for ``latechunk search`` and :meth:`latechunk.Index.search` alike;
    ``""`` for a good one.

    Args:
        query: The query as given (a command-line argument with bytes that are not UTF-8 arrives with them as
            ``\udc80``-``\udcff``, Python's ``surrogateescape``).

    Returns:
        ``"is empty"`` (whitespace or invisible marks such as U+200B only: nothing the model can read), ``"holds
        a byte that is not UTF-8 (\xff at character 3)"``, ``"holds a lone surrogate U+D800 at character 3 (not
        valid Unicode)"``, or ``""``.
    """
    from latechunk.front_matter import INVISIBLE_MARKS

    if not query.strip() or not "".join(query.split()).strip(INVISIBLE_MARKS):
        return "is empty"
    if query.isascii():
        return ""
    try:
        query.encode("utf-8")
        return ""
    except UnicodeEncodeError as err:
        c = ord(query[err.start])
        if 0xDC80 <= c <= 0xDCFF:
            return f"holds a byte that is not UTF-8 (\\x{c - 0xDC00:02x} at character {err.start})"
        return f"holds a lone surrogate U+{c:04X} at character {err.start} (not valid Unicode)"


def check_nprobe(index, nprobe: int | None) -> None:
    """Fail early (before a query model loads) on an ``nprobe`` that :func:`search_index` would refuse.

    Args:
        index: The index to be searched.
        nprobe: IVF lists per query, or None (the index's own).

    Raises:
        ValueError: if ``nprobe`` is below 1, not an integer, or given for a non-IVF index.
    """
    _nprobe_params(index, nprobe)


def _nprobe_params(index, nprobe: int | None):
    """The faiss search parameters setting ``nprobe`` (wrapped for a pre-transformed IVF index), or None."""
    import faiss

    if nprobe is None:
        return None
    if isinstance(nprobe, bool) or not isinstance(nprobe, (int, np.integer)) or nprobe < 1:
        raise ValueError(f"nprobe must be an integer >= 1, got {nprobe!r}")
    ivf = ivf_of(index)
    if ivf is None:
        kind = "a binary flat" if is_binary_index(index) else type(faiss.downcast_index(index)).__name__
        raise ValueError(f"--nprobe applies to IVF indexes (e.g. --index IVF1024,PQ32); this index is {kind}"
                         + (" (its search beam is --ef-search, set when it is built)" if "HNSW" in kind else ""))
    params = faiss.SearchParametersIVF(nprobe=int(min(nprobe, ivf.nlist)))
    if isinstance(faiss.downcast_index(index), faiss.IndexPreTransform):
        params = faiss.SearchParametersPreTransform(index_params=params)
    return params


def _hnsw_params(index, k: int):
    """The faiss search parameters widening an HNSW index's beam to ``k`` when its ``efSearch`` is narrower, else None
    (the index is not changed)."""
    import faiss

    inner = faiss.downcast_index(index)
    wrapped = isinstance(inner, faiss.IndexPreTransform)
    if wrapped:
        inner = faiss.downcast_index(inner.index)
    if not isinstance(inner, faiss.IndexHNSW) or inner.hnsw.efSearch >= k:
        return None
    params = faiss.SearchParametersHNSW()
    params.efSearch = int(k)
    return faiss.SearchParametersPreTransform(index_params=params) if wrapped else params


def _binary_codes(index, ids: np.ndarray) -> np.ndarray:
    """(len(ids), code_size) uint8 codes of a binary index's rows (a zero-copy view of a flat one's storage)."""
    import faiss

    if isinstance(index, faiss.IndexBinaryFlat):
        codes = faiss.rev_swig_ptr(index.xb.data(), index.ntotal * index.code_size).reshape(index.ntotal,
                                                                                           index.code_size)
        return codes[ids]
    return np.stack([index.reconstruct(int(i)) for i in ids.ravel()]).reshape(*ids.shape, index.code_size)


def _search_binary(index, q: np.ndarray, k: int, rescore_multiplier: int):
    n_cand = min(k * rescore_multiplier, index.ntotal)
    _, cand = index.search(np.packbits(q > 0, axis=-1), n_cand)
    cand = cand.astype(np.int64)
    valid = cand >= 0
    codes = _binary_codes(index, np.where(valid, cand, 0))  # (n, n_cand, code_size)
    signs = np.unpackbits(codes, axis=-1)[..., : index.d].astype(np.float32) * 2.0 - 1.0
    scores = np.einsum("id,icd->ic", q, signs) / np.float32(np.sqrt(index.d))
    scores = np.where(valid, scores, -np.inf)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    rows = np.arange(q.shape[0])[:, None]
    D = scores[rows, order].astype(np.float32)
    I = np.where(valid[rows, order], cand[rows, order], -1)
    return D, I


def index_bytes(index) -> int:
    """The size of ``index`` as written to a file (``faiss.serialize_index``, or ``serialize_index_binary``).

    Args:
        index: A faiss index or binary index.

    Returns:
        Bytes.
    """
    import faiss

    if is_binary_index(index):
        return int(faiss.serialize_index_binary(index).size)
    return int(faiss.serialize_index(index).size)


def check_rows(index, config: IndexConfig, vectors, offset: int) -> str | None:
    """Whether rows ``[offset, offset + n)`` of ``index`` hold ``vectors`` as ``config`` stores them (``verify``).

    float32: equal within 1e-5; float16: within 1e-3 relative (a half float's 11-bit mantissa); int8: within one
    quantisation step of the trained range per dimension (plus 1e-5); ubinary: the packed signs equal exactly.

    Args:
        index: The index (read back from ``index.faiss``).
        config: Its settings (``IndexConfig.from_dict(manifest["index"])``).
        vectors: (n, dim) float32 vectors of those rows (a shard's), the model's dimension.
        offset: Row of ``vectors[0]`` in the index.

    Returns:
        ``None`` when they agree or the index type cannot give its rows back; else a one-line description of the
        first difference. An IVF index is checked on a sample of the rows (:func:`check_ivf_rows`).
    """
    n = len(vectors)
    if n == 0:
        return None
    x = _encode_rows(vectors, config)
    if is_binary_index(index):
        got = _binary_codes(index, np.arange(offset, offset + n))
        bad = np.flatnonzero((got != x).any(axis=1))
        return None if not bad.size else f"binary codes of row {offset + int(bad[0])} differ from the vector's signs"
    if ivf_of(index) is not None:  # no direct map: a sample of rows, looked up in their inverted lists
        return check_ivf_rows(index, config, vectors, offset)
    try:
        got = index.reconstruct_n(offset, n)
    except RuntimeError:  # an index type that cannot reconstruct
        return None
    tol = _row_tolerance(index, x)
    if tol is None:  # lossy codes (PQ, pre-transforms): a row is not given back; ids hold by construction
        return None
    err = np.abs(got - x)
    bad = np.argwhere(err > tol)
    if not bad.size:
        return None
    r, c = (int(v) for v in bad[0])
    return (f"row {offset + r} dimension {c} holds {got[r, c]:.6g} but the vector gives {x[r, c]:.6g} "
            f"({config.label}, max abs diff {float(err.max()):.2e})")


#: rows of each shard :func:`check_ivf_rows` looks up (seeded by the shard's first row)
CHECK_ROWS_PER_BATCH = 32


def check_ivf_rows(index, config: IndexConfig, vectors, offset: int, sample: int = CHECK_ROWS_PER_BATCH) -> str | None:
    """Whether a seeded sample of rows ``[offset, offset + n)`` is stored in an IVF index as ``config`` stores
    ``vectors``: each sampled row's id is in the inverted list its vector is assigned to (the quantizer's nearest
    centroid, as ``add`` did), and the code stored there is the vector's code encoded again
    (``IndexIVF.encode_vectors``), byte for byte, after the index's pre-transforms (``OPQ``, ``PCA``). This holds
    for every code type, ``PQ`` included (encoding is deterministic); it proves id i = row i.

    Args:
        index: An IVF index (read back from ``index.faiss``; on disk or in memory).
        config: Its settings.
        vectors: (n, dim) float32 vectors of those rows (a shard's), the model's dimension.
        offset: Row of ``vectors[0]`` in the index.
        sample: Rows looked up (all when ``n`` is smaller); the sample is ``default_rng(offset)``'s.

    Returns:
        None when every sampled row agrees; else a one-line description of the first that does not.

    Raises:
        ValueError: if ``index`` is not an IVF index.
    """
    import faiss

    ivf = ivf_of(index)
    if ivf is None:
        raise ValueError("check_ivf_rows needs an IVF index")
    n = len(vectors)
    rows = np.sort(np.random.default_rng(offset).choice(n, size=min(n, sample), replace=False))
    x = _encode_rows(np.asarray(vectors[rows]), config)
    pre = faiss.downcast_index(index)
    if isinstance(pre, faiss.IndexPreTransform):  # OPQ, PCA, ...: the vectors as the IVF index sees them
        for i in range(pre.chain.size()):
            x = np.ascontiguousarray(pre.chain.at(i).apply(x), dtype=np.float32)
    _, lists = ivf.quantizer.search(x, 1)
    lists = lists[:, 0].astype(np.int64)
    codes = np.empty((len(x), ivf.code_size), np.uint8)
    ivf.encode_vectors(len(x), faiss.swig_ptr(x), faiss.swig_ptr(lists), faiss.swig_ptr(codes), False)
    inv = ivf.invlists
    for r, lst, code in zip(rows.tolist(), lists.tolist(), codes):
        row = offset + r
        size = inv.list_size(lst)
        ids = faiss.rev_swig_ptr(inv.get_ids(lst), size) if size else np.zeros(0, np.int64)
        where = np.flatnonzero(ids == row)
        if not where.size:
            return f"row {row} is not in inverted list {lst}, the list its vector is assigned to ({config.label})"
        stored = faiss.rev_swig_ptr(inv.get_codes(lst), size * ivf.code_size).reshape(size, ivf.code_size)
        if not np.array_equal(stored[where[0]], code):
            return (f"row {row}: the code stored in inverted list {lst} differs from its vector's code "
                    f"({config.faiss_factory})")
    return None


def self_search(index, vectors, ids, k: int = 10, nprobe: int | None = None) -> tuple[float, list[int]]:
    """Search the index with some of its own vectors: the rate at which each finds itself among the first
    ``k`` (a row counts as found when a tie explains its absence: the ``k``-th score is at least its own
    inner product minus 1e-4, i.e. duplicates).

    Args:
        index: A float index (not binary).
        vectors: (m, d) float32 vectors as the index holds them (after :func:`query_transform`).
        ids: (m,) their rows.
        k: Results per query.
        nprobe: IVF lists probed (None: the index's own).

    Returns:
        ``(rate, missed)``: the fraction found, in [0, 1] (1.0 for m = 0), and the rows not found.
    """
    ids = np.asarray(ids, np.int64)
    if not len(ids):
        return 1.0, []
    q = as_float32_rows(vectors)
    D, I = search_index(index, q, k, nprobe=nprobe)
    own = np.einsum("ij,ij->i", q, q)
    found = (I == ids[:, None]).any(axis=1) | ((D.shape[1] == k) & (D[:, -1] >= own - 1e-4))
    return float(found.mean()), ids[~found].tolist()


#: scalar-quantizer code types whose trained ranges give the code step: levels per range
_SQ_LEVELS = {"QT_8bit": 255, "QT_8bit_uniform": 255, "QT_6bit": 63, "QT_4bit": 15, "QT_4bit_uniform": 15}


def _row_tolerance(index, x: np.ndarray) -> np.ndarray | None:
    """How far a row given back by ``index.reconstruct_n`` may lie from the float32 row ``x`` it was made from,
    from the index's own storage (so that a factory string with its own codes, ``SQ8`` or ``HNSW32,SQ8`` under
    ``--precision float32``, is checked as ``--precision int8`` is): flat storage 1e-5; scalar-quantized storage
    one code step of its trained range per dimension (``vdiff / levels``; ``SQ8``, ``SQ6``, ``SQ4`` and their
    uniform forms) plus 1e-5, or a relative 1e-3 (``SQfp16``) or 1e-2 (``SQbf16``) of the value. An HNSW index's
    storage is its ``storage`` index. ``None`` for codes whose rows cannot be bounded so (``PQ``, pre-transforms,
    other quantizers): not checked.

    Args:
        index: A float faiss index.
        x: (n, d) float32 rows as added.

    Returns:
        (n, d) float32 tolerances, or None.
    """
    import faiss

    idx = faiss.downcast_index(index)
    if getattr(idx, "storage", None) is not None:  # IndexHNSW*: the vectors live in its storage index
        idx = faiss.downcast_index(idx.storage)
    flat = np.full(x.shape, 1e-5, np.float32)
    if isinstance(idx, faiss.IndexFlat):
        return flat
    sq = getattr(idx, "sq", None)
    if sq is None:
        return None
    qtype = next((n for n in dir(faiss.ScalarQuantizer) if n.startswith("QT_")
                  and getattr(faiss.ScalarQuantizer, n) == sq.qtype), "")
    if qtype == "QT_fp16":
        return 1e-3 * np.abs(x) + 1e-6
    if qtype == "QT_bf16":
        return 1e-2 * np.abs(x) + 1e-6
    if qtype not in _SQ_LEVELS:
        return None
    trained = faiss.vector_to_array(sq.trained)  # vmin then vdiff: per dimension, or one pair (uniform)
    d = x.shape[1]
    if trained.size == 2 * d:
        step = trained[d:]
    elif trained.size == 2:
        step = np.full(d, trained[1])
    else:
        return None
    return flat + (np.abs(step) / _SQ_LEVELS[qtype]).astype(np.float32)
