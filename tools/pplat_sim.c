/*
 * pplat_sim.c - the simulated GPU runs no kernels: a thread echoes in the
 * kernel's place, reading and writing the same words (the device ones
 * through the gdrx mapping of the simulated VRAM), so the tool's CPU side,
 * its outputs and its failure paths run under make check.
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "pplat.h"
#include "tool_floor.h"

struct pp_sim {
    pthread_t thread;
    volatile uint64_t *flag, *answer;
    uint64_t start;
};

static void *echo_main(void *arg)
{
    struct pp_sim *s = arg;
    uint64_t last = s->start, idle = 0;
    cpu_set_t all;

    /* Off the measuring thread's CPU: a spinning pair on one CPU would
     * hand over once per time slice. */
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; c++)
        CPU_SET(c, &all);
    sched_setaffinity(0, sizeof(all), &all);
    for (;;) {
        uint64_t v = *s->flag;
        if (v == PP_STOP)
            break;
        if (v != last) {
            last = v;
            *s->answer = v;
            idle = 0;
        } else if (++idle % 64 == 0) {
            sched_yield();
            if (idle > 20000000)
                break; /* the CPU side is gone */
        }
    }
    return NULL;
}

int pp_sim_start(struct pp *p)
{
    struct pp_sim *s = calloc(1, sizeof(*s));

    if (!s)
        return -1;
    s->flag = p->mode == PP_WRITE ? (volatile uint64_t *)p->map : &p->host[1];
    s->answer = p->mode == PP_WRITE ? &p->host[0] : (volatile uint64_t *)(p->map + 8);
    s->start = p->seq;
    if (pthread_create(&s->thread, NULL, echo_main, s) != 0) {
        free(s);
        return -1;
    }
    p->sim = s;
    return 0;
}

int pp_sim_stop(struct pp *p)
{
    if (!p->sim)
        return 0;
    *p->sim->flag = PP_STOP;
    tool_sfence();
    pthread_join(p->sim->thread, NULL);
    free(p->sim);
    p->sim = NULL;
    return 0;
}
