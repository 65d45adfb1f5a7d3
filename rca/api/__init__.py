"""The REST API: DRF serializers, views, authentication, throttles and the OpenAPI schema."""
