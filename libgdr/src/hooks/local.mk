# libgdr/src/hooks: rules for this directory (included by the top-level Makefile.am)
