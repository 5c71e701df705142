/*
 * pplat_image.c - the kernel's fatbin, embedded with the assembler's
 * .incbin at build time (GDRX_PPLAT_FATBIN: its path from the directory
 * the compiler runs in), so the program needs no file and no CUDA library
 * at run time.
 *
 * SPDX-License-Identifier: MIT
 */
#include "pplat.h"

#ifdef GDRX_PPLAT_FATBIN
__asm__(".section .rodata\n"
        ".balign 64\n"
        ".globl gdrx_pplat_fatbin\n"
        ".hidden gdrx_pplat_fatbin\n"
        "gdrx_pplat_fatbin:\n"
        ".incbin \"" GDRX_PPLAT_FATBIN "\"\n"
        ".globl gdrx_pplat_fatbin_end\n"
        ".hidden gdrx_pplat_fatbin_end\n"
        "gdrx_pplat_fatbin_end:\n"
        ".byte 0\n"
        ".previous\n");
extern const unsigned char gdrx_pplat_fatbin[], gdrx_pplat_fatbin_end[];

const unsigned char *pplat_image(size_t *len)
{
    *len = (size_t)(gdrx_pplat_fatbin_end - gdrx_pplat_fatbin);
    return gdrx_pplat_fatbin;
}
#else
const unsigned char *pplat_image(size_t *len)
{
    *len = 0;
    return NULL;
}
#endif
