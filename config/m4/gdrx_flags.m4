dnl gdrx_flags.m4 - warnings, debug and sanitizer flags.

AC_DEFUN([GDRX_ARG_DEBUG_AND_SANITIZERS], [
    AC_ARG_ENABLE([debug],
        [AS_HELP_STRING([--enable-debug], [build with -O0 -g3 and debug logging])],
        [], [enable_debug=no])
    AC_ARG_ENABLE([sanitizers],
        [AS_HELP_STRING([--enable-sanitizers@<:@=LIST@:>@],
            [build with sanitizers: "address,undefined" (the default for
             plain --enable-sanitizers) or "thread"])],
        [], [enable_sanitizers=no])
    AS_CASE([$enable_sanitizers],
        [yes], [gdrx_sanitize="address,undefined"],
        [no], [gdrx_sanitize=""],
        [gdrx_sanitize="$enable_sanitizers"])
    GDRX_SANITIZE="$gdrx_sanitize"
    AC_SUBST([GDRX_SANITIZE])
    AM_CONDITIONAL([GDRX_SANITIZED], [test -n "$gdrx_sanitize"])
    AM_CONDITIONAL([GDRX_TSAN], [test "x$gdrx_sanitize" = xthread])
])

AC_DEFUN([GDRX_CHECK_CFLAGS], [
    GDRX_CFLAGS="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers"
    GDRX_LDFLAGS=""
    AS_IF([test "x$enable_debug" = xyes],
          [GDRX_CFLAGS="$GDRX_CFLAGS -O0 -g3 -DGDRX_DEBUG=1"])
    AS_IF([test -n "$gdrx_sanitize"], [
        GDRX_CFLAGS="$GDRX_CFLAGS -fsanitize=$gdrx_sanitize -fno-omit-frame-pointer -fno-sanitize-recover=all -g"
        GDRX_LDFLAGS="$GDRX_LDFLAGS -fsanitize=$gdrx_sanitize"
        AS_CASE([$gdrx_sanitize],
            [*address*], [gdrx_san_rt=libasan.so],
            [*thread*], [gdrx_san_rt=libtsan.so],
            [gdrx_san_rt=""])
        dnl The runtime to LD_PRELOAD when a sanitized library is loaded into
        dnl an unsanitized program (e.g. an LD_PRELOAD interposer).
        AS_IF([test -n "$gdrx_san_rt"],
              [GDRX_SANITIZER_RUNTIME=`$CC -print-file-name=$gdrx_san_rt`])
    ])
    AC_SUBST([GDRX_SANITIZER_RUNTIME])
    AC_SUBST([GDRX_CFLAGS])
    AC_SUBST([GDRX_LDFLAGS])
])

dnl Interleaving points (libgdr/src/ipoint.h): named places in libgdrx and
dnl the UCX transport where a test parks a thread to force one schedule.
dnl They exist in test builds only: --enable-all turns them on (its tests
dnl need them) unless --disable-test-points; a plain build has none, and
dnl libgdrx then exports no gdrx_test_* symbol.
AC_DEFUN([GDRX_ARG_TEST_POINTS], [
    AC_ARG_ENABLE([test-points],
        [AS_HELP_STRING([--enable-test-points],
            [compile the interleaving points the concurrency tests park
             threads at (default: on with --enable-all, else off)])],
        [], [enable_test_points=$enable_all])
    AS_IF([test "x$enable_test_points" = xyes],
          [AC_DEFINE([GDRX_TEST_POINTS], [1],
                     [Define to compile the interleaving points (test builds only).])])
    AM_CONDITIONAL([GDRX_TEST_POINTS], [test "x$enable_test_points" = xyes])
    dnl A summary line, not GDRX_PART: off is a choice, never a missing part.
    gdrx_summary="${gdrx_summary}$(printf '  %-22s %-4s %s' 'test points' "$enable_test_points" '')
"
])
