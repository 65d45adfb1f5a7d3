"""Management commands of the pages app."""
