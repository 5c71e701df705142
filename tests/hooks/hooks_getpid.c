/*
 * hooks_getpid.c - a library with a GOT import of getpid, the synthetic
 * target of the got_patch API cases.
 *
 * SPDX-License-Identifier: MIT
 */
#include <sys/types.h>
#include <unistd.h>

pid_t hooks_call_getpid(void);
void *hooks_getpid_address(void);
int hooks_probe(void);

pid_t hooks_call_getpid(void)
{
    return getpid();
}

/* &getpid as this library sees it (a GLOB_DAT slot). */
void *hooks_getpid_address(void)
{
    return (void *)&getpid;
}

int hooks_probe(void)
{
    return 2;
}
