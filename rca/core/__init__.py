"""Rootline's pure reasoning-safety core (no I/O, no Django, no clock reads)."""
