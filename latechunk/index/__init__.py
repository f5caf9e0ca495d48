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

Tests: ``tests/index/test_index.py``.

The package, by concern: ``codes.py`` (float32 rows, compact codes, :func:`query_transform`, :func:`index_bytes`),
``build.py`` (an index in memory: :func:`new_index`, :func:`check_factory`, training, :func:`build_index`,
:func:`add_batches`, :func:`add_vectors`, :func:`ivf_of`, :func:`fit_nlist`), ``ondisk.py`` (assembly's
:func:`build_batched`: the seeded sample, IVF lists merged on disk), ``search.py`` (:func:`search_index`,
:func:`query_problem`, :func:`check_nprobe`) and ``checks.py`` (``verify``'s :func:`check_rows`,
:func:`check_ivf_rows`, :func:`self_search`). Every public name is importable from ``latechunk.index`` itself.
"""

from latechunk.config import RESCORE_MULTIPLIER, IndexConfig
from latechunk.index.build import (
    MIN_POINTS_PER_LIST,
    TRAIN_MAX_ROWS,
    IndexTrainingError,
    add_batches,
    add_vectors,
    build_index,
    check_factory,
    faiss_gpu_available,
    fit_nlist,
    has_exact_codes,
    ivf_of,
    new_index,
    pq_training_warning,
    product_quantizer_of,
)
from latechunk.index.checks import CHECK_ROWS_PER_BATCH, check_ivf_rows, check_rows, self_search
from latechunk.index.codes import as_float32_rows, index_bytes, is_binary_index, query_transform
from latechunk.index.ondisk import (
    DEFAULT_NPROBE,
    SAMPLE_MAX_ROWS,
    TRAIN_MIN_ROWS,
    TRAIN_PER_LIST,
    TRAIN_SEED,
    BuildFacts,
    build_batched,
    set_ondisk_name,
    train_sample_size,
)
from latechunk.index.search import check_nprobe, query_problem, search_index

__all__ = [
    "DEFAULT_NPROBE",
    "MIN_POINTS_PER_LIST",
    "RESCORE_MULTIPLIER",
    "SAMPLE_MAX_ROWS",
    "TRAIN_MAX_ROWS",
    "TRAIN_MIN_ROWS",
    "TRAIN_PER_LIST",
    "TRAIN_SEED",
    "CHECK_ROWS_PER_BATCH",
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
    "pq_training_warning",
    "product_quantizer_of",
    "query_problem",
    "query_transform",
    "search_index",
    "self_search",
    "set_ondisk_name",
    "train_sample_size",
]
