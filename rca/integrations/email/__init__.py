"""E-mail: notifications through Django's e-mail backend."""
