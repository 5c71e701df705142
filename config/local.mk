# config: rules for this directory (included by the top-level Makefile.am)

# The documentation (docs/*.md and the files they link) is installed and
# distributed by docs/local.mk.
