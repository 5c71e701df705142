# tests/nvrm: rules for this directory (included by the top-level Makefile.am)
