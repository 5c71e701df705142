/*
 * pplat_kernel.cu - gdrx-pplat's GPU side, one thread each: echo every new
 * value of a flag into an answer word, until the flag reads PP_STOP or no
 * new value came for two seconds (so a CPU side that died leaves no
 * kernel spinning).  Compiled by nvcc into a fatbin the tool embeds and
 * loads with cuModuleLoadData.
 *
 * SPDX-License-Identifier: MIT
 */
#define PP_STOP 0xffffffffffffffffull
#define PP_IDLE_NS 2000000000ull

__device__ static unsigned long long pp_now(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* flag and answer may each be device memory (written or read by the CPU
 * through the gdrx mapping) or mapped host memory.  start: the value the
 * flag holds at launch (the CPU may write the next one before this runs). */
extern "C" __global__ void pp_echo(volatile unsigned long long *flag,
                                   volatile unsigned long long *answer,
                                   unsigned long long start)
{
    unsigned long long last = start, since = pp_now();

    for (;;) {
        unsigned long long v = *flag;
        if (v == PP_STOP)
            return;
        if (v != last) {
            last = v;
            *answer = v;
            __threadfence_system();
            since = pp_now();
        } else if (pp_now() - since > PP_IDLE_NS) {
            return;
        }
    }
}
