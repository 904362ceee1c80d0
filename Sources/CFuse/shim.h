/* The C surface storefs uses from libfuse's low-level API: libfuse 3.18.3 as vendored in
 * Vendor/libfuse (linked statically, see its README.md). Only what Swift cannot import directly
 * (function-like macros, version-dependent calls) is wrapped here, as static inline functions. */
#ifndef STOREFS_CFUSE_SHIM_H
#define STOREFS_CFUSE_SHIM_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 317
#endif

/* By path, so that the vendored headers are used whatever libfuse3-dev is installed. */
#include "../../Vendor/libfuse/include/fuse_lowlevel.h"
#include "../../Vendor/libfuse/include/fuse_kernel.h"
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <errno.h>
#include <stddef.h>

/* fuse_session_new is a function-like macro from libfuse 3.17 on (it passes the headers' version). */
static inline struct fuse_session *cfuse_session_new(struct fuse_args *args, const struct fuse_lowlevel_ops *op,
                                                     size_t op_size, void *userdata) {
    return fuse_session_new(args, op, op_size, userdata);
}

/* fuse_session_loop_mt is a macro for the versioned entry point and takes a config object. */
static inline int cfuse_session_loop_mt(struct fuse_session *se, unsigned int max_threads,
                                        int max_idle_threads, int clone_fd) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) return -ENOMEM;
    fuse_loop_cfg_set_clone_fd(config, (unsigned int)clone_fd);
    fuse_loop_cfg_set_max_threads(config, max_threads);
    if (max_idle_threads >= 0) fuse_loop_cfg_set_idle_threads(config, (unsigned int)max_idle_threads);
    int rc = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return rc;
}

/* fuse_file_info's flags are bit-fields: read and set them here so the Swift side does not
 * depend on how the importer spells them. */
static inline int cfuse_file_info_kill_suidgid(const struct fuse_file_info *fi) { return fi->kill_suidgid; }
static inline void cfuse_file_info_set_noflush(struct fuse_file_info *fi, int value) { fi->noflush = value ? 1 : 0; }
static inline int cfuse_file_info_flock_release(const struct fuse_file_info *fi) { return fi->flock_release; }

#endif
