"""`manage.py` commands of the incidents app: cases, examples, tokens, replay."""
