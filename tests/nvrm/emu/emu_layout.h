/*
 * emu_layout.h - which layouts the emulated driver speaks: those of the
 * version it reports (libgdr/src/nvrm/nvrm_layout.c's rows), so that the
 * nvrm suites run against every branch.  The emulator and the simulated
 * libcuda (tests/sim/sim_rm.c) both take them from here, as a matched
 * kernel and libcuda would.
 *
 * SPDX-License-Identifier: MIT
 *
 * NVRM_EMU_UVM_LAYOUT=<version>: UVM_MAP_EXTERNAL_ALLOCATION is laid out
 * as that version's branch would (both sides), whatever version is
 * reported: a driver whose layout differs from what nvrm's table says,
 * for the test that the open self-test refuses it.
 */
#ifndef GDRX_EMU_LAYOUT_H
#define GDRX_EMU_LAYOUT_H

#include <stdlib.h>

#include "nvrm_layout.h"

/* A version with no row (e.g. 999.x, which nvrm must refuse) still needs
 * answers: the newest row's. */
static inline const struct nvrm_layout *emu_driver_layout(const char *version)
{
    const struct nvrm_layout *l = nvrm_layout_for(version);
    return l ? l : nvrm_layout_at(nvrm_layout_count() - 1);
}

static inline const struct nvrm_uvm_map_shape *emu_uvm_map_shape(const char *version)
{
    const char *o = getenv("NVRM_EMU_UVM_LAYOUT");
    return emu_driver_layout(o && *o ? o : version)->uvm_map;
}

#endif /* GDRX_EMU_LAYOUT_H */
