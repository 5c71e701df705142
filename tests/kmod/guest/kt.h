/* SPDX-License-Identifier: MIT OR GPL-2.0 */
/*
 * kt.h - helpers shared by the gdrdrv guest scenarios (run inside the qemu
 * guest by tests/kmod/guest-init.sh; see tests/kmod/README).
 */
#ifndef KT_H
#define KT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gdrdrv_ioctl.h"
#include "mock_nvp2p_ioctl.h"

/* Fake GPU virtual addresses: keys for the mock, never dereferenced. */
#define KT_VA_BASE	0x200000000000ull
#define KT_CHUNK	MOCK_NVP2P_CHUNK

struct kt {
	int mock;		/* /dev/mock_nvp2p */
	uint64_t bar_phys;
	uint64_t bar_size;
	bool persistent;	/* mode of the loaded gdrdrv */
	char bar_path[320];	/* sysfs resource2_wc of the ivshmem device */
};

extern struct kt kt;

/* Report a failed check and make the scenario fail. */
#define KT_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "  check failed at %s:%d: %s: ",	\
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			return -1;					\
		}							\
	} while (0)

#define KT_OK(expr) KT_CHECK((expr) == 0, "%s", #expr)

int kt_setup(void);
int kt_open(void);				/* /dev/gdrdrv, or -errno */
int kt_ioctl(int fd, unsigned long cmd, void *arg);	/* 0 or -errno */
int kt_pin(int fd, uint64_t addr, uint64_t size, uint64_t *handle);
int kt_unpin(int fd, uint64_t handle);
int kt_info(int fd, uint64_t handle, struct gdrdrv_get_info_v2_args *info);
int kt_cb_flag(int fd, uint64_t handle, uint32_t *flag);
/* mmap a pin: the mapping, or NULL with errno set. */
void *kt_map(int fd, uint64_t handle, size_t size);

int kt_alloc(uint64_t va, uint64_t size, uint64_t bar_off, uint32_t flags);
int kt_free(uint64_t va);
/*
 * The usual start of a scenario: allocate @len bytes of GPU memory at @va
 * (BAR offset @off), pin them on @fd and map the pin.  0, or -1 after
 * reporting the step that failed.
 */
int kt_alloc_pin_map(int fd, uint64_t va, uint64_t len, uint64_t off,
		     uint64_t *h, volatile uint32_t **map);
int kt_free_of(uint64_t va, int tgid);	/* another process's */
int kt_config(uint32_t cb_delay_ms, int32_t fail_next_get);
int kt_config3(uint32_t cb_delay_ms, int32_t fail_next_get, uint32_t free_in_get);
int kt_mock_stats(struct mock_stats_args *s);
/* Put failure and callback holding (mock_config_args); other knobs 0. */
int kt_config_put(int32_t fail_next_put, uint32_t cb_hold);
int kt_probe(struct mock_probe_args *p);
int kt_cb_release(void);
/* Handshakes with the mock: wait until a callback is held, or until
 * put_pages calls begun exceed @before. */
int kt_wait_cb_held(void);
int kt_wait_puts_entered(uint64_t before);

/* The BAR seen directly (write-combined), for aliasing checks. */
volatile uint32_t *kt_bar_map(void);
void kt_bar_unmap(volatile uint32_t *bar);

/* Read or write one word; returns the signal taken (SIGBUS...) or 0. */
int kt_try_read(const volatile uint32_t *p, uint32_t *out);
int kt_try_write(volatile uint32_t *p, uint32_t v);
void kt_wmb(void);

void kt_fill(volatile uint32_t *p, size_t bytes, uint32_t seed);
/* Index of the first word differing from kt_fill(seed), or -1. */
long kt_verify(const volatile uint32_t *p, size_t bytes, uint32_t seed);

long long kt_stat(const char *name);	/* /sys/class/misc/gdrdrv/stats/ */
long long kt_read_num(const char *path);	/* or -1 */
int kt_write_num(const char *path, unsigned long long v);	/* 0, -errno */
/* Every live gdrdrv and mock counter is zero. */
int kt_expect_idle(void);
uint64_t kt_now_ms(void);

/* Scenarios: 0 pass, -1 fail. */
typedef int (*kt_scenario_fn)(void);
struct kt_scenario {
	const char *name;
	kt_scenario_fn fn;
};
extern const struct kt_scenario kt_scenarios[];

#endif /* KT_H */
