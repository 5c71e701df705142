# config: rules for this directory (included by the top-level Makefile.am)

# Documentation shipped in the tarball (README.md is installed as doc data).
EXTRA_DIST += \
	docs/api.md \
	docs/free-interception.md \
	docs/h200-copylat.txt \
	docs/h200-nvrm-run.txt \
	docs/nvrm.md \
	docs/performance.md \
	docs/semantics.md
