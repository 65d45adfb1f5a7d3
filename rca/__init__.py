"""Rootline: the Django project and its domain packages."""
