/*
 * emu_config.c - the emulator's GPU table, versions, failure rules and
 * the control functions tests and the simulated libcuda call.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu_internal.h"

/* "dddd:bb:ss.f" in any case -> canonical lower-case form. */
static int parse_bus_id(const char *s, size_t n, struct emu_gpu *g)
{
    char buf[32];
    unsigned dom, bus, slot, fn;
    char tail;

    if (n == 0 || n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (sscanf(buf, "%x:%x:%x.%x%c", &dom, &bus, &slot, &fn, &tail) != 4)
        return -EINVAL;
    g->domain = dom;
    g->bus = bus;
    g->slot = slot;
    snprintf(g->bus_id, sizeof(g->bus_id), "%04x:%02x:%02x.%x", dom & 0xffff, bus & 0xff,
             slot & 0x1f, fn & 7);
    g->gpu_id = (bus << 8) | (slot << 3) | 6;
    return 0;
}

int emu_parse_gpus_locked(const char *spec)
{
    struct emu_gpu gpus[NVRM_EMU_MAX_GPUS];
    int n = 0;
    const char *p = spec;

    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq || n == NVRM_EMU_MAX_GPUS)
            return -EINVAL;
        memset(&gpus[n], 0, sizeof(gpus[n]));
        if (parse_bus_id(p, (size_t)(eq - p), &gpus[n]) < 0)
            return -EINVAL;
        char *end = NULL;
        long minor = strtol(eq + 1, &end, 10);
        if (end == eq + 1 || end != p + len || minor < 0 || minor >= NVRM_EMU_MAX_GPUS)
            return -EINVAL;
        gpus[n].minor = (int)minor;
        for (int i = 0; i < n; i++)
            if (gpus[i].minor == gpus[n].minor || strcmp(gpus[i].bus_id, gpus[n].bus_id) == 0)
                return -EINVAL;
        n++;
        p = comma ? comma + 1 : NULL;
    }
    if (n == 0)
        return -EINVAL;
    memcpy(emu.gpus, gpus, sizeof(gpus[0]) * (size_t)n);
    emu.ngpus = n;
    return 0;
}

/* Before the simulated libcuda announced its GPUs: SIMCU_DEVICES GPUs on
 * buses 0x10, 0x11, ...  Minors run backwards so that a backend which
 * assumes minor == CUDA ordinal picks the wrong device file. */
void emu_default_gpus_locked(void)
{
    const char *v = getenv("SIMCU_DEVICES");
    int n = v ? atoi(v) : 1;
    char spec[NVRM_EMU_MAX_GPUS * 24] = "";

    if (n < 1 || n > NVRM_EMU_MAX_GPUS)
        n = 1;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(spec);
        snprintf(spec + len, sizeof(spec) - len, "%s0000:%02x:00.0=%d", i ? "," : "",
                 0x10 + i, n - 1 - i);
    }
    emu_parse_gpus_locked(spec);
}

const struct emu_gpu *emu_gpu_by_minor(int minor)
{
    for (int i = 0; i < emu.ngpus; i++)
        if (emu.gpus[i].minor == minor)
            return &emu.gpus[i];
    return NULL;
}

long emu_injected_locked(const char *op)
{
    size_t base = strcspn(op, ":");
    for (size_t i = 0; i < sizeof(emu.rules) / sizeof(emu.rules[0]); i++) {
        struct emu_rule *r = &emu.rules[i];
        if (r->count <= 0)
            continue;
        if (strcmp(r->op, op) == 0 || (strlen(r->op) == base && strncmp(r->op, op, base) == 0)) {
            r->count--;
            emu_log("emu: injected %ld into %s", r->value, op);
            return r->value;
        }
    }
    return 0;
}

static int add_rule_locked(const char *op, long value, int count)
{
    if (!op || !*op || strlen(op) >= sizeof(emu.rules[0].op) || value == 0)
        return -EINVAL;
    struct emu_rule *free_slot = NULL;
    for (size_t i = 0; i < sizeof(emu.rules) / sizeof(emu.rules[0]); i++) {
        struct emu_rule *r = &emu.rules[i];
        if (r->count > 0 && strcmp(r->op, op) == 0) {
            free_slot = r;
            break;
        }
        if (r->count <= 0 && !free_slot)
            free_slot = r;
    }
    if (!free_slot)
        return count <= 0 ? 0 : -ENOSPC;
    snprintf(free_slot->op, sizeof(free_slot->op), "%s", op);
    free_slot->value = value;
    free_slot->count = count;
    return 0;
}

void emu_rules_from_env_locked(const char *spec)
{
    char *copy = strdup(spec), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ";", &save) : NULL; tok;
         tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *star = strchr(eq + 1, '*');
        int count = star ? atoi(star + 1) : 1;
        add_rule_locked(tok, strtol(eq + 1, NULL, 0), count);
    }
    free(copy);
}

int nvrm_emu_fail(const char *op, long value, int count)
{
    emu_init();
    emu_lock();
    int rc = add_rule_locked(op, value, count);
    emu_unlock();
    return rc;
}

void nvrm_emu_fail_clear(void)
{
    emu_init();
    emu_lock();
    memset(emu.rules, 0, sizeof(emu.rules));
    emu_unlock();
}

int nvrm_emu_set_bar1(uint64_t bytes)
{
    emu_init();
    emu_lock();
    emu.bar1_size = bytes;
    emu_unlock();
    return 0;
}

int nvrm_emu_set_versions(const char *kernel, const char *sysfs)
{
    if ((kernel && strlen(kernel) >= NVRM_VERSION_STRING_LEN) ||
        (sysfs && strlen(sysfs) >= NVRM_VERSION_STRING_LEN))
        return -EINVAL;
    emu_init();
    emu_lock();
    if (kernel)
        snprintf(emu.kernel_version, sizeof(emu.kernel_version), "%s", kernel);
    if (sysfs)
        snprintf(emu.sysfs_version, sizeof(emu.sysfs_version), "%s", sysfs);
    emu_unlock();
    return 0;
}

void nvrm_emu_kernel_version(char *buf, size_t len)
{
    emu_init();
    emu_lock();
    snprintf(buf, len, "%s", emu.kernel_version);
    emu_unlock();
}

int nvrm_emu_set_gpus(const char *spec)
{
    if (!spec)
        return -EINVAL;
    emu_init();
    emu_lock();
    int rc = emu_parse_gpus_locked(spec);
    if (rc == 0)
        emu.gpus_explicit = 1;
    emu_unlock();
    return rc;
}

int nvrm_emu_sim_gpus(int count, const char *const *bus_ids)
{
    char spec[NVRM_EMU_MAX_GPUS * 24] = "";

    if (count < 1 || count > NVRM_EMU_MAX_GPUS || !bus_ids)
        return -EINVAL;
    for (int i = 0; i < count; i++) {
        size_t len = strlen(spec);
        if (!bus_ids[i] || strlen(bus_ids[i]) > 16)
            return -EINVAL;
        snprintf(spec + len, sizeof(spec) - len, "%s%s=%d", i ? "," : "", bus_ids[i],
                 count - 1 - i);
    }
    emu_init();
    emu_lock();
    int rc = emu.gpus_explicit ? 0 : emu_parse_gpus_locked(spec);
    emu_unlock();
    return rc;
}

int nvrm_emu_bind_memory(uint32_t h_client, uint32_t h_memory, int memfd,
                         off_t memfd_offset, uint64_t size)
{
    emu_init();
    emu_lock();
    int rc = -ENOENT;
    struct emu_obj *o = emu_find_obj(h_client, h_memory);
    if (o && o->mem) {
        int nfd = memfd >= 0 ? fcntl(memfd, F_DUPFD_CLOEXEC, 0) : -1;
        if (nfd < 0) {
            rc = -errno;
        } else {
            if (o->mem->memfd >= 0)
                emu.real.close(o->mem->memfd);
            o->mem->memfd = nfd;
            o->mem->memfd_off = memfd_offset;
            o->mem->size = size;
            rc = 0;
        }
    }
    emu_unlock();
    return rc;
}
