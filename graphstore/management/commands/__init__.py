"""`manage.py` commands of the graph store."""
