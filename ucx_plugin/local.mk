# ucx_plugin: rules for this directory (included by the top-level Makefile.am)
EXTRA_DIST += ucx_plugin/README.md
