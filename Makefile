# Convenience targets; each calls a script that can also be run directly.
.PHONY: test bench fuzz image

test:
	scripts/test

# The side-by-side comparison with peer limiters; see docs/performance.md.
bench:
	bench/run

# Every fuzz target for FUZZTIME each (default 30s).
fuzz:
	scripts/fuzz

# The container image of deploy/Containerfile, built with podman (or docker
# where podman does not run) and tagged IMAGE; the engine and the base image
# are checked before admit is compiled. See docs/deploy.md.
IMAGE ?= admit:dev
image:
	deploy/build-image $(IMAGE)
