#ifndef PODFS_CFUSE3_SHIM_H
#define PODFS_CFUSE3_SHIM_H
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <sys/stat.h>
#include <errno.h>

static inline struct fuse_session *podfs_fuse_session_new(struct fuse_args *args,
        const struct fuse_lowlevel_ops *ops, void *userdata) {
    return fuse_session_new(args, ops, sizeof(*ops), userdata);
}

/* Answers a read with `len` bytes of file `fd` at `offset`, spliced from the
 * file's page cache into the device when the kernel allows it (no copy
 * through a user buffer), else read and written by libfuse. 0 or an errno
 * (libfuse has then answered the request with that error). */
static inline int podfs_fuse_reply_fd(fuse_req_t req, int fd, off_t offset, size_t len) {
    struct fuse_bufvec bufv = FUSE_BUFVEC_INIT(len);
    bufv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    bufv.buf[0].fd = fd;
    bufv.buf[0].pos = offset;
    return fuse_reply_data(req, &bufv, 0);
}
#endif
