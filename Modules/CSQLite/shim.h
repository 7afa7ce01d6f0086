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

/// lseek's SEEK_DATA and SEEK_HOLE are also _GNU_SOURCE-only names.
#include <unistd.h>
static inline off_t podfs_seek_data(int fd, off_t offset) { return lseek(fd, offset, 3 /* SEEK_DATA */); }
static inline off_t podfs_seek_hole(int fd, off_t offset) { return lseek(fd, offset, 4 /* SEEK_HOLE */); }
#endif
#endif
