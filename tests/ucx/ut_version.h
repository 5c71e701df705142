/*
 * ut_version.h - what the gdrx UCX suites expect differently of the UCX
 * releases they run on, in one place (the plugin's own differences are all
 * in ucx_plugin/uct_gdrx_compat.h).  Each item says which releases were
 * run to find it.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UT_VERSION_H
#define UT_VERSION_H

#include <uct/api/version.h>

#define UT_UCX_AT_LEAST(_maj, _min) (UCT_API >= UCT_VERSION(_maj, _min))

/* A gdrx setting's name for uct_config_modify / ucp_config_modify: up to
 * 1.18 the field's own name ("BACKEND"); from 1.22 the name with the
 * table's prefix ("GDRX_BACKEND"; 1.22's and 1.23's parser match the
 * prefixed name only: run on 1.13 and 1.23, read in 1.16's and 1.22's
 * sources). */
#if UT_UCX_AT_LEAST(1, 22)
#  define UT_CONFIG_NAME(_name) "GDRX_" _name
#else
#  define UT_CONFIG_NAME(_name) _name
#endif

/* UCM's memory-type events carry the memory's system device and flags
 * from 1.22. */
#define UT_UCM_EVENT_HAS_MEM_ATTRS UT_UCX_AT_LEAST(1, 22)

/* CUDA buffers UCP allocates through gdrx's MD by itself (and registers,
 * a pin each) with UCX_TLS=self,gdrx: none on 1.13; from 1.22 on the v2
 * protocols do: a 1-byte probe when the first endpoint selects its
 * rendezvous protocols (ucp_mm_get_alloc_md_index), and 512 MiB of
 * rendezvous fragments at the first message that needs them.  Two in
 * test_offsets_one_pin_v2, one in test_mem_map_cuda on 1.23.0~rc1 and on
 * 1.22.0 (with its CUDA modules, cuda_copy loaded or not, and without
 * them).  _n: the count there. */
#if UT_UCX_AT_LEAST(1, 22)
#  define UT_UCP_OWN_ALLOCS(_n) (_n)
#else
#  define UT_UCP_OWN_ALLOCS(_n) 0
#endif

/* A message's registration is the whole extent UCX's memory-type cache
 * holds for its buffer (MEMTYPE_REG_WHOLE_ALLOC_TYPES=cuda): a stale
 * extent over a live allocation registers as a span (test_span's stale
 * cases, one each) on 1.23.0~rc1; 1.13's default protocols register the
 * message's buffer only (no span).  Releases in between not run. */
#define UT_UCP_REGISTERS_WHOLE_EXTENT UT_UCX_AT_LEAST(1, 23)

#endif
