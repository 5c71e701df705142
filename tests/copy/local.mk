# tests/copy: the copy engine's suite.  It links the copy convenience
# libraries directly, not libgdrx, so it does not wait for the rest of the
# library.
check_PROGRAMS += tests/copy/test_copy
GDRX_SUITES    += tests/copy/test_copy
tests_copy_test_copy_SOURCES = \
	tests/copy/copy_tests.h \
	tests/copy/test_copy.c \
	tests/copy/copy_equal.c \
	tests/copy/copy_guard.c \
	tests/copy/copy_driver_check.c
if GDRX_ARCH_AARCH64
# choice and barriers of the aarch64 routines (the x86 files read CPUID
# words, single-step with the trap flag and follow x86 fences)
tests_copy_test_copy_SOURCES += tests/copy/copy_dispatch_arm.c
else
tests_copy_test_copy_SOURCES += \
	tests/copy/copy_once.c \
	tests/copy/copy_dispatch_test.c \
	tests/copy/copy_fence_check.c \
	tests/copy/fence_flow.h \
	tests/copy/fence_flow.c
endif
tests_copy_test_copy_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/libgdr/src/copy \
	-DGDRX_TEST_OBJDUMP='"$(OBJDUMP)"'
tests_copy_test_copy_CFLAGS = $(AM_CFLAGS) -pthread
tests_copy_test_copy_LDADD = $(GDRX_COPY_LIBS) $(GDRX_TEST_LIBS) $(DL_LIBS) -lpthread
