dnl gdrx_parts.m4 - bookkeeping of which parts are built and why not.
dnl
dnl GDRX_PART(name, yes|no, reason-if-no, option-that-fixes)
AC_DEFUN([GDRX_PART], [
    AS_IF([test "x$2" = xyes], [gdrx_why=""], [gdrx_why="m4_ifval([$3], [$3], [])"])
    gdrx_summary="${gdrx_summary}$(printf '  %-22s %-4s %s' "$1" "$2" "$gdrx_why")
"
    AS_IF([test "x$2" != xyes], [
        AS_IF([test -n "m4_ifval([$4],[$4],[])"], [
            gdrx_summary="${gdrx_summary}$(printf '  %-22s      -> %s' '' "$4")
"])
        AS_IF([test "x$enable_all" = xyes],
              [gdrx_all_missing="${gdrx_all_missing} $1 ($3; $4)"])
    ])
])

AC_DEFUN([GDRX_ARG_ENABLE_ALL], [
    AC_ARG_ENABLE([all],
        [AS_HELP_STRING([--enable-all],
            [require every part (library, tests, kernel module, kernel tests,
             UCX detection) to be buildable; fail otherwise])],
        [], [enable_all=no])
    gdrx_summary=""
    gdrx_all_missing=""
])

AC_DEFUN([GDRX_SUMMARY], [
    AS_ECHO([""])
    AS_ECHO(["gdrx $PACKAGE_VERSION configuration summary"])
    AS_ECHO(["  part                   built why not / how to fix"])
    AS_ECHO(["$gdrx_summary"])
    AS_ECHO(["  CFLAGS: $CFLAGS $GDRX_CFLAGS"])
    AS_ECHO(["  prefix: $prefix"])
    AS_IF([test -n "$gdrx_all_missing"],
          [AC_MSG_ERROR([--enable-all: these parts cannot be built:$gdrx_all_missing])])
])
