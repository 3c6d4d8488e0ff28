/* pieces.cl - one piece's metadata from the whole batch's (aeads/plan.py).
 *
 * A large AEAD batch runs in pieces of consecutive messages [a, a + n) (transfer/batches.py).  The
 * whole batch's per-message arrays are uploaded once; before a piece's kernels, ONE launch of
 * cg_piece_meta writes what those kernels take for a batch of their own into the piece's buffer,
 * so that the host does no per-piece array work.  `ops` lists the arrays, four words each:
 * (kind, byte offset in `src`, byte offset in `dst`, parameter):
 *
 *   0  PREFIX   (n + 1) ulongs s[a + j] - s[a]: offsets rebased to the piece (its texts lie in a
 *               buffer of their own, its counter blocks and tiles are numbered from 0)
 *   1  ABS      (n + 1) ulongs s[a + j] as they are (offsets into a buffer of the whole batch)
 *   2  ROWS     n rows of `parameter` bytes from row a (nonces, key indices)
 *   3  HINT     the coarse index of the rebased prefix s[a..a+n] (aeads/base.py coarse_index):
 *               entry j names the last message i < n with s[a + i] - s[a] <= j << parameter,
 *               (total >> parameter) + 2 entries, uint
 *
 * Offsets are multiples of 8 (the host lays them out).  Which work-item writes which word
 * depends on n and the prefix values only. */

KERNEL void cg_piece_meta(GLOBAL_RO const uchar *src, GLOBAL_RO const ulong *ops, uint nops,
                          GLOBAL uchar *dst, ulong a, ulong n)
{
    for (uint op = 0; op < nops; op++) {
        const ulong kind = ops[4 * op], so = ops[4 * op + 1], dof = ops[4 * op + 2];
        const ulong par = ops[4 * op + 3];
        GLOBAL_RO const ulong *s = (GLOBAL_RO const ulong *)(src + so);
        if (kind == 0 || kind == 1) {
            GLOBAL ulong *d = (GLOBAL ulong *)(dst + dof);
            const ulong base = kind == 0 ? s[a] : 0;
            for (ulong j = GID; j <= n; j += GSIZE)
                d[j] = s[a + j] - base;
        } else if (kind == 2) {
            GLOBAL_RO const uchar *s8 = src + so + a * par;
            GLOBAL uchar *d8 = dst + dof;
            const ulong bytes = n * par;
            if ((par & 3) == 0 && ((so + a * par) & 3) == 0) {
                GLOBAL_RO const uint *s4 = (GLOBAL_RO const uint *)s8;
                GLOBAL uint *d4 = (GLOBAL uint *)d8;
                for (ulong t = GID; t < bytes / 4; t += GSIZE)
                    d4[t] = s4[t];
            } else {
                for (ulong t = GID; t < bytes; t += GSIZE)
                    d8[t] = s8[t];
            }
        } else {
            GLOBAL uint *d = (GLOBAL uint *)(dst + dof);
            const ulong base = s[a];
            const ulong count = ((s[a + n] - base) >> par) + 2;
            for (ulong j = GID; j < count; j += GSIZE) {
                const ulong x = j << par;
                /* the last i in [0, n) with s[a + i] - base <= x (s[a] - base = 0 <= x) */
                ulong lo = 0, hi = n;          /* s[a + lo] - base <= x; answer < hi */
                while (hi - lo > 1) {
                    const ulong mid = lo + ((hi - lo) >> 1);
                    if (s[a + mid] - base <= x) lo = mid; else hi = mid;
                }
                d[j] = (uint)lo;
            }
        }
    }
}
