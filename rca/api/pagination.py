"""Page-number pagination for every list: `?page=` and `?page_size=` (at most 200)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """50 per page by default; clients may ask for up to 200."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
