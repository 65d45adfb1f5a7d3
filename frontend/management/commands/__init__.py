"""`manage.py` commands of the pages app."""
