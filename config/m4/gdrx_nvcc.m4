dnl gdrx_nvcc.m4 - nvcc, for the one GPU kernel the tools embed (gdrx-pplat).
dnl Optional: without it gdrx-pplat is built without its kernel and reports
dnl "not run" on a GPU; --enable-all does not require it.
AC_DEFUN([GDRX_CHECK_NVCC], [
    AC_ARG_VAR([NVCC], [CUDA compiler for gdrx-pplat's kernel])
    AC_ARG_VAR([GDRX_NVCC_ARCH], [nvcc -gencode options for gdrx-pplat's kernel])
    AC_PATH_PROG([NVCC], [nvcc], [], [$PATH:$with_cuda/bin:/usr/local/cuda/bin])
    AS_IF([test -z "$GDRX_NVCC_ARCH"],
          [GDRX_NVCC_ARCH="-gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90"])
    gdrx_have_nvcc=no
    AS_IF([test -n "$NVCC"], [
        AC_MSG_CHECKING([whether $NVCC builds a fatbin])
        printf '__global__ void k(int *p) { *p = 1; }\n' > conftest.cu
        AS_IF([$NVCC $GDRX_NVCC_ARCH --fatbin -o conftest.fatbin conftest.cu >&AS_MESSAGE_LOG_FD 2>&1],
              [gdrx_have_nvcc=yes])
        rm -f conftest.cu conftest.fatbin
        AC_MSG_RESULT([$gdrx_have_nvcc])
    ])
    AM_CONDITIONAL([HAVE_NVCC], [test "x$gdrx_have_nvcc" = xyes])
    dnl Listed in the summary, but never required (not GDRX_PART).
    AS_IF([test "x$gdrx_have_nvcc" = xyes],
          [gdrx_summary="${gdrx_summary}$(printf '  %-22s %-4s %s' 'gdrx-pplat kernel' yes "$NVCC")
"],
          [gdrx_summary="${gdrx_summary}$(printf '  %-22s %-4s %s' 'gdrx-pplat kernel' no 'nvcc not found: gdrx-pplat reports not run')
"])
])
