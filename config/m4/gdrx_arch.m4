dnl gdrx_arch.m4 - the target architecture: which copy variants and
dnl whether the CUDA entry-point hooks (x86-64 instruction relocation) are
dnl built.  Cross-compiling (--host=aarch64-linux-gnu) picks the target's.
AC_DEFUN([GDRX_CHECK_ARCH], [
    AC_REQUIRE([AC_CANONICAL_HOST])
    AS_CASE([$host_cpu],
        [x86_64], [gdrx_arch=x86_64],
        [aarch64], [gdrx_arch=aarch64],
        [AC_MSG_ERROR([gdrx builds for x86_64 and aarch64 only, not $host_cpu])])
    AM_CONDITIONAL([GDRX_ARCH_X86_64], [test $gdrx_arch = x86_64])
    AM_CONDITIONAL([GDRX_ARCH_AARCH64], [test $gdrx_arch = aarch64])
    dnl The hooks patch x86-64 machine code; elsewhere the library behaves
    dnl as GDRX_FREE_HOOKS=0 does (docs/free-interception.md).
    AS_IF([test $gdrx_arch = x86_64], [gdrx_hooks=yes], [gdrx_hooks=no])
    AM_CONDITIONAL([GDRX_FREE_HOOKS], [test $gdrx_hooks = yes])
    gdrx_summary="${gdrx_summary}$(printf '  %-22s %-4s %s' "arch $gdrx_arch" yes '')
"
    GDRX_PART([CUDA free hooks], [$gdrx_hooks],
              [x86-64 only: stale pins are found by gdrx_pin_query, subscriptions are ENOSYS],
              [])
])
