#ifndef PODFS_CSQLITE_SHIM_H
#define PODFS_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot
/// import it, so bind text and blobs through these.
static inline int podfs_sqlite3_bind_text(sqlite3_stmt *s, int i, const char *t, int n) {
    return sqlite3_bind_text(s, i, t, n, SQLITE_TRANSIENT);
}
static inline int podfs_sqlite3_bind_blob(sqlite3_stmt *s, int i, const void *b, int n) {
    return sqlite3_bind_blob(s, i, b, n, SQLITE_TRANSIENT);
}

#ifdef __linux__
#include <sys/types.h>
/// Glibc declares fallocate(2) only under _GNU_SOURCE, which Swift's Glibc
/// module is not built with. Declared here for RangeCache's ScratchFile, the
/// only importer of this module, which needs it to punch holes.
extern int fallocate(int fd, int mode, off_t offset, off_t len);

/// Deallocates [offset, offset + length) of `fd` without changing its size;
/// the range then reads as zeros (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE).
static inline int podfs_punch_hole(int fd, off_t offset, off_t length) {
    return fallocate(fd, 0x02 /* PUNCH_HOLE */ | 0x01 /* KEEP_SIZE */, offset, length);
}

/// Allocates the blocks of [offset, offset + length) of `fd` without
/// changing its size (FALLOC_FL_KEEP_SIZE); they read as zeros until written.
static inline int podfs_preallocate(int fd, off_t offset, off_t length) {
    return fallocate(fd, 0x01 /* KEEP_SIZE */, offset, length);
}
#endif
#endif
