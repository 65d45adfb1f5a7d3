"""The investigation engine: seeding, the gated loop, the conclusion and the result document."""
