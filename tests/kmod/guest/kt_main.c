// SPDX-License-Identifier: MIT OR GPL-2.0
/*
 * kt_main.c - runs gdrdrv guest scenarios, each in its own process with a
 * time limit, and checks after each that nothing leaked.
 *
 *   kt NAME...     run the named scenarios ("all" runs every one)
 *   kt --idle      exit 0 if every live gdrdrv and mock counter is 0 and
 *                  the mock saw no misuse (after other test programs)
 *
 * Output for the host (tests/kmod/run-qemu.sh parses it):
 *   @@RESULT NAME[MODE] PASS|FAIL [why]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

#define KT_TIMEOUT_S 240

static int kt_run_child(const struct kt_scenario *sc, char *why, size_t len)
{
	uint64_t deadline = kt_now_ms() + KT_TIMEOUT_S * 1000ull;
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	if (!pid)
		_exit(sc->fn() ? 1 : 0);
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (kt_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			snprintf(why, len, "timed out after %d s", KT_TIMEOUT_S);
			return -1;
		}
		usleep(20000);
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, len, "killed by signal %d", WTERMSIG(status));
		return -1;
	}
	if (WEXITSTATUS(status)) {
		snprintf(why, len, "check failed");
		return -1;
	}
	/* The scenario is over: every object it made must be gone. */
	if (kt_expect_idle()) {
		snprintf(why, len, "leaked objects");
		return -1;
	}
	return 0;
}

static const struct kt_scenario *kt_find(const char *name)
{
	for (const struct kt_scenario *sc = kt_scenarios; sc->name; sc++)
		if (!strcmp(sc->name, name))
			return sc;
	return NULL;
}

static int kt_run(const struct kt_scenario *sc)
{
	const char *mode = kt.persistent ? "persistent" : "callback";
	char why[128] = "";
	uint64_t t0 = kt_now_ms();
	int ret = kt_run_child(sc, why, sizeof(why));

	printf("@@RESULT %s[%s] %s %s(%llu ms)\n", sc->name, mode,
	       ret ? "FAIL" : "PASS", why,
	       (unsigned long long)(kt_now_ms() - t0));
	fflush(stdout);
	return ret;
}

int main(int argc, char **argv)
{
	int failed = 0, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = kt_setup();
	if (ret) {
		printf("@@RESULT setup FAIL %s\n", strerror(-ret));
		return 1;
	}
	if (argc == 2 && !strcmp(argv[1], "--idle"))
		return kt_expect_idle() ? 1 : 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "all")) {
			for (const struct kt_scenario *sc = kt_scenarios; sc->name; sc++)
				failed += kt_run(sc) != 0;
			continue;
		}
		const struct kt_scenario *sc = kt_find(argv[i]);

		if (!sc) {
			printf("@@RESULT %s FAIL unknown scenario\n", argv[i]);
			failed++;
			continue;
		}
		failed += kt_run(sc) != 0;
	}
	return failed ? 1 : 0;
}
