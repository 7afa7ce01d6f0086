#ifndef PODFS_CZLIB_SHIM_H
#define PODFS_CZLIB_SHIM_H
#include <zlib.h>

/// deflateInit2 and inflateInit2 are macros passing the library's version and
/// the stream's size; Swift cannot import them, so they are called here.
static inline int podfs_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
static inline int podfs_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

#endif
