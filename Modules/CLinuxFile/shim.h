#ifndef PODFS_CLINUXFILE_SHIM_H
#define PODFS_CLINUXFILE_SHIM_H
/// Linux file calls that Swift's Glibc module cannot see: glibc declares
/// them only under _GNU_SOURCE, which that module is not built with.
/// RangeCache's ScratchFile is the only importer.
#ifdef __linux__
#include <sys/types.h>
#include <unistd.h>

extern int fallocate(int fd, int mode, off_t offset, off_t len);

/// Deallocates [offset, offset + length) of `fd` without changing its size;
/// the range then reads as zeros (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE).
static inline int podfs_punch_hole(int fd, off_t offset, off_t length) {
    return fallocate(fd, 0x02 /* PUNCH_HOLE */ | 0x01 /* KEEP_SIZE */, offset, length);
}

/// lseek's SEEK_DATA and SEEK_HOLE.
static inline off_t podfs_seek_data(int fd, off_t offset) { return lseek(fd, offset, 3 /* SEEK_DATA */); }
static inline off_t podfs_seek_hole(int fd, off_t offset) { return lseek(fd, offset, 4 /* SEEK_HOLE */); }
#endif
#endif
