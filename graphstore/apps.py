"""The graph store app's configuration."""

from django.apps import AppConfig


class GraphstoreConfig(AppConfig):
    """Django app holding the graph management commands."""

    name = "graphstore"
    verbose_name = "Graph store"
