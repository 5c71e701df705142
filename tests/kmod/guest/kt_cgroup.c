// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_cgroup.c - gdrdrv's allocations are charged to the memory cgroup of
 * the process that makes them: a process limited to 1 MiB more than it
 * uses cannot make 40,000 pins (their kernel objects need several MiB).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_memcg_account(void);

#define KT_CG		"/tmp/kt-cgroup"
#define KT_CG_CHILD	KT_CG "/pins"
#define KT_CG_PINS	40000

static int kt_write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fputs(s, f) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* The child: joins the limited group, then pins until refused. */
static int kt_cg_child(uint64_t va)
{
	char buf[32];
	long long cur;
	uint64_t h;
	int fd, i;

	snprintf(buf, sizeof(buf), "%d\n", getpid());
	if (kt_write_str(KT_CG_CHILD "/cgroup.procs", buf))
		return 2;
	fd = kt_open();
	cur = kt_read_num(KT_CG_CHILD "/memory.current");
	if (fd < 0 || cur < 0)
		return 2;
	snprintf(buf, sizeof(buf), "%lld\n", cur + (1 << 20));
	if (kt_write_str(KT_CG_CHILD "/memory.max", buf))
		return 2;
	for (i = 0; i < KT_CG_PINS; i++) {
		int ret = kt_pin(fd, va, KT_CHUNK, &h);

		if (ret == -ENOMEM)
			return 0;		/* refused: the pins were charged */
		if (ret)
			return 3;
	}
	return 1;				/* nothing was charged */
}

int kt_sc_memcg_account(void)
{
	const uint64_t va = KT_VA_BASE, off = 48 << 20;
	int status;
	pid_t pid;

	mkdir(KT_CG, 0755);
	KT_CHECK(mount("cgroup2", KT_CG, "cgroup2", 0, NULL) == 0 || errno == EBUSY,
		 "mount cgroup2: %s", strerror(errno));
	KT_OK(kt_write_str(KT_CG "/cgroup.subtree_control", "+memory"));
	KT_CHECK(mkdir(KT_CG_CHILD, 0755) == 0 || errno == EEXIST, "mkdir: %s",
		 strerror(errno));
	fflush(NULL);
	pid = fork();
	KT_CHECK(pid >= 0, "fork");
	if (!pid) {
		/* Its GPU memory, made before it joins the limited group. */
		_exit(kt_alloc(va, KT_CHUNK, off, 0) ? 2 : kt_cg_child(va));
	}
	KT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	/* Refused with ENOMEM, or killed by the group's OOM killer. */
	KT_CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
		 (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL),
		 "child status 0x%x (exit 1: all %d pins fitted in 1 MiB)", status,
		 KT_CG_PINS);
	KT_OK(kt_free_of(va, pid));
	KT_OK(rmdir(KT_CG_CHILD));
	umount(KT_CG);
	return 0;
}
