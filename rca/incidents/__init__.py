"""Incidents: the relational source of truth (models), the intake service and the admin pages."""
