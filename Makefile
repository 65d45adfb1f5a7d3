# Shortcuts for the two commands in README.md.
.PHONY: run test
run:
	python3 dev.py run
test:
	python3 dev.py test
