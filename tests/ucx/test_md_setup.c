/*
 * test_md_setup.c - the gdrx MD's first use on the simulated GPU: opening
 * it sets nothing up; the first registration or memory query does, once,
 * also when two threads race to it; a set-up that fails (a backend that
 * cannot open) makes the MD and its interface stand aside (they answer,
 * claim nothing, copy nothing) and close cleanly; resources are listed
 * where a backend the configuration allows can be told to work without
 * CUDA, and the MD's own configuration decides the backend at first use;
 * the interface's device names the current context's GPU.
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ucs/sys/topo/base/topo.h>

#include "ut_uct.h"

#define UT_LEN (3 * 65536)

/* gdrx's MD resources with the current environment. */
static unsigned ut_md_resources(void)
{
    uct_component_attr_t attr = {
        .field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
    };
    struct ut_uct u;

    if (ut_open_md(&u) != 0) {
        return 0;
    }
    CU_ASSERT_EQUAL(uct_component_query(u.component, &attr), UCS_OK);
    uct_md_close(u.md);
    return attr.md_resource_count;
}

/* A gdrdrv backend that cannot open: no such device node. */
static void ut_force_missing_gdrdrv(void)
{
    setenv("UCX_GDRX_BACKEND", "gdrdrv", 1);
    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
}

/* Listing follows the backends the configuration allows, judged without
 * CUDA: the simulated GPU serves through dmabuf, which counts where the
 * program initialised CUDA (as here); a gdrdrv whose device node is
 * missing, named by UCX_GDRX_BACKEND or, under auto, by libgdrx's
 * GDRX_BACKEND, lists nothing. */
static void test_resources_follow_backend(void)
{
    if (tc_setup(0) != 0) {
        return;
    }
    setenv("GDRX_BACKEND", "dmabuf", 1);
    CU_ASSERT_EQUAL(ut_md_resources(), 1);
    ut_force_missing_gdrdrv();
    CU_ASSERT_EQUAL(ut_md_resources(), 0);
    setenv("UCX_GDRX_BACKEND", "auto", 1);
    setenv("GDRX_BACKEND", "gdrdrv", 1);
    CU_ASSERT_EQUAL(ut_md_resources(), 0);
    setenv("GDRX_BACKEND", "dmabuf", 1);
    CU_ASSERT_EQUAL(ut_md_resources(), 1);
}

/* The MD's own configuration decides the backend at its first use: UCP
 * opens the MD with its config list applied (ucp_config_modify), which the
 * listing (environment, ucx.conf) does not see.  The environment forces a
 * gdrdrv that cannot open; the MD, opened with dmabuf, works. */
static void test_backend_is_the_mds(void)
{
    uct_md_mem_attr_t attr = {.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE};
    uct_md_config_t *md_config;
    struct ut_uct u;
    CUdeviceptr d;

    if ((tc_setup(0) != 0) || !(d = tc_alloc(UT_LEN))) {
        return;
    }
    ut_force_missing_gdrdrv();

    CU_ASSERT_EQUAL_FATAL(ut_open_md(&u), 0); /* for its component */
    uct_md_close(u.md);
    CU_ASSERT_EQUAL_FATAL(uct_md_config_read(u.component, NULL, NULL,
                                             &md_config), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(uct_config_modify(md_config,
                                            UT_CONFIG_NAME("BACKEND"),
                                            "dmabuf"), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(uct_md_open(u.component, "gdrx", md_config, &u.md),
                          UCS_OK);
    uct_config_release(md_config);
    CU_ASSERT_EQUAL(uct_md_mem_query(u.md, (void*)d, UT_LEN, &attr), UCS_OK);
    CU_ASSERT_EQUAL(attr.mem_type, UCS_MEMORY_TYPE_CUDA);
    uct_md_close(u.md);
    tc_free(d);
}

/* Attribute of CUDA device ordinal `device`. */
static int ut_device_attribute(CUdevice_attribute attribute, int device)
{
    CUdevice cu_device = -1;
    int value          = -1;

    CU_ASSERT_EQUAL_FATAL(tc.DeviceGet(&cu_device, device), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.DeviceGetAttribute(&value, attribute, cu_device),
                          CUDA_SUCCESS);
    return value;
}

/* The interface's device names the GPU of the current context by its PCI
 * bus id, as UCX's CUDA transports do (ucx_info -d's "System device"):
 * device 1 of two simulated GPUs. */
static void test_iface_sys_dev(void)
{
    uct_tl_resource_desc_t *resources;
    ucs_sys_bus_id_t bus_id;
    unsigned num_resources;
    struct ut_uct u;

    setenv("SIMCU_DEVICES", "2", 1);
    if (tc_setup(1) != 0) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(ut_open_md(&u), 0);
    CU_ASSERT_EQUAL_FATAL(uct_md_query_tl_resources(u.md, &resources,
                                                    &num_resources), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(num_resources, 1);
    CU_ASSERT_NOT_EQUAL_FATAL(resources[0].sys_device,
                              UCS_SYS_DEVICE_ID_UNKNOWN);
    CU_ASSERT_EQUAL(ucs_topo_get_device_bus_id(resources[0].sys_device,
                                               &bus_id), UCS_OK);
    CU_ASSERT_EQUAL(bus_id.domain,
                    ut_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 1));
    CU_ASSERT_EQUAL(bus_id.bus,
                    ut_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1));
    CU_ASSERT_EQUAL(bus_id.slot,
                    ut_device_attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 1));
    uct_release_tl_resource_list(resources);
    uct_md_close(u.md);
}

/* Open and close: no pin, no set-up, the counters still written. */
static void test_close_unused(void)
{
    struct ut_uct u;

    if (tc_setup(0) != 0) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(ut_open_md(&u), 0);
    uct_md_close(u.md);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "reg_calls"), 0);
    CU_ASSERT(ut_stats_has(u.stats, "events_source off"));
}

static void test_first_use_mem_query(void)
{
    uct_md_mem_attr_t attr = {.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE};
    CUdeviceptr d;
    struct ut_uct u;

    if (tc_setup(0) != 0) {
        return;
    }
    d = tc_alloc(UT_LEN);
    CU_ASSERT_EQUAL_FATAL(ut_open_md(&u), 0);
    CU_ASSERT_EQUAL(uct_md_mem_query(u.md, (void*)d, UT_LEN, &attr), UCS_OK);
    CU_ASSERT_EQUAL(attr.mem_type, UCS_MEMORY_TYPE_CUDA);
    uct_md_close(u.md);
    CU_ASSERT_FALSE(ut_stats_has(u.stats, "events_source off"));
    tc_free(d);
}

struct ut_racer {
    struct ut_uct     *u;
    CUdeviceptr       d;
    pthread_barrier_t *start;
    ucs_status_t      status;
    uct_mem_h         memh;
};

static void *ut_racer_main(void *arg)
{
    struct ut_racer *r = arg;

    /* as an MPI progress thread would: with the device's context current */
    r->status = (tc_setup(0) == 0) ? UCS_OK : UCS_ERR_NO_DEVICE;
    pthread_barrier_wait(r->start);
    if (r->status != UCS_OK) {
        return NULL;
    }
    r->status = uct_md_mem_reg(r->u->md, (void*)r->d, UT_LEN,
                               UCT_MD_MEM_ACCESS_ALL, &r->memh);
    return NULL;
}

/* Two threads register at once on a fresh MD: one set-up, both work. */
static void test_first_use_two_threads(void)
{
    struct ut_racer racers[2];
    pthread_barrier_t start;
    pthread_t threads[2];
    struct ut_uct u;
    int i;

    if (tc_setup(0) != 0) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(ut_open_md(&u), 0);
    pthread_barrier_init(&start, NULL, 2);
    for (i = 0; i < 2; ++i) {
        racers[i] = (struct ut_racer){.u = &u, .d = tc_alloc(UT_LEN),
                                      .start = &start};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[i], NULL, ut_racer_main,
                                             &racers[i]), 0);
    }
    for (i = 0; i < 2; ++i) {
        pthread_join(threads[i], NULL);
        CU_ASSERT_EQUAL(racers[i].status, UCS_OK);
    }
    for (i = 0; i < 2; ++i) {
        if (racers[i].status == UCS_OK) {
            CU_ASSERT_EQUAL(uct_md_mem_dereg(u.md, racers[i].memh), UCS_OK);
        }
    }
    uct_md_close(u.md);
    pthread_barrier_destroy(&start);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "reg_calls"), 2);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), 2);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "unpins"), 2);
    for (i = 0; i < 2; ++i) {
        tc_free(racers[i].d);
    }
}

/* The backend cannot open (found at the first use): the MD and its
 * interface stand aside rather than fail.  The interface opens with short
 * put and get only and figures any transport beats; memory queries claim
 * nothing, every time (the set-up is not retried); registrations succeed,
 * mapping nothing: a copy through them, or without a key, fails and
 * leaves the GPU memory as it was; nothing is pinned; the MD no longer
 * offers to allocate CUDA memory (UCT would take its refusal as the
 * allocation's failure instead of asking another MD); all closes cleanly. */
static void test_setup_failure_stands_aside(void)
{
    uct_md_mem_attr_t attr = {.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE};
    uct_allocated_memory_t mem;
    uct_md_attr_t md_attr;
    uint8_t buf[64], back[64];
    struct ut_reg r;
    struct ut_uct u;
    CUdeviceptr d;

    if ((tc_setup(0) != 0) || !(d = tc_alloc(UT_LEN))) {
        return;
    }
    tc_fill(d, UT_LEN, 3);
    memset(buf, 0xab, sizeof(buf));
    ut_force_missing_gdrdrv();
    CU_ASSERT_EQUAL_FATAL(ut_open(&u), 0);
    CU_ASSERT_EQUAL(u.attr.cap.flags, UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                      UCT_IFACE_FLAG_PUT_SHORT |
                                      UCT_IFACE_FLAG_GET_SHORT);
    CU_ASSERT(u.attr.latency.c >= 1e-3);
    CU_ASSERT(u.attr.overhead >= 1e-3);
    CU_ASSERT(u.attr.bandwidth.dedicated + u.attr.bandwidth.shared <= 1e6);

    CU_ASSERT_EQUAL(uct_md_mem_query(u.md, (void*)d, UT_LEN, &attr),
                    UCS_ERR_UNSUPPORTED);
    CU_ASSERT_EQUAL(uct_md_mem_query(u.md, (void*)d, UT_LEN, &attr),
                    UCS_ERR_UNSUPPORTED);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, UT_LEN, &r), UCS_OK);
    CU_ASSERT_NOT_EQUAL(uct_ep_put_short(u.ep, buf, sizeof(buf), d,
                                         r.rkey.rkey), UCS_OK);
    CU_ASSERT_NOT_EQUAL(uct_ep_get_short(u.ep, back, sizeof(back), d,
                                         r.rkey.rkey), UCS_OK);
    CU_ASSERT_NOT_EQUAL(uct_ep_put_short(u.ep, buf, sizeof(buf), d,
                                         UCT_INVALID_RKEY), UCS_OK);
    ut_dereg(&u, &r);
    CU_ASSERT(tc_check(d, UT_LEN, 3));
    CU_ASSERT_EQUAL(uct_md_query(u.md, &md_attr), UCS_OK);
    CU_ASSERT_FALSE(md_attr.cap.flags & UCT_MD_FLAG_ALLOC);
    CU_ASSERT_EQUAL(md_attr.cap.alloc_mem_types, 0);
    CU_ASSERT_EQUAL(ut_alloc(&u, 4096, &mem), UCS_ERR_UNSUPPORTED);
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), 0);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "allocs"), 0);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "iface put_short", "count"), 0);
    tc_free(d);
}

/* ---- where UCP puts gdrx next to gdr_copy and cuda_copy ----
 * UCP ranks the transports of its memory-type endpoint by their interface
 * figures alone (wireup/select.c of 1.13 - 1.23): small copies by the time
 * of a 4 KiB one, lat + overhead + 4096 / bw, large ones (RMA_BW) by that
 * of a 256 KiB one, with bw = dedicated + shared / processes a node.  gdrx
 * must take the small copies from gdr_copy at every process count: where
 * it does not, gdrx takes the host lane from cuda_copy, gdr_copy the CUDA
 * one and cuda_copy managed memory, three transports, and UCP 1.21 and
 * later abort every process.  It must leave the large ones to cuda_copy
 * on a node of one process.  The other transports' default figures, from
 * UCX's sources: */
struct ut_rank_figures {
    const char *name;
    double      lat, overhead, dedicated, shared; /* s, s, B/s, B/s */
};

static const struct ut_rank_figures ut_gdr_copy_figures[] = {
    { "gdr_copy 1.13", 1e-6,   0, 0,              6911.0 * 1048576 },
    { "gdr_copy 1.15", 1.4e-6, 0, 0,              6911.0 * 1048576 },
    { "gdr_copy 1.19", 0.4e-6, 0, 250.0 * 1048576, 6911.0 * 1048576 },
};
static const struct ut_rank_figures ut_cuda_copy_figures = {
    "cuda_copy", 8e-6, 0, 0, 10000.0 * 1048576
};

static double ut_copy_time(double lat, double overhead, double dedicated,
                           double shared, unsigned ppn, double size)
{
    /* UCP 1.22's worker adds 100 ns to every interface's latency */
    return lat + 100e-9 + overhead + size / (dedicated + shared / ppn);
}

static void test_rank_figures(void)
{
    struct ut_uct u;
    double g, other;

    if (tc_setup(0) != 0) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(ut_open(&u), 0);
    for (unsigned ppn = 1; ppn <= 4096; ppn += (ppn < 128) ? 1 : ppn / 8) {
        g = ut_copy_time(u.attr.latency.c, u.attr.overhead, u.attr.bandwidth.dedicated,
                         u.attr.bandwidth.shared, ppn, 4096);
        for (size_t i = 0; i < sizeof(ut_gdr_copy_figures) / sizeof(ut_gdr_copy_figures[0]);
             ++i) {
            const struct ut_rank_figures *f = &ut_gdr_copy_figures[i];

            other = ut_copy_time(f->lat, f->overhead, f->dedicated, f->shared, ppn, 4096);
            /* strictly faster, by more than UCP's 1e-6 comparison slack */
            if (!(g < other * (1 - 1e-5))) {
                fprintf(stderr, "    %u processes: gdrx %.4g s, %s %.4g s at 4 KiB\n",
                        ppn, g, f->name, other);
                CU_FAIL("gdr_copy would take the small copies");
                break;
            }
        }
    }
    g     = ut_copy_time(u.attr.latency.c, u.attr.overhead, u.attr.bandwidth.dedicated,
                         u.attr.bandwidth.shared, 1, 262144);
    other = ut_copy_time(ut_cuda_copy_figures.lat, ut_cuda_copy_figures.overhead,
                         ut_cuda_copy_figures.dedicated, ut_cuda_copy_figures.shared, 1,
                         262144);
    CU_ASSERT(g > other);
    ut_close(&u);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_resources_follow_backend),
    GDRX_TEST_CASE(test_backend_is_the_mds),
    GDRX_TEST_CASE(test_iface_sys_dev),
    GDRX_TEST_CASE(test_close_unused),
    GDRX_TEST_CASE(test_first_use_mem_query),
    GDRX_TEST_CASE(test_first_use_two_threads),
    GDRX_TEST_CASE(test_setup_failure_stands_aside),
    GDRX_TEST_CASE(test_rank_figures),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_md_setup", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
