"""GitHub: the change reader (commits, merged pull requests) and the repository writer (issues,
branches, commits, pull requests) of one repository."""
