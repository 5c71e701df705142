/*
 * test_nvrm_unit.c - the nvrm backend's parts on their own (built into
 * this program, not through libgdrx): status mapping, version policy and
 * the layout rows here; the ioctl trace in test_nvrm_unit_trace.c, the
 * VMM import route and the view (BAR1 window) rules in
 * test_nvrm_unit_view.c.
 * Runs under the RM-ioctl emulator like the end-to-end suite.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>

#include "nvrm_test.h"
#include "nvrm_client.h"
#include "nvrm_layout.h"
#include "nvrm_rm.h"

extern const struct gdrx_test_case nvrm_unit_trace_cases[];
extern const struct gdrx_test_case nvrm_unit_view_cases[];

static void test_status_errno(void)
{
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_OK), 0);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_INSUFFICIENT_PERMISSIONS), -EPERM);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_INSUFFICIENT_RESOURCES), -ENOSPC);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_NO_MEMORY), -ENOMEM);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_INVALID_OBJECT_HANDLE), -ENOENT);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_NOT_SUPPORTED), -EOPNOTSUPP);
    CU_ASSERT_EQUAL(nvrm_status_errno(NVRM_ERR_STATE_IN_USE), -EBUSY);
    CU_ASSERT_EQUAL(nvrm_status_errno(0x12345), -EIO);
    CU_ASSERT_STRING_EQUAL(nvrm_status_name(NVRM_ERR_INVALID_CLIENT), "NV_ERR_INVALID_CLIENT");
    CU_ASSERT_PTR_NOT_NULL(nvrm_status_name(0x12345));
}

static void test_version_policy(void)
{
    CU_ASSERT(nvrm_version_known("580.159.04"));
    CU_ASSERT(nvrm_version_known("580.142"));
    CU_ASSERT(nvrm_version_known("580"));
    CU_ASSERT(nvrm_version_known("575.64.05"));
    CU_ASSERT(nvrm_version_known("535.43.02"));
    CU_ASSERT(!nvrm_version_known("530.41.03"));
    CU_ASSERT(!nvrm_version_known("590.1"));
    CU_ASSERT(!nvrm_version_known("999.10.01"));
    CU_ASSERT(!nvrm_version_known("5800.1"));
    CU_ASSERT(!nvrm_version_known("580x.1"));
    CU_ASSERT(!nvrm_version_known("580.1x"));
    CU_ASSERT(!nvrm_version_known(""));
    CU_ASSERT(!nvrm_version_known("abc"));
}

/* The rows: what the headers of each branch's tags said (docs/nvrm.md,
 * "Driver branches"), picked by the version, 550 split inside. */
static void test_layout_rows(void)
{
    const struct nvrm_layout *l;

    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("535.288.01"));
    CU_ASSERT_EQUAL(l->status, NVRM_BRANCH_CHECKED);
    CU_ASSERT_EQUAL(l->uvm_map->size, 1200);
    CU_ASSERT_EQUAL(l->uvm_map->h_memory_off, 1192);
    CU_ASSERT_EQUAL(l->dmabuf->size, 2600);
    CU_ASSERT_EQUAL(l->export_info->size, 76);
    CU_ASSERT_EQUAL(l->memory_alloc_size, 120);
    CU_ASSERT_EQUAL(l->surface_size, NVRM_SURFACE_SIZE_4K);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("550.40.07"));
    CU_ASSERT_EQUAL(l->uvm_map->max_gpus, 32);
    CU_ASSERT_PTR_NULL(nvrm_layout_for("550.40.20")); /* between the two layouts: unknown */
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("550.40.53"));
    CU_ASSERT_EQUAL(l->uvm_map->max_gpus, 256);
    CU_ASSERT_EQUAL(l->dmabuf->handles_off, 32);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("570.86.15"));
    CU_ASSERT_EQUAL(l->dmabuf->handles_off, 36);
    CU_ASSERT_EQUAL(l->surface_size, NVRM_SURFACE_SIZE_4K);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l = nvrm_layout_for("580.159.04"));
    CU_ASSERT_EQUAL(l->status, NVRM_BRANCH_VALIDATED);
    /* validated up to the version run on hardware, no further */
    CU_ASSERT_EQUAL(nvrm_layout_for("580.65.06")->status, NVRM_BRANCH_VALIDATED);
    CU_ASSERT_EQUAL(nvrm_layout_for("580.159.05")->status, NVRM_BRANCH_CHECKED);
    CU_ASSERT_EQUAL(nvrm_layout_for("580.211.01")->status, NVRM_BRANCH_CHECKED);
    CU_ASSERT_EQUAL(l->surface_size, NVRM_SURFACE_SIZE_LO_HI);
    CU_ASSERT_EQUAL(l->uvm_map->size, sizeof(struct nvrm_uvm_map_external));
    /* rows in order, none overlapping, every shape's tail inside its size */
    for (size_t i = 0; i < nvrm_layout_count(); i++) {
        l = nvrm_layout_at(i);
        CU_ASSERT(l->lo <= l->hi);
        if (i)
            CU_ASSERT(nvrm_layout_at(i - 1)->hi < l->lo);
        CU_ASSERT(l->uvm_map->status_off + 4 <= l->uvm_map->size);
        CU_ASSERT(l->dmabuf->status_off + 4 <= l->dmabuf->size);
        CU_ASSERT(l->export_info->metadata_off + NVRM_EXPORT_METADATA_SIZE <=
                  l->export_info->size);
    }
}

static const struct gdrx_test_case unit_cases[] = {
    GDRX_TEST_CASE(test_status_errno),
    GDRX_TEST_CASE(test_version_policy),
    GDRX_TEST_CASE(test_layout_rows),
    GDRX_TEST_END,
};

/* The trace reads the active row's layouts: 580's, as the emulator's
 * default version. */
static int unit_init(void)
{
    nvrm_layout_set_active(nvrm_layout_for("580.159.04"));
    return 0;
}

static const struct gdrx_test_suite suites[] = {
    { "nvrm_unit", unit_init, NULL, unit_cases },
    { "nvrm_unit_trace", unit_init, NULL, nvrm_unit_trace_cases },
    { "nvrm_unit_view", unit_init, NULL, nvrm_unit_view_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    if (nvt_under_emulator(argv) != 0)
        return 2;
    return gdrx_test_main(argc, argv, suites);
}
