/*
 * ut_cuda_init.c - preloaded after the simulated libcuda into programs
 * that never touch CUDA themselves (ucx_info, MPI ranks before MPI_Init):
 * stands for a CUDA program that initialised CUDA before UCX lists its
 * transports, as CUDA-aware MPI programs do before MPI_Init.  The simulated
 * GPU's only backend, dmabuf, can be told to work only then, so only then
 * does gdrx list its resource there (tests/ucx/test_tools, tests/info,
 * tests/mpi).
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stddef.h>

static void __attribute__((constructor)) ut_cuda_init(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    int (*init)(unsigned);

    if (lib == NULL) {
        return;
    }
    *(void**)&init = dlsym(lib, "cuInit");
    if (init != NULL) {
        (void)init(0);
    }
    dlclose(lib);
}
