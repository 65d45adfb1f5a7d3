"""Management commands of the evaluation app."""
