/* libfuse's private build configuration for Debian 12 (glibc 2.36, Linux headers 6.1), written
 * for storefs in place of the file libfuse's meson configure step generates: each value is what
 * that step finds on Debian 12 (see ../README.md). Only libfuse's own sources include it. */
#ifndef STOREFS_LIBFUSE_FUSE_CONFIG_H
#define STOREFS_LIBFUSE_FUSE_CONFIG_H

#define PACKAGE_VERSION "3.18.3"

#define HAVE_FORK 1
#define HAVE_FSTATAT 1
#define HAVE_OPENAT 1
#define HAVE_READLINKAT 1
#define HAVE_PIPE2 1
#define HAVE_SPLICE 1
#define HAVE_VMSPLICE 1
#define HAVE_POSIX_FALLOCATE 1
#define HAVE_FDATASYNC 1
#define HAVE_UTIMENSAT 1
#define HAVE_COPY_FILE_RANGE 1
#define HAVE_FALLOCATE 1
#undef HAVE_FSPACECTL
#define HAVE_PTHREAD_SETNAME_NP 1
#define HAVE_CLOSE_RANGE 1
/* SYS_listmount is not in Debian 12's kernel headers. */
#undef HAVE_LISTMOUNT
#define HAVE_SYS_XATTR_H 1
#define HAVE_LINUX_LIMITS_H 1
#define HAVE_SETXATTR 1
#define HAVE_ICONV 1
#define HAVE_BACKTRACE 1
#define HAVE_STATX 1
#define HAVE_STRUCT_STAT_ST_ATIM 1
#undef HAVE_STRUCT_STAT_ST_ATIMESPEC

/* No user statically defined tracepoints (meson's enable-usdt defaults to false). */
#undef USDT_ENABLED
/* FUSE over io_uring: Debian's liburing-dev 2.3 has IORING_SETUP_SQE128; libnuma-dev is there. */
#define HAVE_URING 1
/* fuse_session_custom_io stays off, as meson's enable-custom-io defaults to. */
#undef HAVE_CUSTOM_IO

#endif
