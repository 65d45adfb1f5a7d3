"""`manage.py` commands of the evaluation app: evaluate and inject."""
