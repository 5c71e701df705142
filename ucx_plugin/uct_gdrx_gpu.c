/*
 * uct_gdrx_gpu.c - the GPUs and the backends' prerequisites as the process
 * and the system show them, without loading or initialising CUDA (see the
 * header).  Whether the backend then opens is found out by the MD at its
 * first use, with its own configuration.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_gpu.h"
#include "uct_gdrx_cuda.h"

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>


#define UCT_GDRX_GPU_NODE_PREFIX   "nvidia"
#define UCT_GDRX_GPU_PCI_DIR       "/sys/bus/pci/devices"
#define UCT_GDRX_GPU_PCI_NVIDIA    0x10de
/* PCI classes of GPUs: VGA compatible and 3D controllers */
#define UCT_GDRX_GPU_PCI_CLASS_VGA 0x0300
#define UCT_GDRX_GPU_PCI_CLASS_3D  0x0302


static pthread_once_t uct_gdrx_gpu_single_once = PTHREAD_ONCE_INIT;
static ucs_sys_device_t uct_gdrx_gpu_single    = UCS_SYS_DEVICE_ID_UNKNOWN;


/* An NVIDIA GPU's device node (/dev/nvidia0, /dev/nvidia1, ...): the driver
 * is loaded and the GPU reachable from here (a container holds the nodes
 * of its GPUs only). */
static int uct_gdrx_gpu_node_exists(void)
{
    size_t prefix_len = strlen(UCT_GDRX_GPU_NODE_PREFIX);
    struct dirent *entry;
    const char *p;
    int found = 0;
    DIR *dir;

    dir = opendir("/dev");
    if (dir == NULL) {
        return 0;
    }

    while (!found && ((entry = readdir(dir)) != NULL)) {
        if (strncmp(entry->d_name, UCT_GDRX_GPU_NODE_PREFIX, prefix_len) ||
            (entry->d_name[prefix_len] == '\0')) {
            continue;
        }
        for (p = entry->d_name + prefix_len; isdigit((unsigned char)*p); ++p) {
        }
        found = (*p == '\0');
    }

    closedir(dir);
    return found;
}

static int uct_gdrx_gpu_present(void)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    int count;

    if (cuda == NULL) {
        return uct_gdrx_gpu_node_exists();
    }

    /* before cuInit the count fails and changes nothing; after it, CUDA
     * knows (CUDA_VISIBLE_DEVICES included) */
    if (cuda->device_get_count(&count) == UCT_GDRX_CUDA_SUCCESS) {
        return count > 0;
    }

    /* the program loaded libcuda to use a GPU: the first use will tell */
    return 1;
}

int uct_gdrx_gpu_reachable(gdrx_backend_t backend)
{
    struct gdrx_open_params params;
    int ret;

    if (!uct_gdrx_gpu_present()) {
        ucs_debug("gdrx: no CUDA device, libcuda or NVIDIA device node in "
                  "reach, no gdrx resource");
        return 0;
    }

    gdrx_open_params_init(&params);
    params.backend = backend;
    params.flags   = GDRX_PROBE_FLAG_NO_CUDA;
    ret            = gdrx_probe(&params, NULL);
    if (ret != 0) {
        ucs_debug("gdrx: no backend that UCX_GDRX_BACKEND=%s allows can be "
                  "told to work without initialising CUDA (%s), no gdrx "
                  "resource", gdrx_backend_name(backend), gdrx_strerror(ret));
        return 0;
    }

    return 1;
}

/* 1 if the PCI function named name is an NVIDIA GPU; *bus_id its address. */
static int uct_gdrx_gpu_pci_is_gpu(const char *name, ucs_sys_bus_id_t *bus_id)
{
    unsigned domain, bus, slot, function;
    long vendor, pci_class;

    if ((sscanf(name, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) ||
        (ucs_read_file_number(&vendor, 1, UCT_GDRX_GPU_PCI_DIR "/%s/vendor",
                              name) != UCS_OK) ||
        (vendor != UCT_GDRX_GPU_PCI_NVIDIA) ||
        (ucs_read_file_number(&pci_class, 1, UCT_GDRX_GPU_PCI_DIR "/%s/class",
                              name) != UCS_OK) ||
        (((pci_class >> 8) != UCT_GDRX_GPU_PCI_CLASS_VGA) &&
         ((pci_class >> 8) != UCT_GDRX_GPU_PCI_CLASS_3D))) {
        return 0;
    }

    bus_id->domain   = (uint16_t)domain;
    bus_id->bus      = (uint8_t)bus;
    bus_id->slot     = (uint8_t)slot;
    bus_id->function = (uint8_t)function;
    return 1;
}

/* The only NVIDIA GPU on the PCI bus, looked for once per process; with
 * several nothing says which one the process uses. */
static void uct_gdrx_gpu_find_single(void)
{
    ucs_sys_bus_id_t bus_id = {0};
    struct dirent *entry;
    unsigned count = 0;
    DIR *dir;

    dir = opendir(UCT_GDRX_GPU_PCI_DIR);
    while ((dir != NULL) && ((entry = readdir(dir)) != NULL)) {
        count += uct_gdrx_gpu_pci_is_gpu(entry->d_name, &bus_id);
    }
    if (dir != NULL) {
        closedir(dir);
    }

    if ((count != 1) ||
        (ucs_topo_find_device_by_bus_id(&bus_id, &uct_gdrx_gpu_single) !=
         UCS_OK)) {
        ucs_debug("gdrx: %u NVIDIA GPUs on the PCI bus, no system device "
                  "for the interface", count);
        uct_gdrx_gpu_single = UCS_SYS_DEVICE_ID_UNKNOWN;
    }
}

ucs_sys_device_t uct_gdrx_gpu_sys_dev(void)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    int device;

    /* no context (or no cuInit) makes the call fail, changing nothing */
    if ((cuda != NULL) &&
        (cuda->ctx_get_device(&device) == UCT_GDRX_CUDA_SUCCESS)) {
        return uct_gdrx_cuda_sys_dev(device);
    }

    pthread_once(&uct_gdrx_gpu_single_once, uct_gdrx_gpu_find_single);
    return uct_gdrx_gpu_single;
}
