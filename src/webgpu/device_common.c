/* device_common.c — conveniences over the device layer (device.h), written
 * once for both implementations (device_dawn.c, src/webgpu/device_web.c):
 * the synchronous read of a storage buffer, handle-table growth. */
#include <stdlib.h>
#include <string.h>

#include "device.h"

int tt_gpu_read_sync(tt_gpu *g, tt_gpu_buf b, uint64_t offset, uint64_t bytes, void *dst, tt_status *st) {
    tt_gpu_buf rb;
    TT_CHECK(tt_gpu_buffer(g, bytes, TT_GPU_READBACK, "readback", &rb, st));
    int rc = tt_gpu_begin(g, st);
    if (rc == TT_OK) {
        tt_gpu_copy(g, b, offset, rb, 0, (bytes + 3) & ~(uint64_t)3);
        rc = tt_gpu_submit(g, st);
    }
    if (rc == TT_OK) rc = tt_gpu_read_start(g, rb, 0, (bytes + 3) & ~(uint64_t)3, st);
    if (rc == TT_OK) {
        /* bytes may not be a multiple of 4 for the caller; read into place */
        if (bytes & 3) {
            uint8_t *tmp = malloc((size_t)((bytes + 3) & ~(uint64_t)3));
            if (!tmp) rc = tt_fail(st, TT_ENOMEM, "out of memory (readback)");
            else {
                rc = tt_gpu_read_finish(g, rb, tmp, st);
                if (rc == TT_OK) memcpy(dst, tmp, (size_t)bytes);
                free(tmp);
            }
        } else {
            rc = tt_gpu_read_finish(g, rb, dst, st);
        }
    }
    tt_gpu_buffer_free(g, rb);
    return rc;
}

int tt_gpu_grow(void **arr, int *cap, int n, size_t elem, int first_cap) {
    if (n < *cap) return 0;
    int nc = *cap ? *cap * 2 : first_cap;
    void *na = realloc(*arr, (size_t)nc * elem);
    if (!na) return -1;
    *arr = na;
    *cap = nc;
    return 0;
}
