/* libfuse's public build configuration, written for storefs in place of the file libfuse's meson
 * configure step generates (see ../README.md). storefs links libfuse statically into its own
 * binaries, so no versioned symbols (LIBFUSE_BUILT_WITH_VERSIONED_SYMBOLS stays undefined): the
 * headers then name the versioned entry points (fuse_session_loop_mt_312, ...) directly. */
#ifndef STOREFS_LIBFUSE_CONFIG_H
#define STOREFS_LIBFUSE_CONFIG_H

#define FUSE_MAJOR_VERSION 3
#define FUSE_MINOR_VERSION 18
#define FUSE_HOTFIX_VERSION 3
#define FUSE_RC_VERSION

#endif
