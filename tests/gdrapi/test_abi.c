/*
 * test_abi.c - what a program built against NVIDIA gdrcopy needs from the
 * library to run on ours unchanged: the soname libgdrapi.so.2, every
 * function of the 2.x API exported, and, like gdrcopy's (which has no
 * version script), no symbol versions: a reference from a program linked
 * against either binds to the other.  Nothing else is exported but the
 * marker gdrx_gdrapi_impl.  Checked in the files themselves (ELF), in this
 * program's own references (it is linked with -lgdrapi) and through the
 * dynamic loader.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "elf_dyn.h"
#include "test_gdrapi.h"

/* gdrcopy 2.6's public functions, every one since 2.0 included. */
static const char *const api[] = {
    "gdr_open", "gdr_close", "gdr_pin_buffer", "gdr_pin_buffer_v2", "gdr_unpin_buffer",
    "gdr_get_callback_flag", "gdr_get_info", "gdr_get_info_v2", "gdr_map", "gdr_map_v2",
    "gdr_unmap", "gdr_copy_to_mapping", "gdr_copy_from_mapping", "gdr_runtime_get_version",
    "gdr_driver_get_version", "gdr_get_attribute", "gdr_get_mapping_type_string",
};
#define NAPI (sizeof(api) / sizeof(api[0]))
#define MARKER "gdrx_gdrapi_impl"
#define SONAME "libgdrapi.so.2"

static int api_index(const char *name)
{
    for (size_t i = 0; i < NAPI; i++)
        if (strcmp(api[i], name) == 0)
            return (int)i;
    return -1;
}

/* The path of the libgdrapi.so.2 this process loaded, into buf. */
static int loaded_path(char *buf, size_t len)
{
    struct link_map *lm = NULL;
    void *h = dlopen(SONAME, RTLD_NOW | RTLD_NOLOAD);

    if (!h)
        return -1;
    int rc = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm ? 0 : -1;
    if (rc == 0)
        snprintf(buf, len, "%s", lm->l_name);
    dlclose(h);
    return rc;
}

static void test_library_exports(void)
{
    char path[4096];
    struct elf_sym s;
    int seen[NAPI] = { 0 }, marker = 0, others = 0, versioned = 0;

    GDRX_REQUIRE(loaded_path(path, sizeof(path)) == 0);
    struct elf_dyn *e = elf_dyn_open(path);
    GDRX_REQUIRE(e != NULL);
    const char *soname = elf_dyn_soname(e);
    CU_ASSERT_PTR_NOT_NULL(soname);
    if (soname)
        CU_ASSERT_STRING_EQUAL(soname, SONAME);
    CU_ASSERT_FALSE(elf_dyn_has_verdef(e));
    CU_ASSERT(elf_dyn_needs(e, "libgdrx.so.0"));
    for (size_t i = 1; elf_dyn_sym(e, i, &s) == 0; i++) {
        if (!s.defined || !s.global)
            continue;
        int k = api_index(s.name);
        if (k >= 0 && s.function)
            seen[k]++;
        else if (strcmp(s.name, MARKER) == 0 && !s.function)
            marker++;
        else if (others++ < 5)
            fprintf(stderr, "    also exported: %s\n", s.name);
        versioned += s.version > 1;
    }
    for (size_t k = 0; k < NAPI; k++) {
        if (seen[k] != 1)
            fprintf(stderr, "    %s exported %d times\n", api[k], seen[k]);
        CU_ASSERT_EQUAL(seen[k], 1);
    }
    CU_ASSERT_EQUAL(marker, 1);
    CU_ASSERT_EQUAL(others, 0);
    CU_ASSERT_EQUAL(versioned, 0);
    elf_dyn_close(e);
}

/* This program was linked against the library: it needs it by soname and
 * its references to gdr_* carry no version. */
static void test_program_references(void)
{
    struct elf_sym s;
    int refs = 0, versioned = 0;
    struct elf_dyn *e = elf_dyn_open("/proc/self/exe");

    GDRX_REQUIRE(e != NULL);
    CU_ASSERT(elf_dyn_needs(e, SONAME));
    for (size_t i = 1; elf_dyn_sym(e, i, &s) == 0; i++) {
        if (s.defined || strncmp(s.name, "gdr_", 4) != 0)
            continue;
        refs++;
        CU_ASSERT(api_index(s.name) >= 0);
        if (s.version > 1) {
            fprintf(stderr, "    %s referenced with version index %d\n", s.name, s.version);
            versioned++;
        }
    }
    CU_ASSERT(refs >= 10);
    CU_ASSERT_EQUAL(versioned, 0);
    elf_dyn_close(e);
}

/* dlopen by soname, as gdrcopy's dlopen users do (NCCL, NVSHMEM): every
 * function resolves, none under a version, and the marker tells ours. */
static void test_dlopen(void)
{
    void *h = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);

    GDRX_REQUIRE(h != NULL);
    for (size_t k = 0; k < NAPI; k++) {
        CU_ASSERT_PTR_NOT_NULL(dlsym(h, api[k]));
        CU_ASSERT_PTR_NULL(dlvsym(h, api[k], "GDRX_0.1"));
    }
    const char *impl = dlsym(h, MARKER);
    CU_ASSERT_PTR_NOT_NULL(impl);
    if (impl)
        CU_ASSERT_EQUAL(strncmp(impl, "gdrx ", 5), 0);
    void (*version)(int *, int *);
    void *fn = dlsym(h, "gdr_runtime_get_version");
    memcpy(&version, &fn, sizeof(fn));
    int major = 0, minor = 0;
    if (fn)
        version(&major, &minor);
    CU_ASSERT_EQUAL(major, 2);
    CU_ASSERT_EQUAL(minor, 6);
    dlclose(h);
}

const struct gdrx_test_case gapi_abi_cases[] = {
    GDRX_TEST_CASE(test_library_exports),
    GDRX_TEST_CASE(test_program_references),
    GDRX_TEST_CASE(test_dlopen),
    GDRX_TEST_END,
};
