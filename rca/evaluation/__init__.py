"""Evaluation of the engine against ground truth: the only code that reads it."""
