# Convenience targets; each calls a script that can also be run directly.
.PHONY: test bench fuzz

test:
	scripts/test

# The side-by-side comparison with peer limiters; see docs/performance.md.
bench:
	bench/run

# Every fuzz target for FUZZTIME each (default 30s).
fuzz:
	scripts/fuzz
