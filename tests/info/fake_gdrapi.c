/*
 * fake_gdrapi.c - a stand-in for NVIDIA gdrcopy's libgdrapi.so.2 (built as
 * tests/info/nvgdrapi/libgdrapi.so.2, never installed): the one call
 * gdrx-info makes, answering API 2.4, and no gdrx marker.
 *
 * SPDX-License-Identifier: MIT
 */
void gdr_runtime_get_version(int *major, int *minor);

void gdr_runtime_get_version(int *major, int *minor)
{
    *major = 2;
    *minor = 4;
}
