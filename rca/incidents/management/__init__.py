"""Management commands of the incidents app."""
