#ifndef PODFS_CFUSE3_SHIM_H
#define PODFS_CFUSE3_SHIM_H
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <sys/stat.h>
#include <errno.h>

/// fuse_session_loop_mt is a macro choosing a versioned symbol; Swift cannot
/// call macros, so the multi-threaded loop is started through this wrapper.
static inline int podfs_fuse_session_loop_mt(struct fuse_session *se, unsigned int max_threads,
                                             unsigned int max_idle) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -ENOMEM;
    fuse_loop_cfg_set_clone_fd(config, 0);
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_idle_threads(config, max_idle);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return rc;
}

static inline struct fuse_session *podfs_fuse_session_new(struct fuse_args *args,
        const struct fuse_lowlevel_ops *ops, void *userdata) {
    return fuse_session_new(args, ops, sizeof(*ops), userdata);
}
#endif
