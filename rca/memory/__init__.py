"""Incident memory: past incidents embedded offline (ONNX MiniLM, no torch) and kept in Qdrant.

- `rca.memory.embedding`: the embedder (`embed(texts) -> (n, 384)` unit vectors).
- `rca.memory.documents`: `IncidentDocument` and `document_for(incident, investigation)`.
- `rca.memory.filters`: `SearchFilters`, what a search may be restricted to.
- `rca.memory.index`: the collection, `upsert` / `delete` / `index_incident`, `search(text, filters)`
  and `recall(text, symptom)` (priors for seeding, never evidence).
- `rca.memory.store`: the process-wide Qdrant client. Every failure to reach the store (or a missing
  model) raises `rca.memory.errors.MemoryUnavailable`: callers go on without memory and warn.
"""
