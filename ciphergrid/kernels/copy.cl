/* copy.cl - the copy-only strawman (seed 000, Table 2 last row): moves the bytes and computes
 * nothing, so a pipeline running it shows where the bus ends. */
KERNEL void cg_copy(GLOBAL_RO const uint4 *in, GLOBAL uint4 *out, ulong n)
{
    for (ulong i = GID; i < n; i += GSIZE)
        out[i] = in[i];
}
