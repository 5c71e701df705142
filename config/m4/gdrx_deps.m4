dnl gdrx_deps.m4 - prerequisites of each part.

dnl CUDA: only cuda.h is needed at build time; libcuda is dlopen'ed.
dnl cuda.h of CUDA 12.0 or newer (cuGetProcAddress_v2's types): the only
dnl build-time need of CUDA; libcuda is dlopen'ed at run time.  Without
dnl --with-cuda: the toolkit's /usr/local/cuda, the system's /usr (a
dnl distribution's nvidia-cuda-dev), then /opt/gdrx-cuda (config/deps.sh).
AC_DEFUN([GDRX_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda=DIR], [directory holding include/cuda.h of CUDA 12.0 or newer
                         @<:@first of /usr/local/cuda, /usr, /opt/gdrx-cuda@:>@])],
        [], [with_cuda=auto])
    gdrx_cuda_how="Only the header is needed.  On Debian and Ubuntu, sh config/deps.sh provides it (in /opt/gdrx-cuda: cuda.h alone, unpacked from Debian 13's nvidia-cuda-dev package; Debian 12's and Ubuntu 22.04's nvidia-cuda-dev are CUDA 11 and too old).  Or install NVIDIA's CUDA toolkit (its package cuda-driver-dev-12-* or newer holds cuda.h) and pass --with-cuda=DIR"
    AS_CASE([$with_cuda],
        [no], [AC_MSG_ERROR([gdrx cannot be built without cuda.h (--without-cuda was given). $gdrx_cuda_how])],
        [auto|yes], [gdrx_cuda_dirs="/usr/local/cuda /usr /opt/gdrx-cuda"],
        [gdrx_cuda_dirs="$with_cuda"])
    CUDA_CPPFLAGS=""
    gdrx_cuda_dir=""
    gdrx_cuda_old=""
    for d in $gdrx_cuda_dirs; do
        AS_IF([test -f "$d/include/cuda.h"], [
            gdrx_cuda_flags="-I$d/include"
            dnl the compiler already searches /usr/include, and -I would demote it
            AS_IF([test "$d" = /usr], [gdrx_cuda_flags=""])
            AC_MSG_CHECKING([whether $d/include/cuda.h is CUDA 12.0 or newer])
            gdrx_save_CPPFLAGS="$CPPFLAGS"
            CPPFLAGS="$CPPFLAGS $gdrx_cuda_flags"
            AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cuda.h>
#if !defined(CUDA_VERSION) || CUDA_VERSION < 12000
#error cuda.h older than 12.0
#endif
]])], [gdrx_cuda_ok=yes], [gdrx_cuda_ok=no])
            CPPFLAGS="$gdrx_save_CPPFLAGS"
            AC_MSG_RESULT([$gdrx_cuda_ok])
            AS_IF([test $gdrx_cuda_ok = yes],
                  [gdrx_cuda_dir="$d"; CUDA_CPPFLAGS="$gdrx_cuda_flags"; break])
            gdrx_v=`$SED -n 's/^#define CUDA_VERSION  *\(@<:@0-9@:>@*\).*/\1/p' "$d/include/cuda.h"`
            gdrx_cuda_old="$gdrx_cuda_old $d/include/cuda.h (CUDA_VERSION ${gdrx_v:-unknown})"
        ])
    done
    AS_IF([test -z "$gdrx_cuda_dir"], [
        AS_IF([test -n "$gdrx_cuda_old"],
            [AC_MSG_ERROR([gdrx needs cuda.h of CUDA 12.0 or newer; found only:$gdrx_cuda_old. $gdrx_cuda_how])],
            [test "x$with_cuda" != xauto && test "x$with_cuda" != xyes],
            [AC_MSG_ERROR([--with-cuda=$with_cuda: $with_cuda/include/cuda.h does not exist (DIR is the directory that holds include/cuda.h). $gdrx_cuda_how])],
            [AC_MSG_ERROR([cuda.h not found in /usr/local/cuda/include, /usr/include or /opt/gdrx-cuda/include. $gdrx_cuda_how])])
    ])
    AC_MSG_NOTICE([using $gdrx_cuda_dir/include/cuda.h])
    AC_SUBST([CUDA_CPPFLAGS])
    dnl The simulated runtime takes the soname of this CUDA's (libcudart.so.MAJOR),
    dnl the one a CUDA-enabled UCX built with this toolkit needs.
    gdrx_v=`$SED -n 's/^#define CUDA_VERSION  *\(@<:@0-9@:>@*\).*/\1/p' "$gdrx_cuda_dir/include/cuda.h"`
    AC_SUBST([SIM_CUDART_MAJOR], [`expr $gdrx_v / 1000`])
    dnl (for the tests that build as the GPU machine's scripts do: CUDA_HOME)
    AC_SUBST([CUDA_DIR], [$gdrx_cuda_dir])
    GDRX_PART([libgdrx], [yes])
    AC_CHECK_LIB([dl], [dlopen], [DL_LIBS=-ldl], [DL_LIBS=])
    AC_SUBST([DL_LIBS])
])

dnl The simulated GPU (tests/sim, a test-only libcuda.so.1): make bench runs
dnl on it where there is no GPU, and every suite of make check.  It keeps
dnl each simulated allocation in a memfd.
AC_DEFUN([GDRX_CHECK_SIM], [
    AC_CHECK_DECL([memfd_create], [gdrx_have_sim=yes], [gdrx_have_sim=no],
                  [[#define _GNU_SOURCE 1
#include <sys/mman.h>]])
    AM_CONDITIONAL([HAVE_SIM], [test "x$gdrx_have_sim" = xyes])
    GDRX_PART([simulated GPU], [$gdrx_have_sim], [memfd_create not declared (glibc 2.27 or newer)],
              [make bench then needs a real GPU, make check cannot run])
])

AC_DEFUN([GDRX_CHECK_CUNIT], [
    AC_CHECK_HEADER([CUnit/CUnit.h],
        [AC_CHECK_LIB([cunit], [CU_initialize_registry], [gdrx_have_cunit=yes], [gdrx_have_cunit=no])],
        [gdrx_have_cunit=no])
    AM_CONDITIONAL([HAVE_CUNIT], [test "x$gdrx_have_cunit" = xyes])
    GDRX_PART([tests (CUnit)], [$gdrx_have_cunit], [CUnit not found], [apt-get install libcunit1-dev (sh config/deps.sh); make check needs it, make bench does not])
])

dnl UCX: libucs/libuct/libucm of one release plus the source tree of the same
dnl release for its uninstalled internal headers (uct/base/uct_iface.h, ...).
dnl The installed public headers are used when present (Debian's libucx-dev);
dnl otherwise the source tree must be configured (src/uct/api/version.h), as
dnl on a machine with only the runtime package (Ubuntu's libucx0).
AC_DEFUN([GDRX_CHECK_UCX], [
    AC_ARG_WITH([ucx],
        [AS_HELP_STRING([--with-ucx=PREFIX], [UCX installation: PREFIX/include, PREFIX/lib* @<:@/usr@:>@])],
        [], [with_ucx=/usr])
    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR], [UCX source tree of the installed version
                         @<:@first of /usr/src/ucx-*, /opt/ucx-src@:>@])],
        [], [with_ucx_src=auto])
    AC_ARG_WITH([ucx-libdir],
        [AS_HELP_STRING([--with-ucx-libdir=DIR], [directory of libucs.so.0 and libuct.so.0
                         @<:@first of PREFIX/lib, PREFIX/lib64, PREFIX/lib/HOST-MULTIARCH (e.g. x86_64-linux-gnu)@:>@])],
        [], [with_ucx_libdir=auto])
    AC_ARG_VAR([UCX_BUILD_CPPFLAGS], [configure-time macros of the target UCX
               (ENABLE_ASSERT, ENABLE_STATS, ...); default: from its config.h or ucx_info -v])
    gdrx_ucx_why=""
    gdrx_have_ucx=no
    UCX_VERSION=""
    gdrx_ucx_pub=""
    AS_IF([test -f "$with_ucx/include/uct/api/version.h"], [gdrx_ucx_pub="$with_ucx/include"])
    AS_IF([test "x$with_ucx_src" = xauto], [
        with_ucx_src=""
        AS_IF([test -n "$gdrx_ucx_pub"],
              [gdrx_v=`$SED -n 's/^#define UCT_VERNO_STRING *"\(.*\)"/\1/p' $gdrx_ucx_pub/uct/api/version.h`])
        for d in /usr/src/ucx-$gdrx_v /usr/src/ucx-* /opt/ucx-src; do
            AS_IF([test -f "$d/src/uct/base/uct_iface.h"], [with_ucx_src="$d"; break])
        done
    ])
    AS_IF([test -z "$gdrx_ucx_pub" && test -f "$with_ucx_src/src/uct/api/version.h"],
          [gdrx_ucx_pub="$with_ucx_src/src"])
    AS_IF([test -z "$gdrx_ucx_pub"],
          [gdrx_ucx_why="no uct/api/version.h under $with_ucx/include or a configured --with-ucx-src"],
          [test ! -f "$with_ucx_src/src/uct/base/uct_iface.h"],
          [gdrx_ucx_why="UCX source tree (src/uct/base/uct_iface.h) not found"],
          [gdrx_have_ucx=yes])
    dnl the tree found, for check-bench-bare's own configure
    AC_SUBST([GDRX_UCX_SRC], [$with_ucx_src])
    AS_IF([test "x$gdrx_have_ucx" = xyes], [
        AC_MSG_CHECKING([UCX version])
        UCX_VERSION=`$SED -n 's/^#define UCT_VERNO_STRING *"\(.*\)"/\1/p' $gdrx_ucx_pub/uct/api/version.h`
        AC_MSG_RESULT([$UCX_VERSION])
        gdrx_src_v=`$SED -n 's/^#define UCT_VERNO_STRING *"\(.*\)"/\1/p' $with_ucx_src/src/uct/api/version.h 2>/dev/null`
        gdrx_src_base=`basename "$with_ucx_src"`
        AS_CASE(["$gdrx_src_v:$gdrx_src_base"],
            ["$UCX_VERSION:"*|":ucx-$UCX_VERSION"*|":"*], [],
            [AC_MSG_WARN([UCX source tree $with_ucx_src is $gdrx_src_v, UCX is $UCX_VERSION])])
    ])
    AS_IF([test "x$gdrx_have_ucx" = xyes], [
        AS_IF([test "x$with_ucx_libdir" = xauto], [
            with_ucx_libdir=""
            for d in $with_ucx/lib $with_ucx/lib64 $with_ucx/lib/${host_cpu}-${host_os}; do
                AS_IF([test -e "$d/libuct.so.0" && test -e "$d/libucs.so.0"], [with_ucx_libdir="$d"; break])
            done
        ])
        AS_IF([test ! -e "$with_ucx_libdir/libuct.so.0"],
              [gdrx_have_ucx=no; gdrx_ucx_why="libuct.so.0 not found (--with-ucx-libdir)"])
    ])
    AS_IF([test "x$gdrx_have_ucx" = xyes], [
        AC_PATH_PROG([UCX_INFO], [ucx_info], [], [$with_ucx/bin$PATH_SEPARATOR$PATH])
        AS_IF([test -z "$UCX_BUILD_CPPFLAGS"], [GDRX_UCX_BUILD_FLAGS])
        dnl A UCX built --with-valgrind: its headers need valgrind's.
        AS_CASE([" $UCX_BUILD_CPPFLAGS "], [*" -DNVALGRIND"*], [],
            [AC_CHECK_HEADER([valgrind/memcheck.h], [],
                [gdrx_have_ucx=no
                 gdrx_ucx_why="this UCX was built with valgrind annotations (no NVALGRIND): its headers need valgrind/memcheck.h (apt-get install valgrind)"])])
    ])
    UCX_CPPFLAGS="-I$gdrx_ucx_pub -I$with_ucx_src/src $UCX_BUILD_CPPFLAGS"
    UCX_LIBDIR="$with_ucx_libdir"
    UCX_LIBS="-L$with_ucx_libdir -Wl,-rpath-link,$with_ucx_libdir -l:libuct.so.0 -l:libucs.so.0 -l:libucm.so.0"
    UCP_LIBS="-l:libucp.so.0"
    UCX_SRC="$with_ucx_src"
    AC_SUBST([UCX_CPPFLAGS])
    AC_SUBST([UCX_LIBS])
    AC_SUBST([UCP_LIBS])
    AC_SUBST([UCX_LIBDIR])
    AC_SUBST([UCX_SRC])
    AC_SUBST([UCX_VERSION])
    AC_DEFINE_UNQUOTED([GDRX_UCX_BUILD_VERSION], ["$UCX_VERSION"], [UCX release the plugin is built for])
    AM_CONDITIONAL([HAVE_UCX], [test "x$gdrx_have_ucx" = xyes])
    GDRX_PART([UCX $UCX_VERSION transport], [$gdrx_have_ucx], [$gdrx_ucx_why],
              [--with-ucx=PREFIX --with-ucx-src=DIR (config/deps.sh fetches the source)])
])

dnl The target UCX's configure-time macros its internal headers read; some are
dnl ABI (ENABLE_STATS adds a member to uct_base_iface_t).  A configured source
dnl tree's config.h says; otherwise ucx_info -v's "Configured with" line does.
dnl NVALGRIND too: UCX defines it unless configured --with-valgrind (Debian's
dnl and Ubuntu's packages are not), and without it ucs/sys/checker.h includes
dnl valgrind/memcheck.h, which a machine without valgrind lacks.  The plugin
dnl then matches its UCX: the inline mpool code annotates for valgrind
dnl exactly when the UCX libraries around it do.
AC_DEFUN([GDRX_UCX_BUILD_FLAGS], [
    AC_MSG_CHECKING([UCX build macros])
    UCX_BUILD_CPPFLAGS=""
    AS_IF([test -f "$with_ucx_src/config.h"], [
        for m in ENABLE_PARAMS_CHECK ENABLE_DEBUG_DATA ENABLE_ASSERT ENABLE_MT ENABLE_STATS UCS_MAX_LOG_LEVEL NVALGRIND; do
            v=`$SED -n "s/^#define $m \(.*\)/\1/p" $with_ucx_src/config.h`
            AS_IF([test -n "$v"], [UCX_BUILD_CPPFLAGS="$UCX_BUILD_CPPFLAGS -D$m=$v"])
        done
        gdrx_ucx_flags_from="$with_ucx_src/config.h"
    ], [
        gdrx_cw=`$UCX_INFO -v 2>/dev/null | $SED -n 's/^# Configured with: //p'`
        gdrx_ucx_flags_from="ucx_info -v"
        AS_CASE([" $gdrx_cw "], [*" --disable-params-check "*], [gdrx_f="-DENABLE_PARAMS_CHECK=0"], [gdrx_f="-DENABLE_PARAMS_CHECK=1"])
        AS_CASE([" $gdrx_cw "], [*" --enable-debug-data "*], [gdrx_f="$gdrx_f -DENABLE_DEBUG_DATA=1"], [gdrx_f="$gdrx_f -DENABLE_DEBUG_DATA=0"])
        AS_CASE([" $gdrx_cw "], [*" --disable-assertions "*], [], [gdrx_f="$gdrx_f -DENABLE_ASSERT=1"])
        AS_CASE([" $gdrx_cw "], [*" --enable-mt "*], [gdrx_f="$gdrx_f -DENABLE_MT=1"], [gdrx_f="$gdrx_f -DENABLE_MT=0"])
        AS_CASE([" $gdrx_cw "], [*" --enable-stats "*], [gdrx_f="$gdrx_f -DENABLE_STATS=1"], [])
        AS_CASE([" $gdrx_cw "],
            [*" --with-valgrind=no "*], [gdrx_f="$gdrx_f -DNVALGRIND=1"],
            [*" --with-valgrind"*], [],
            [gdrx_f="$gdrx_f -DNVALGRIND=1"])
        AS_CASE([" $gdrx_cw "],
            [*" --disable-logging "*], [gdrx_l=UCS_LOG_LEVEL_DEBUG],
            [*" --enable-logging=warn "*], [gdrx_l=UCS_LOG_LEVEL_WARN],
            [*" --enable-logging=info "*], [gdrx_l=UCS_LOG_LEVEL_INFO],
            [*" --enable-logging=debug "*], [gdrx_l=UCS_LOG_LEVEL_DEBUG],
            [gdrx_l=UCS_LOG_LEVEL_TRACE_POLL])
        UCX_BUILD_CPPFLAGS="$gdrx_f -DUCS_MAX_LOG_LEVEL=$gdrx_l"
    ])
    AC_MSG_RESULT([$UCX_BUILD_CPPFLAGS (from $gdrx_ucx_flags_from)])
])

dnl Kernel headers for gdrdrv.ko.  The default is the running kernel's
dnl build tree (what `make install` users load), else the newest Debian
dnl linux-headers-*-amd64 tree (CI: the host kernel has no headers; the qemu
dnl tests boot the kernel of those headers).
AC_DEFUN([GDRX_CHECK_KERNEL], [
    AC_ARG_WITH([kernel-headers],
        [AS_HELP_STRING([--with-kernel-headers=DIR], [kernel build tree for gdrdrv.ko
                         @<:@/lib/modules/`uname -r`/build (the running kernel), else the
                         newest /usr/src/linux-headers-*-amd64@:>@])],
        [], [with_kernel_headers=auto])
    AS_IF([test "x$with_kernel_headers" = xauto], [
        with_kernel_headers=""
        dnl The running kernel first: the kernel that make install users load.
        AS_IF([test -f "/lib/modules/`uname -r`/build/Makefile"],
              [with_kernel_headers="/lib/modules/`uname -r`/build"])
        AS_IF([test -z "$with_kernel_headers"], [
            for d in `ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V -r`; do
                AS_IF([test -f "$d/Makefile"], [with_kernel_headers="$d"; break])
            done
        ])
    ])
    KERNEL_HEADERS="$with_kernel_headers"
    KERNEL_VERSION=""
    dnl UTS_RELEASE is the name modules and /boot use (6.1.0-57-amd64);
    dnl Debian's include/config/kernel.release holds the upstream 6.1.192.
    AS_IF([test -n "$KERNEL_HEADERS" && test -f "$KERNEL_HEADERS/include/generated/utsrelease.h"],
          [KERNEL_VERSION=`$SED -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' $KERNEL_HEADERS/include/generated/utsrelease.h`])
    AS_IF([test -z "$KERNEL_VERSION" && test -n "$KERNEL_HEADERS" && test -f "$KERNEL_HEADERS/include/config/kernel.release"],
          [KERNEL_VERSION=`cat $KERNEL_HEADERS/include/config/kernel.release`])
    AS_IF([test -n "$KERNEL_VERSION"], [gdrx_have_kernel=yes], [gdrx_have_kernel=no])
    AC_SUBST([KERNEL_HEADERS])
    AC_SUBST([KERNEL_VERSION])
    AM_CONDITIONAL([HAVE_KERNEL_HEADERS], [test "x$gdrx_have_kernel" = xyes])
    GDRX_PART([gdrdrv.ko (mock P2P)], [$gdrx_have_kernel], [no configured kernel build tree],
              [--with-kernel-headers=DIR (apt-get install linux-headers-amd64)])
])

dnl The driver's own copy (.../nvidia/nv-p2p.h) wins over nvidia-peermem's.
AC_DEFUN([GDRX_FIND_NV_P2P],
    [{ find "$1" -path '*/nvidia/nv-p2p.h' 2>/dev/null; find "$1" -name nv-p2p.h 2>/dev/null; } | head -n1])

dnl nv-p2p.h from the NVIDIA driver source (for a real, non-mock gdrdrv build).
AC_DEFUN([GDRX_CHECK_NVIDIA_SRC], [
    AC_ARG_WITH([nvidia-src],
        [AS_HELP_STRING([--with-nvidia-src=DIR], [NVIDIA kernel driver source holding nv-p2p.h
                         @<:@the /usr/src/nvidia-* of the nvidia module installed for the
                         kernel, else the newest /usr/src/nvidia-*, else /opt/nvidia-kernel-src@:>@])],
        [], [with_nvidia_src=auto])
    AS_IF([test "x$with_nvidia_src" = xauto], [
        with_nvidia_src=""
        dnl The installed driver's version, e.g. 580.95.05, names its DKMS tree.
        dnl modinfo is in /usr/sbin, which a normal user's PATH lacks.
        nvver=""
        AS_IF([test -n "$KERNEL_VERSION"],
              [nvver=`PATH="$PATH:/usr/sbin:/sbin" modinfo -k "$KERNEL_VERSION" -F version nvidia 2>/dev/null | head -n1`])
        nvdirs=`ls -d /usr/src/nvidia-* 2>/dev/null | sort -V -r`
        AS_IF([test -n "$nvver"],
              [nvdirs="`ls -d /usr/src/nvidia-*$nvver 2>/dev/null` $nvdirs"])
        for d in $nvdirs /opt/nvidia-kernel-src; do
            f=`GDRX_FIND_NV_P2P([$d])`
            AS_IF([test -n "$f"], [with_nvidia_src=`dirname "$f"`; break])
        done
    ], [
        f=`GDRX_FIND_NV_P2P([$with_nvidia_src])`
        AS_IF([test -n "$f"], [with_nvidia_src=`dirname "$f"`], [with_nvidia_src=""])
    ])
    NVIDIA_SRC="$with_nvidia_src"
    AC_SUBST([NVIDIA_SRC])
    AS_IF([test -n "$NVIDIA_SRC" && test "x$gdrx_have_kernel" = xyes],
          [gdrx_have_nvsrc=yes], [gdrx_have_nvsrc=no])
    AM_CONDITIONAL([HAVE_NVIDIA_SRC], [test "x$gdrx_have_nvsrc" = xyes])
    GDRX_PART([gdrdrv.ko (nv-p2p.h)], [$gdrx_have_nvsrc], [nv-p2p.h or kernel headers not found],
              [--with-nvidia-src=DIR (config/deps.sh unpacks Debian's NVIDIA kernel source)])
])

dnl qemu, busybox and a bootable kernel image matching KERNEL_VERSION.
AC_DEFUN([GDRX_CHECK_QEMU], [
    AC_PATH_PROG([QEMU], [qemu-system-x86_64], [])
    AC_PATH_PROG([BUSYBOX], [busybox], [], [$PATH:/bin:/usr/bin])
    AC_ARG_WITH([kernel-image],
        [AS_HELP_STRING([--with-kernel-image=FILE], [bootable kernel matching the headers, for make check-kmod
                         @<:@/boot/vmlinuz-KVER, then /opt/gdrx-kernel/vmlinuz-KVER@:>@])],
        [], [with_kernel_image=auto])
    AS_IF([test "x$with_kernel_image" = xauto], [
        with_kernel_image=""
        for f in /boot/vmlinuz-$KERNEL_VERSION /opt/gdrx-kernel/boot/vmlinuz-$KERNEL_VERSION; do
            AS_IF([test -n "$KERNEL_VERSION" && test -r "$f"], [with_kernel_image="$f"; break])
        done
    ])
    KERNEL_IMAGE="$with_kernel_image"
    AC_SUBST([KERNEL_IMAGE])
    gdrx_kmod_why=""
    AS_IF([test "x$gdrx_have_kernel" != xyes], [gdrx_kmod_why="no kernel build tree"],
          [test -z "$QEMU"], [gdrx_kmod_why="qemu-system-x86_64 not found"],
          [test -z "$BUSYBOX"], [gdrx_kmod_why="busybox not found"],
          [test -z "$KERNEL_IMAGE"], [gdrx_kmod_why="no vmlinuz for $KERNEL_VERSION"])
    AS_IF([test -z "$gdrx_kmod_why"], [gdrx_have_kmodtest=yes], [gdrx_have_kmodtest=no])
    AM_CONDITIONAL([HAVE_KMOD_TESTS], [test "x$gdrx_have_kmodtest" = xyes])
    GDRX_PART([kernel tests (qemu)], [$gdrx_have_kmodtest], [$gdrx_kmod_why],
              [config/deps.sh installs qemu, busybox-static and the kernel image])
])

dnl Open MPI (mpicc's flags, mpirun) for tests/mpi, with the UCX transport.
AC_DEFUN([GDRX_CHECK_MPI], [
    AC_PATH_PROG([MPICC], [mpicc], [])
    AC_PATH_PROG([MPIRUN], [mpirun], [])
    gdrx_mpi_why=""
    AS_IF([test "x$gdrx_have_ucx" != xyes], [gdrx_mpi_why="no UCX transport"],
          [test -z "$MPICC" || test -z "$MPIRUN"], [gdrx_mpi_why="mpicc or mpirun not found"],
          [MPI_CFLAGS=$($MPICC --showme:compile 2>/dev/null) &&
           MPI_LIBS=$($MPICC --showme:link 2>/dev/null)], [],
          [gdrx_mpi_why="$MPICC is not Open MPI's (no --showme)"])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AS_IF([test -z "$gdrx_mpi_why"], [gdrx_have_mpi=yes], [gdrx_have_mpi=no])
    AM_CONDITIONAL([HAVE_MPI], [test "x$gdrx_have_mpi" = xyes])
    GDRX_PART([MPI tests (Open MPI)], [$gdrx_have_mpi], [$gdrx_mpi_why],
              [config/deps.sh installs libopenmpi-dev and openmpi-bin])
])

AC_DEFUN([GDRX_INSTALL_DIRS], [
    AC_ARG_WITH([udevrulesdir],
        [AS_HELP_STRING([--with-udevrulesdir=DIR], [udev rules: where udev reads them,
                         whatever the prefix @<:@udevdir of udev.pc + rules.d, else /lib/udev/rules.d@:>@])],
        [udevrulesdir="$withval"],
        [udevrulesdir=`$PKG_CONFIG --variable=udevdir udev 2>/dev/null`
         AS_IF([test -n "$udevrulesdir"], [udevrulesdir="$udevrulesdir/rules.d"],
               [udevrulesdir=/lib/udev/rules.d])])
    AC_ARG_WITH([dkmsdir],
        [AS_HELP_STRING([--with-dkmsdir=DIR], [DKMS source root: where dkms looks,
                         whatever the prefix @<:@/usr/src@:>@])],
        [dkmsdir="$withval"], [dkmsdir=/usr/src])
    AC_ARG_WITH([ucx-moduledir],
        [AS_HELP_STRING([--with-ucx-moduledir=DIR], [UCX module directory @<:@LIBDIR/ucx@:>@])],
        [ucxmoduledir="$withval"], [ucxmoduledir='${libdir}/ucx'])
    AC_ARG_WITH([ucx-confdir],
        [AS_HELP_STRING([--with-ucx-confdir=DIR], [where ucx.conf samples go @<:@SYSCONFDIR/ucx@:>@])],
        [ucxconfdir="$withval"], [ucxconfdir='${sysconfdir}/ucx'])
    AC_SUBST([udevrulesdir])
    AC_SUBST([dkmsdir])
    AC_SUBST([ucxmoduledir])
    AC_SUBST([ucxconfdir])
])

dnl libgdrapi.so.2 (libgdr/gdrapi, gdrcopy's API over gdrx): always built and
dnl tested; installed only when asked, never over an NVIDIA gdrcopy by accident.
AC_DEFUN([GDRX_ARG_GDRAPI], [
    AC_ARG_ENABLE([gdrapi-install],
        [AS_HELP_STRING([--enable-gdrapi-install],
            [install libgdrapi.so.2, gdrapi.h and gdrapi.pc (gdrcopy's API over
             gdrx): they take the place of NVIDIA gdrcopy's of the same names
             in LIBDIR and INCLUDEDIR @<:@no@:>@])],
        [], [enable_gdrapi_install=no])
    AS_CASE([$enable_gdrapi_install], [yes|no], [],
            [AC_MSG_ERROR([--enable-gdrapi-install takes no value, got: $enable_gdrapi_install])])
    AM_CONDITIONAL([GDRX_GDRAPI_INSTALL], [test "x$enable_gdrapi_install" = xyes])
    dnl The gdrcopy API level implemented, and libtool's version giving the
    dnl soname libgdrapi.so.2 (current - age = 2) and the file .so.2.6.0.
    AC_SUBST([GDRAPI_VERSION], [2.6])
    AC_SUBST([GDRAPI_LT_VERSION], [8:0:6])
    AS_IF([test "x$enable_gdrapi_install" = xyes],
          [gdrx_gdrapi_note="installed"],
          [gdrx_gdrapi_note="built and tested, not installed (--enable-gdrapi-install)"])
    gdrx_summary="${gdrx_summary}$(printf '  %-22s %-4s %s' 'libgdrapi.so.2' yes "$gdrx_gdrapi_note")
"
])
