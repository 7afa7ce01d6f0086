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
#endif
