/*
 * test_info.c - gdrx-info as a user meets it, on the simulated GPU: its
 * exit statuses and usage errors, the verdict and reason for each backend
 * (the nvrm one under the RM emulator, with a validated and a refused
 * driver), the fixes it prints, and the host facts it reads (driver
 * flavour, Secure Boot, BAR1, MPS) from a fake root given by GDRX_INFO_ROOT.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "config.h"

#include "gdrx_test.h"

static char out[1 << 18], flat[1 << 18];

/* out with line breaks inside wrapped messages (a newline and the next
 * line's indentation) turned into one space, for matching long messages. */
static void flatten(void)
{
    size_t j = 0;

    for (size_t i = 0; out[i] && j + 1 < sizeof(flat); i++) {
        if (out[i] == '\n' && out[i + 1] == ' ') {
            while (out[i + 1] == ' ')
                i++;
            flat[j++] = ' ';
        } else {
            flat[j++] = out[i];
        }
    }
    flat[j] = '\0';
}

static void build_path(char *buf, size_t size, const char *rel)
{
    const char *top = getenv("GDRX_TEST_BUILDDIR");
    snprintf(buf, size, "%s/%s", top ? top : ".", rel);
}

/* Run `env ENV EXE ARGS` from /, stdout and stderr into out; the exit
 * status, or -1 if it did not exit normally. */
static int run_info(const char *exe, const char *env, const char *args)
{
    char cmd[4096];

    snprintf(cmd, sizeof(cmd), "cd / && env -u GDRX_BACKEND -u GDRX_LOG_LEVEL -u LD_PRELOAD "
             "-u CUDA_MPS_PIPE_DIRECTORY %s '%s' %s 2>&1", env, exe, args);
    int st = gdrx_test_capture(cmd, out, sizeof(out));
    flatten();
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The same with the build tree's gdrx-info */
static int info(const char *env, const char *args)
{
    char exe[512];

    build_path(exe, sizeof(exe), "tools/gdrx-info");
    return run_info(exe, env, args);
}

/* in the output as printed, or with its wrapped lines joined */
#define HAS(s) CU_ASSERT_TRUE(strstr(out, (s)) || strstr(flat, (s)))
#define LACKS(s) CU_ASSERT_TRUE(!strstr(out, (s)) && !strstr(flat, (s)))

static void test_usage_errors(void)
{
    CU_ASSERT_EQUAL(info("", "--bogus"), 2);
    HAS("gdrx-info: unknown option '--bogus'\n");
    HAS("usage: gdrx-info [-j|--json]");
    LACKS("result:");
    CU_ASSERT_EQUAL(info("", "-x"), 2);
    HAS("gdrx-info: unknown option '-x'\n");
    CU_ASSERT_EQUAL(info("", "-jx"), 2); /* inside a group of short options */
    HAS("gdrx-info: unknown option '-x'\n");
    CU_ASSERT_EQUAL(info("", "extra"), 2);
    HAS("gdrx-info: unexpected argument 'extra'\n");
    CU_ASSERT_EQUAL(info("", "--help"), 0);
    HAS("usage: gdrx-info");
    HAS("Exit status: 0 at least one backend works, 1 none works, 2 usage error.");
    HAS("Report bugs to: ");
    CU_ASSERT_EQUAL(info("", "-h"), 0);
    HAS("--no-ucx");
}

/* The simulated GPU has no NVIDIA driver: dmabuf works, gdrdrv and nvrm
 * do not, and each says why without GDRX_LOG_LEVEL. */
static void test_sim_default(void)
{
    CU_ASSERT_EQUAL(info("", "--no-ucx"), 0);
    CU_ASSERT_EQUAL(strncmp(out, "SIMULATED GPU: ", 15), 0);
    HAS("  dmabuf         works\n");
    HAS("  gdrdrv         does not open\n");
    HAS("gdrdrv: /dev/gdrdrv not found: the gdrdrv");
    HAS("  nvrm           does not open\n");
    HAS("nvrm: no NVIDIA kernel driver is loaded (no /sys/module/nvidia/version)");
    HAS("fix: install the NVIDIA driver (branch 535, 545, 550, 555, 560, 565, 570, 575, 580 "
        "for this backend)");
    HAS("\n    picks        dmabuf (what gdrx_open(NULL) uses here)\n");
    HAS("\n  GPU 0          NVIDIA H100 (simcu 0) (simulated)");
    HAS("result: 1 of 3 backends work\n");
    LACKS("UCX\n");
    /* the library's chatter about the working backend is for -v only */
    LACKS("CUDA driver 13.0 loaded");
    CU_ASSERT_EQUAL(info("", "--no-ucx -v"), 0);
    HAS("\n    library      info: cuda_load: CUDA driver 13.0 loaded\n");
}

/* Coherent or PCIe per GPU, and the mapping and copies the dmabuf probe
 * got: cached and memcpy on a coherent GPU (SIMCU_COHERENT=1), WC and the
 * streaming default through the BAR otherwise. */
static void test_coherent_link(void)
{
    CU_ASSERT_EQUAL(info("SIMCU_COHERENT=1", "--no-ucx"), 0);
    HAS("link         coherent (NVLink-C2C)");
    HAS("mapping      caching (coherent), copies libc to the GPU, libc from it");
    LACKS("through the PCIe BAR");
    CU_ASSERT_EQUAL(info("", "--no-ucx"), 0);
    HAS("link         PCIe: mapped write-combined through BAR1");
    HAS("mapping      wc (through the PCIe BAR), copies ");
    LACKS("copies libc");
}

/* SIMCU_DEVICES=0 is out of the sim's range: its cuInit fails with
 * CUDA_ERROR_NO_DEVICE, as on a node whose GPU CUDA cannot use. */
static void test_no_backend(void)
{
    CU_ASSERT_EQUAL(info("SIMCU_DEVICES=0", "--no-ucx"), 1);
    HAS("result: no backend works (0 of 3); see the fixes above\n");
    HAS("CUDA: CUDA finds no usable GPU (CUDA_ERROR_NO_DEVICE)");
    HAS("cuInit failed");
    /* a CUDA failure is one problem, not one per backend */
    LACKS("2. ");
    CU_ASSERT_EQUAL(info("SIMCU_DEVICES=0", "--no-ucx --json"), 1);
    HAS("\"exit_status\": 1\n}\n");
}

/* A driver that exports dma-bufs but refuses to mmap them: dmabuf opens,
 * its first pin fails, and with no other backend nothing works. */
static void test_dmabuf_mmap_refused(void)
{
    CU_ASSERT_EQUAL(info("SIMCU_DMABUF_MMAP=refuse", "--no-ucx"), 1);
    HAS("  dmabuf         opens, but copying fails\n");
    HAS("dmabuf: the NVIDIA driver exports GPU memory as dma-bufs but does not let the "
        "CPU mmap them (dmabuf: this NVIDIA driver does not support mmap of its dma-bufs "
        "(errno 19)");
    HAS("library      error: probe_mmap: dmabuf: this NVIDIA driver");
    HAS("fix: use the nvrm or gdrdrv backend");
    HAS("result: no backend works (0 of 3); see the fixes above\n");
}

/* Which libgdrapi.so.2 a gdrcopy program would load: gdrx's (the build
 * tree's, first on LD_LIBRARY_PATH), or a stand-in for NVIDIA's put first,
 * told apart by gdrx's marker. */
static void test_gdrapi_section(void)
{
    char env[2048], ours[512], theirs[512];
    const char *lp = getenv("LD_LIBRARY_PATH");

    build_path(ours, sizeof(ours), "libgdr/gdrapi/.libs");
    build_path(theirs, sizeof(theirs), "tests/info/nvgdrapi/.libs");
    snprintf(env, sizeof(env), "LD_LIBRARY_PATH='%s:%s'", ours, lp ? lp : "");
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("\nlibgdrapi\n  libgdrapi.so.2 ");
    HAS("/libgdr/gdrapi/.libs/libgdrapi.so.2.6.0\n");
    HAS("  provider       gdrx " PACKAGE_VERSION ": gdrcopy's API on gdrx's backends");
    HAS("  API            2.6\n");
    CU_ASSERT_EQUAL(info(env, "--no-ucx --json"), 0);
    HAS("\"gdrapi\": {\"path\": \"");
    HAS("\"api\": \"2.6\"}");

    snprintf(env, sizeof(env), "LD_LIBRARY_PATH='%s:%s:%s'", theirs, ours, lp ? lp : "");
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("/tests/info/nvgdrapi/.libs/libgdrapi.so.2.0.0\n");
    HAS("  provider       NVIDIA gdrcopy (not gdrx's: needs gdrdrv.ko");
    HAS("  API            2.4\n");
    LACKS("gdrx " PACKAGE_VERSION ": gdrcopy's API");
}

/* None on the search path (registered only where the system has none). */
static void test_gdrapi_none(void)
{
    CU_ASSERT_EQUAL(info("", "--no-ucx"), 0);
    HAS("  libgdrapi.so.2 not found (programs linked with -lgdrapi cannot start");
    HAS("./configure --enable-gdrapi-install)");
}

/* Balanced braces and brackets outside strings, every string closed. */
static int json_balanced(const char *s)
{
    int depth = 0, in_str = 0;

    for (; *s; s++) {
        if (in_str) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == '"')
                in_str = 0;
            else if ((unsigned char)*s < 0x20)
                return 0;
        } else if (*s == '"') {
            in_str = 1;
        } else if (*s == '{' || *s == '[') {
            depth++;
        } else if ((*s == '}' || *s == ']') && --depth < 0) {
            return 0;
        }
    }
    return depth == 0 && !in_str;
}

static void test_json(void)
{
    CU_ASSERT_EQUAL(info("", "--no-ucx --json"), 0);
    CU_ASSERT_EQUAL(out[0], '{');
    CU_ASSERT_TRUE(json_balanced(out));
    HAS("\"backends\": [\n");
    HAS("{\"name\": \"dmabuf\", \"status\": \"works\", \"works\": \"yes\", ");
    HAS("\"gpus\": [\n    {\"name\": \"NVIDIA H100 (simcu 0) (simulated)\", \"pci\": \"0000:19:00.0\"");
    HAS("{\"part\": \"gdrdrv\", \"problem\": ");
    HAS("\"exit_status\": 0\n}\n");
    LACKS("SIMULATED GPU: ");
}

/* The nvrm backend against the RM emulator: a 580 driver works, a 535 one
 * is refused with the branch named and the fix. */
static void test_nvrm_emulated(void)
{
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    char emu[512], env[1200];

    build_path(emu, sizeof(emu), "tests/nvrm/.libs/libnvrm_emu.so");
    snprintf(env, sizeof(env), "LD_PRELOAD='%s%s%s'", rt && *rt ? rt : "", rt && *rt ? ":" : "",
             emu);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("  nvrm           works\n");
    HAS("  version        580.159.04\n");
    HAS("nvrm ABI       branch 580 validated (headers 580.65.06 to 580.142), run on hardware");
    HAS("\n    picks        nvrm (");
    HAS("result: 2 of 3 backends work\n");
    LACKS("self-test");

    /* a branch checked against headers: the self-test's result is shown */
    char env535[1300];
    snprintf(env535, sizeof(env535), "%s NVRM_EMU_VERSION=535.288.01 "
             "NVRM_EMU_SYSFS_VERSION=535.288.01", env);
    CU_ASSERT_EQUAL(info(env535, "--no-ucx"), 0);
    HAS("  nvrm           works\n");
    HAS("nvrm ABI       branch 535 checked (headers 535.43.02 to 535.288.01)");
    HAS("    self-test    open self-test passed in ");
    snprintf(env535 + strlen(env535), sizeof(env535) - strlen(env535),
             " NVRM_EMU_UVM_LAYOUT=580.159.04");
    CU_ASSERT_EQUAL(info(env535, "--no-ucx"), 0);
    HAS("  nvrm           does not open\n");
    HAS("    self-test    failed the open self-test at step \"find (trace)\"");

    snprintf(env + strlen(env), sizeof(env) - strlen(env),
             " NVRM_EMU_VERSION=999.10.01 NVRM_EMU_SYSFS_VERSION=999.10.01");
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("  nvrm           does not open\n");
    HAS("branch NOT known to the nvrm backend");
    HAS("nvrm: driver 999.10.01 is not of a branch whose RM ioctl ABI the nvrm backend "
        "knows (535, 545, 550, 555, 560, 565, 570, 575, 580)");
    HAS("fix: install a driver of branch 535, 545, 550, 555, 560, 565, 570, 575, 580, or use "
        "the gdrdrv backend");
    HAS("(branch 999) is not a known branch");
}

static void test_gdrdrv_node(void)
{
    char dir[] = "/tmp/gdrx-info-node.XXXXXX", env[400], file[300];

    CU_ASSERT_EQUAL(info("GDRX_GDRDRV_PATH=/dev/null", "--no-ucx"), 0);
    HAS("gdrdrv: /dev/null opens but the backend fails: gdrdrv: /dev/null does not "
        "answer GET_VERSION");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/gdrdrv", dir);
    FILE *f = fopen(file, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    snprintf(env, sizeof(env), "GDRX_GDRDRV_PATH=%s", file);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS(" is not a character device\n");
    unlink(file);
    rmdir(dir);
}

/* A node this user cannot open read-write (/dev/kmsg is root's, 0644): as
 * root the case runs gdrx-info as nobody, so the check holds either way.
 * nobody may not be able to enter the build tree (a checkout under /root,
 * mode 0700), so as root it runs a copy of the program and of the build
 * tree's libraries it loads, in a directory of its own anyone can read:
 * nobody_dir, made by main() before the case is registered. */
#define AS_NOBODY "setpriv --reuid=65534 --regid=65534 --clear-groups"
static char nobody_dir[] = "/tmp/gdrx-info-nobody.XXXXXX";
static int nobody_made;

static void test_gdrdrv_permission(void)
{
    char exe[512], env[512];

    if (nobody_made) {
        snprintf(exe, sizeof(exe), "%s/gdrx-info", nobody_dir);
        snprintf(env, sizeof(env), "GDRX_GDRDRV_PATH=/dev/kmsg LD_LIBRARY_PATH=%s " AS_NOBODY,
                 nobody_dir);
    } else {
        build_path(exe, sizeof(exe), "tools/gdrx-info");
        snprintf(env, sizeof(env), "GDRX_GDRDRV_PATH=/dev/kmsg");
    }
    CU_ASSERT_EQUAL(run_info(exe, env, "--no-ucx"), 0);
    HAS("library      error: gdrdrv_open: gdrdrv: cannot open /dev/kmsg (errno 13)");
    HAS("gdrdrv: permission denied: /dev/kmsg is mode 0644, owner root, group root; user ");
    HAS("cannot open it for reading and writing");
    HAS("fix: the node is root's alone, so gdrx's udev rule was not applied: install "
        "config/99-gdrdrv.rules");
}

/* What test_gdrdrv_permission needs: NULL when it is there, else why not
 * (the case is then not registered: not run, never passed). */
static const char *permission_case_setup(void)
{
    static const char *const from[] = { "tools/.libs/gdrx-info", "libgdr/.libs/libgdrx.so.0",
                                        "tests/sim/.libs/libcuda.so.1" };
    char cmd[4096], path[512];
    struct stat st;

    if (stat("/dev/kmsg", &st) != 0 || !S_ISCHR(st.st_mode) || st.st_uid != 0 ||
        st.st_gid != 0 || (st.st_mode & 07777) != 0644)
        return "/dev/kmsg is not a character device of root's of mode 0644";
    if (geteuid() != 0)
        return NULL;
    if (!mkdtemp(nobody_dir) || chmod(nobody_dir, 0755) != 0)
        return "cannot make a directory in /tmp for a copy of gdrx-info";
    nobody_made = 1;
    snprintf(cmd, sizeof(cmd), "cp");
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
        build_path(path, sizeof(path), from[i]);
        snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " '%s'", path);
    }
    /* readable and executable by nobody whatever the umask */
    snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " '%s' && chmod 755 '%s'/*",
             nobody_dir, nobody_dir);
    if (system(cmd) != 0)
        return "cannot copy gdrx-info and its libraries from the build tree to /tmp";
    snprintf(cmd, sizeof(cmd), AS_NOBODY " test -x '%s/gdrx-info' 2>/dev/null", nobody_dir);
    if (system(cmd) != 0)
        return "user 65534 cannot run the copy of gdrx-info in /tmp (no setpriv, "
               "or /tmp mounted noexec)";
    return NULL;
}

/* The hooks the backends' probes installed: all that the simulated libcuda
 * exports; none with GDRX_FREE_HOOKS=0. */
static void test_hooks_section(void)
{
#if defined(__aarch64__)
    /* the hooks are x86-64 only: never claimed, with or without the
     * variable (docs/arm64.md) */
    CU_ASSERT_EQUAL(info("", "--no-ucx -v"), 0);
    HAS("\nCUDA hooks\n  state          not available on this platform\n");
    LACKS("hooked");
    CU_ASSERT_EQUAL(info("GDRX_FREE_HOOKS=0", "--no-ucx"), 0);
    HAS("\nCUDA hooks\n  state          not available on this platform\n");
    return;
#endif
    CU_ASSERT_EQUAL(info("", "--no-ucx -v"), 0);
    HAS("\nCUDA hooks\n  hooked         15 of the 15 entry points this libcuda exports\n");
    HAS("cuMemFree_v2, cuMemFreeAsync, cuMemUnmap, cuIpcCloseMemHandle,");
    LACKS("CUDA hooks:");
    CU_ASSERT_EQUAL(info("", "--no-ucx --json"), 0);
    HAS("\"hooks\": {\"hooked\": \"15 of the 15 entry points this libcuda exports\"");
    CU_ASSERT_EQUAL(info("GDRX_FREE_HOOKS=0", "--no-ucx"), 0);
    HAS("\nCUDA hooks\n  state          not installed (GDRX_FREE_HOOKS=0");
}

/* The copy routines gdrx-info reports are this architecture's: NEON both
 * ways on aarch64 (a write-combined mapping there needs its barriers),
 * never NEON on x86-64; GDRX_COPY_VARIANT=libc is taken on both. */
static void test_copy_variant(void)
{
    CU_ASSERT_EQUAL(info("", "--no-ucx"), 0);
#if defined(__aarch64__)
    HAS("\n  to mapping     neon\n");
    HAS("\n  from mapping   neon\n");
    HAS("  variants       libc sse2(no) sse41(no) avx2(no) avx512(no) movdir64b(no) neon\n");
#else
    LACKS("neon");
    LACKS("\n  to mapping     libc\n");
#endif
    CU_ASSERT_EQUAL(info("GDRX_COPY_VARIANT=libc", "--no-ucx"), 0);
    HAS("\n  to mapping     libc\n");
    HAS("\n  from mapping   libc\n");
}

static void test_backend_env(void)
{
    CU_ASSERT_EQUAL(info("GDRX_BACKEND=bogus", "--no-ucx"), 0);
    HAS("GDRX_BACKEND: GDRX_BACKEND=bogus is not a backend: gdrx_open fails with EINVAL");
    HAS("fix: unset GDRX_BACKEND, or set it to gdrdrv, nvrm, dmabuf or auto");
    CU_ASSERT_EQUAL(info("GDRX_BACKEND=gdrdrv", "--no-ucx"), 0);
    HAS("GDRX_BACKEND=gdrdrv names a backend that does not work here");
    CU_ASSERT_EQUAL(info("GDRX_BACKEND=dmabuf", "--no-ucx"), 0);
    LACKS("GDRX_BACKEND:");
}

static void put(const char *root, const char *rel, const void *data, size_t len)
{
    char path[512], cmd[600];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
    CU_ASSERT_EQUAL(system(cmd), 0);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(data, 1, len, f), len);
    fclose(f);
}
#define PUT(root, rel, s) put(root, rel, s, strlen(s))

/* Driver flavour, Secure Boot, an installed but unloaded gdrdrv, and BAR1
 * from the PCI resource, all from a fake root. */
static void test_fake_root(void)
{
    static const char sb_on[] = { 6, 0, 0, 0, 1 };
    char root[] = "/tmp/gdrx-info-root.XXXXXX", env[256], rel[300], cmd[600];
    struct utsname u;

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
    CU_ASSERT_EQUAL_FATAL(uname(&u), 0);
    PUT(root, "proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for "
        "x86_64  580.95.05  Release Build  (dvs-builder@U16)  Thu Sep 25 2025\nGCC version: x\n");
    PUT(root, "sys/module/nvidia/version", "580.95.05\n");
    put(root, "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
        sb_on, sizeof(sb_on));
    snprintf(rel, sizeof(rel), "lib/modules/%s/updates/dkms/gdrdrv.ko.xz", u.release);
    PUT(root, rel, "");
    PUT(root, "sys/bus/pci/devices/0000:19:00.0/vendor", "0x10de\n");
    PUT(root, "sys/bus/pci/devices/0000:19:00.0/resource",
        "0x00000000fb000000 0x00000000fbffffff 0x0000000000040200\n"
        "0x0000038000000000 0x0000039fffffffff 0x000000000014220c\n");
    snprintf(env, sizeof(env), "GDRX_INFO_ROOT=%s", root);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("  version        580.95.05\n");
    HAS("  flavour        open (\"Open Kernel Module\")\n");
    HAS("  Secure Boot    enabled: unsigned kernel modules are refused");
    HAS("BAR1         128 GiB (PCI resource), use unknown (no libnvidia-ml.so.1)");
    HAS("gdrdrv: the gdrdrv module is installed (");
    HAS("/updates/dkms/gdrdrv.ko.xz) but not loaded");
    HAS("fix: modprobe gdrdrv (as root); Secure Boot is on: the kernel loads only modules");
    HAS("Machine Owner Key");

    /* a module built for another kernel only: the wrong headers */
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/lib/modules'", root);
    CU_ASSERT_EQUAL(system(cmd), 0);
    PUT(root, "lib/modules/5.10.0-99-amd64/updates/dkms/gdrdrv.ko", "");
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("gdrx-info-root.");
    HAS("gdrdrv: gdrdrv.ko is installed for kernel 5.10.0-99-amd64 (");
    HAS("), not for the running kernel ");
    HAS("fix: build it for the running kernel: apt-get install linux-headers-");

    /* the proprietary modules: no "Open Kernel Module", Secure Boot off */
    PUT(root, "proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
        "535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
    PUT(root, "sys/module/nvidia/version", "535.104.05\n");
    static const char sb_off[] = { 6, 0, 0, 0, 0 };
    put(root, "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
        sb_off, sizeof(sb_off));
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("  flavour        proprietary\n");
    HAS("  Secure Boot    disabled");
    HAS("nvrm ABI       branch 535 checked (headers 535.43.02 to 535.288.01), not run on "
        "hardware here: served after the open self-test");
    HAS("differs        UVM map: 32 GPUs (1200 B)");
    LACKS("Machine Owner Key");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_nvml_bar1(void)
{
    char dir[512], env[700];

    build_path(dir, sizeof(dir), "tests/info/.libs");
    snprintf(env, sizeof(env), "LD_LIBRARY_PATH='%s':\"$LD_LIBRARY_PATH\"", dir);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("BAR1         80 GiB, 1.5 GiB in use (NVML)");
    CU_ASSERT_EQUAL(info(env, "--no-ucx --json"), 0);
    HAS("\"bar1_total_bytes\": \"85899345920\", \"bar1_used_bytes\": \"1610612736\"");
    snprintf(env + strlen(env), sizeof(env) - strlen(env), " FAKE_NVML_FAIL=1");
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("BAR1         unknown (no libnvidia-ml.so.1");
}

static void test_mps(void)
{
    char dir[] = "/tmp/gdrx-info-mps.XXXXXX", env[256], pipe[300];

    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(env, sizeof(env), "CUDA_MPS_PIPE_DIRECTORY=%s", dir);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("  MPS            off (no ");
    snprintf(pipe, sizeof(pipe), "%s/control", dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(pipe, 0600), 0);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("  MPS            on: control pipe ");
    unlink(pipe);
    rmdir(dir);
}

/* A GPU several processes use without MPS (NVML's count from the fake
 * libnvidia-ml): a problem with its remedy; none with MPS on or with one
 * process. */
static void test_shared_gpu_without_mps(void)
{
    char dir[512], env[900], mpsdir[] = "/tmp/gdrx-info-mps.XXXXXX", pipe[300];
    const char *problem = "GPU 0 is shared by 2 processes without MPS";

    build_path(dir, sizeof(dir), "tests/info/.libs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(mpsdir));
    snprintf(env, sizeof(env), "LD_LIBRARY_PATH='%s':\"$LD_LIBRARY_PATH\" "
             "CUDA_MPS_PIPE_DIRECTORY=%s FAKE_NVML_PROCS=2", dir, mpsdir);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("processes    2 with a CUDA context (NVML)");
    HAS(problem);
    HAS("nvidia-cuda-mps-control -d");
    CU_ASSERT_EQUAL(info(env, "--no-ucx --json"), 0);
    HAS("\"processes\": \"2 with a CUDA context (NVML)\"");
    HAS(problem);
    /* MPS on: no problem */
    snprintf(pipe, sizeof(pipe), "%s/control", mpsdir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(pipe, 0600), 0);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    LACKS("without MPS");
    unlink(pipe);
    /* one process: no problem */
    snprintf(env, sizeof(env), "LD_LIBRARY_PATH='%s':\"$LD_LIBRARY_PATH\" "
             "CUDA_MPS_PIPE_DIRECTORY=%s FAKE_NVML_PROCS=1", dir, mpsdir);
    CU_ASSERT_EQUAL(info(env, "--no-ucx"), 0);
    HAS("processes    1 with a CUDA context (NVML)");
    LACKS("without MPS");
    rmdir(mpsdir);
}

#ifdef GDRX_UCX_INFO
/* ucx_info of the configured UCX first on PATH: with the plugin preloaded
 * UCX lists the transport; without it gdrx-info says how to load it. */
static void test_ucx(void)
{
    const char *rt = getenv("GDRX_SANITIZER_RUNTIME");
    char bin[512], sim[512], init[512], plugin[512], env[2800];

    snprintf(bin, sizeof(bin), "%s", GDRX_UCX_INFO);
    *strrchr(bin, '/') = '\0';
    build_path(plugin, sizeof(plugin), "ucx_plugin/.libs/libuct_gdrx.so.0");
    snprintf(env, sizeof(env), "PATH='%s':\"$PATH\" UCX_CONFIG_DIR=/nonexistent", bin);
    CU_ASSERT_EQUAL(info(env, ""), 0);
    HAS("  gdrx transport not loaded (ucx_info -d does not list it)");
    HAS("UCX: the gdrx transport is neither installed");
    HAS("fix: make install (puts libuct_gdrx.so.0 in ");
    /* the simulated GPU has no device node and serves through dmabuf
     * only: its libcuda, preloaded and initialised at load (tests/ucx's
     * helper), stands for a CUDA program (where gdrx lists its resource) */
    build_path(sim, sizeof(sim), "tests/sim/.libs/libcuda.so.1");
    build_path(init, sizeof(init), "tests/ucx/.libs/libut_cuda_init.so");
    snprintf(env + strlen(env), sizeof(env) - strlen(env), " LD_PRELOAD='%s%s%s:%s:%s'",
             rt && *rt ? rt : "", rt && *rt ? ":" : "", sim, init, plugin);
    CU_ASSERT_EQUAL(info(env, ""), 0);
    HAS("  gdrx transport loads (ucx_info -d lists it)");
    HAS("libuct_gdrx.so.0\n");
    LACKS("UCX: ");
}
#endif

static struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_usage_errors),
    GDRX_TEST_CASE(test_sim_default),
    GDRX_TEST_CASE(test_coherent_link),
    GDRX_TEST_CASE(test_no_backend),
    GDRX_TEST_CASE(test_dmabuf_mmap_refused),
    GDRX_TEST_CASE(test_json),
    GDRX_TEST_CASE(test_gdrapi_section),
    GDRX_TEST_CASE(test_gdrapi_none),
    GDRX_TEST_CASE(test_nvrm_emulated),
    GDRX_TEST_CASE(test_gdrdrv_node),
    GDRX_TEST_CASE(test_gdrdrv_permission),
    GDRX_TEST_CASE(test_hooks_section),
    GDRX_TEST_CASE(test_copy_variant),
    GDRX_TEST_CASE(test_backend_env),
    GDRX_TEST_CASE(test_fake_root),
    GDRX_TEST_CASE(test_nvml_bar1),
    GDRX_TEST_CASE(test_mps),
    GDRX_TEST_CASE(test_shared_gpu_without_mps),
#ifdef GDRX_UCX_INFO
    GDRX_TEST_CASE(test_ucx),
#endif
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "gdrx_info", NULL, NULL, cases },
    GDRX_SUITE_END
};

/* Take case fn out of the table, saying why. */
static void unregister(void (*fn)(void), const char *why)
{
    struct gdrx_test_case *c = cases;

    while (c->fn != fn)
        c++;
    printf("NOT RUN: case gdrx_info/%s (%s); it is not registered\n", c->name, why);
    for (; c->name; c++) /* the cases after it, and the end mark, move up */
        c[0] = c[1];
}

int main(int argc, char **argv)
{
    const char *why = permission_case_setup();
    char cmd[600];

    if (why)
        unregister(test_gdrdrv_permission, why);
    /* (this process's LD_LIBRARY_PATH holds the simulated GPU and libgdrx) */
    void *sys_gdrapi = dlopen("libgdrapi.so.2", RTLD_LAZY | RTLD_LOCAL);
    if (sys_gdrapi) {
        dlclose(sys_gdrapi);
        unregister(test_gdrapi_none, "this system has a libgdrapi.so.2 on its search path");
    }
    int rc = gdrx_test_main(argc, argv, suites);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", nobody_dir);
    if (nobody_made && system(cmd) != 0)
        rc = 1;
    return rc;
}
