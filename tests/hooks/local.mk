# tests/hooks: the CUDA memory hooks (included from libgdr/src/hooks/local.mk).
HOOKS_TEST_LIB_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -avoid-version -no-undefined
