/*
 * errors.c - gdrx_strerror(): names for the negative errno values gdrx
 * returns.
 *
 * SPDX-License-Identifier: MIT
 *
 * A fixed table rather than strerror(): strerror() may return a buffer that
 * the next call overwrites, and its text depends on the locale.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "gdrx.h"
#include "export.h"

struct errname {
    int         err;
    const char *text;
};

static const struct errname errnames[] = {
    { EINVAL,     "EINVAL: invalid argument" },
    { EBADF,      "EBADF: not an open gdrx context" },
    { ENOMEM,     "ENOMEM: out of memory" },
    { ENODEV,     "ENODEV: backend or device not available" },
    { ENOENT,     "ENOENT: no such file or device node" },
    { EOPNOTSUPP, "EOPNOTSUPP: operation not supported by this backend or driver" },
    { ERANGE,     "ERANGE: range lies outside the pin's mapping" },
    { ESTALE,     "ESTALE: CUDA freed the pinned memory" },
    { EBUSY,      "EBUSY: pin is mapped or in use" },
    { EEXIST,     "EEXIST: already mapped" },
    { EAGAIN,     "EAGAIN: resource temporarily unavailable" },
    { EACCES,     "EACCES: permission denied" },
    { EPERM,      "EPERM: operation not permitted" },
    { EPROTO,     "EPROTO: driver and library versions are incompatible" },
    { EIO,        "EIO: driver I/O error" },
    { EFAULT,     "EFAULT: bad address" },
    { ECHILD,     "ECHILD: handle belongs to the parent process (used after fork)" },
    { ETIMEDOUT,  "ETIMEDOUT: timed out" },
    { EILSEQ,     "EILSEQ: driver returned data the library does not understand" },
    { ENOTTY,     "ENOTTY: device does not speak the expected ioctl ABI" },
    { EOVERFLOW,  "EOVERFLOW: value too large" },
    { ENOSPC,     "ENOSPC: handle table full" },
    { EMFILE,     "EMFILE: too many open files" },
    { ENXIO,      "ENXIO: no such device or address" },
    { ELIBACC,    "ELIBACC: cannot load libcuda.so.1" },
    { ENOSYS,     "ENOSYS: function not implemented by the CUDA driver" },
};

GDRX_EXPORT const char *gdrx_strerror(int err)
{
    if (err == 0)
        return "success";
    if (err > 0)
        err = -err; /* be lenient: a positive errno names the same error */
    for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
        if (errnames[i].err == -err)
            return errnames[i].text;
    /* errno values passed through from system calls: glibc's fixed,
     * locale-independent description (thread-safe, unlike strerror). */
#ifdef HAVE_STRERRORDESC_NP
    const char *desc = strerrordesc_np(-err);
    return desc ? desc : "unknown error";
#else
    /* glibc < 2.32: the GNU strerror_r into a buffer of this thread's (the
     * text then stays valid until this thread's next such call) */
    static _Thread_local char buf[96];
    return strerror_r(-err, buf, sizeof(buf));
#endif
}
