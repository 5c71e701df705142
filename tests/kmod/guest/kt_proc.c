// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_proc.c - a gdrdrv file and its mappings belong to the process that
 * opened it: a fork child and a process that received the fd over a unix
 * socket can neither see the mappings nor use the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

int kt_sc_fork(void);
int kt_sc_fd_passing(void);

/* What a process that is not the opener can do with @fd: nothing. */
static int kt_foreign_use(int fd, uint64_t h, uint64_t va)
{
	struct gdrdrv_get_version_args v;
	uint64_t h2;

	KT_CHECK(kt_ioctl(fd, GDRDRV_IOC_GET_VERSION, &v) == -EACCES, "version");
	KT_CHECK(kt_pin(fd, va, KT_CHUNK, &h2) == -EACCES, "pin");
	KT_CHECK(kt_unpin(fd, h) == -EACCES, "unpin");
	KT_CHECK(!kt_map(fd, h, KT_CHUNK) && errno == EACCES, "mmap");
	return 0;
}

static int kt_wait_ok(pid_t pid)
{
	int status;

	KT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	return 0;
}

int kt_sc_fork(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 32 << 20;
	volatile uint32_t *map;
	uint64_t h;
	pid_t pid;
	int fd = kt_open();

	KT_CHECK(fd >= 0, "open");
	if (kt_alloc_pin_map(fd, va, len, off, &h, &map))
		return -1;
	kt_fill(map, len, 21);
	pid = fork();
	KT_CHECK(pid >= 0, "fork");
	if (!pid) {
		uint32_t v;

		/* VM_DONTCOPY: the address is simply not mapped in the child. */
		if (kt_try_read(map, &v) != SIGSEGV)
			_exit(3);
		if (kt_foreign_use(fd, h, va))
			_exit(4);
		close(fd);
		_exit(0);
	}
	if (kt_wait_ok(pid))
		return -1;
	/* The parent is untouched by the child's attempts and exit. */
	KT_CHECK(kt_verify(map, len, 21) < 0, "parent data after fork");
	KT_OK(munmap((void *)map, len));
	KT_OK(kt_unpin(fd, h));
	KT_OK(kt_free(va));
	close(fd);
	return 0;
}

static int kt_send_fd(int sock, int fd)
{
	char byte = 'x', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

static int kt_recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * The receiver cannot use the fd; and when the opener closes its copy
 * first, the receiver's close is the last one and releases everything.
 */
int kt_sc_fd_passing(void)
{
	const uint64_t va = KT_VA_BASE, len = 2 * KT_CHUNK, off = 36 << 20;
	int sv[2], fd;
	uint64_t h;
	pid_t pid;
	char go;

	KT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();			/* an unrelated process, forked first */
	KT_CHECK(pid >= 0, "fork");
	if (!pid) {
		int rfd = kt_recv_fd(sv[1]);
		uint64_t rh;

		if (rfd < 0 || read(sv[1], &rh, sizeof(rh)) != sizeof(rh))
			_exit(2);
		if (kt_foreign_use(rfd, rh, va))
			_exit(3);
		/* Wait until the opener has closed its copy, then close ours. */
		if (read(sv[1], &go, 1) != 1)
			_exit(4);
		close(rfd);
		_exit(0);
	}
	fd = kt_open();
	KT_CHECK(fd >= 0, "open");
	KT_OK(kt_alloc(va, len, off, 0));
	KT_OK(kt_pin(fd, va, len, &h));
	KT_OK(kt_send_fd(sv[0], fd));
	KT_CHECK(write(sv[0], &h, sizeof(h)) == sizeof(h), "send handle");
	close(fd);
	KT_CHECK(kt_stat("pins") == 1, "pin released while the receiver holds the fd");
	KT_CHECK(write(sv[0], "g", 1) == 1, "go");
	if (kt_wait_ok(pid))
		return -1;
	KT_CHECK(kt_stat("pins") == 0 && kt_stat("files") == 0, "receiver's close did not release");
	KT_OK(kt_free(va));
	close(sv[0]);
	close(sv[1]);
	return 0;
}
