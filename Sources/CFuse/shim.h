/* The C surface storefs uses from libfuse 3.14's low-level API. Only what Swift cannot import
 * directly (macros, version-dependent calls) is wrapped here, as static inline functions. */
#ifndef STOREFS_CFUSE_SHIM_H
#define STOREFS_CFUSE_SHIM_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <errno.h>
#include <stddef.h>

/* fuse_session_loop_mt is a macro below API 3.12 and takes a config object from 3.12 on. */
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

#endif
