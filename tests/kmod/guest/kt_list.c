// SPDX-License-Identifier: MIT OR GPL-2.0
/* kt_list.c - the table of gdrdrv guest scenarios. */
#include "kt.h"

int kt_sc_version(void);
int kt_sc_pin_map_copy(void);
int kt_sc_wc_pat(void);
int kt_sc_handles(void);
int kt_sc_pin_args(void);
int kt_sc_free_while_mapped(void);
int kt_sc_free_during_copy(void);
int kt_sc_free_during_unpin(void);
int kt_sc_unpin_close_exit(void);
int kt_sc_fork(void);
int kt_sc_fd_passing(void);
int kt_sc_threads(void);
int kt_sc_fuzz(void);
int kt_sc_cycles(void);
int kt_sc_large_map(void);
int kt_sc_free_during_touch(void);
int kt_sc_put_pages_error(void);
int kt_sc_handles_wrap(void);
int kt_sc_map_readonly(void);
int kt_sc_memcg_account(void);
int kt_sc_wc_conflict(void);
int kt_sc_caching(void);

const struct kt_scenario kt_scenarios[] = {
	{ "get_version", kt_sc_version },
	{ "pin_map_copy", kt_sc_pin_map_copy },
	{ "wc_pat", kt_sc_wc_pat },
	{ "handles_disjoint", kt_sc_handles },
	{ "pin_args", kt_sc_pin_args },
	{ "free_while_mapped", kt_sc_free_while_mapped },
	{ "free_during_copy", kt_sc_free_during_copy },
	{ "free_during_unpin", kt_sc_free_during_unpin },
	{ "unpin_close_exit", kt_sc_unpin_close_exit },
	{ "fork", kt_sc_fork },
	{ "fd_passing", kt_sc_fd_passing },
	{ "threads16", kt_sc_threads },
	{ "fuzz", kt_sc_fuzz },
	{ "cycles100k", kt_sc_cycles },
	{ "large_map", kt_sc_large_map },
	{ "free_during_touch", kt_sc_free_during_touch },
	{ "put_pages_error", kt_sc_put_pages_error },
	{ "handles_wrap", kt_sc_handles_wrap },
	{ "map_readonly", kt_sc_map_readonly },
	{ "memcg_account", kt_sc_memcg_account },
	{ "wc_conflict", kt_sc_wc_conflict },
	{ "caching", kt_sc_caching },
	{ NULL, NULL },
};
