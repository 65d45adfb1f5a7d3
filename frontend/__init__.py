"""Django app for Rootline's pages: views, templates, static files and Plotly figure builders."""
