"""Management commands of the graph store."""
