# Convenience targets; each calls a script that can also be run directly.
.PHONY: test

test:
	scripts/test
