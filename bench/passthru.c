/* (Copied from the team harness, ../shared/bench/passthru.c; bench/run builds it.)
 * Minimal read-only passthrough FUSE fs (libfuse3, high-level, multithreaded).
 * Measurement baseline only: the cost of the FUSE round trip over a local file.
 * Plain pread()+copy: on this box it measured 2-2.5x faster than an fd-backed
 * read_buf (splice) variant, so the copy path is the honest upper bound.
 * Build: cc -O2 -Wall passthru.c $(pkg-config --cflags --libs fuse3) -o passthru
 * Use:   passthru SRC_DIR MOUNTPOINT [-f] [-o kernel_cache] ...            */
#define FUSE_USE_VERSION 31
#include <fuse.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char src[PATH_MAX];

static void real(char *out, const char *path) { snprintf(out, PATH_MAX, "%s%s", src, path); }

static void *pt_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    (void)conn;
    cfg->use_ino = 1;
    cfg->entry_timeout = cfg->attr_timeout = 3600; /* files never change */
    return NULL;
}

static int pt_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    char p[PATH_MAX];
    if (fi) return fstat(fi->fh, st) == -1 ? -errno : 0;
    real(p, path);
    return lstat(p, st) == -1 ? -errno : 0;
}

static int pt_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags fl) {
    (void)off; (void)fi; (void)fl;
    char p[PATH_MAX];
    real(p, path);
    DIR *d = opendir(p);
    if (!d) return -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)e->d_type << 12};
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    closedir(d);
    return 0;
}

static int pt_open(const char *path, struct fuse_file_info *fi) {
    char p[PATH_MAX];
    if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
    real(p, path);
    int fd = open(p, fi->flags);
    if (fd == -1) return -errno;
    fi->fh = fd;
    return 0;
}

static int pt_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    ssize_t n = pread(fi->fh, buf, size, off);
    return n == -1 ? -errno : (int)n;
}

static int pt_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    close(fi->fh);
    return 0;
}

static int pt_statfs(const char *path, struct statvfs *s) {
    (void)path;
    return statvfs(src, s) == -1 ? -errno : 0;
}

static const struct fuse_operations ops = {
    .init = pt_init, .getattr = pt_getattr, .readdir = pt_readdir, .open = pt_open,
    .read = pt_read, .release = pt_release, .statfs = pt_statfs,
};

int main(int argc, char *argv[]) {
    if (argc < 3 || !realpath(argv[1], src)) {
        fprintf(stderr, "usage: %s SRC_DIR MOUNTPOINT [fuse options]\n", argv[0]);
        return 1;
    }
    argv[1] = argv[0]; /* drop SRC_DIR, keep the rest for fuse_main */
    return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
