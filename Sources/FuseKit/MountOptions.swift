import Foundation

/// How a ``FuseSession`` mounts: the libfuse command-line and `-o` options, each default with the
/// reason it was chosen.
///
/// Cache lifetimes (entry and attribute timeouts) are not here: the filesystem returns them with
/// every reply (``Entry``, ``FileSystem/attributes(of:handle:)``).
///
/// ```swift
/// var options = MountOptions(readOnly: true)
/// options.fsName = "Notes.sqlite"
/// ```
public struct MountOptions: Sendable, Hashable {
    /// Mount read-only (`-o ro`). Default `false`: storefs mounts are writable unless asked.
    /// A read-only mount is also faster: a rw mount drops cached atime after every read, so the
    /// next fstat costs a GETATTR round trip (measured: docs/benchmarks.md).
    public var readOnly: Bool
    /// Let other users than the mounting one see the mount (`-o allow_other`). Default `false`:
    /// a store holds one user's data; non-root use also needs `user_allow_other` in /etc/fuse.conf.
    public var allowOther: Bool
    /// Have `fusermount3` unmount when the process dies (`-o auto_unmount`). Default `true`: a
    /// crashed daemon otherwise leaves a mount answering "Transport endpoint is not connected".
    public var autoUnmount: Bool
    /// Let the kernel check permission bits (`-o default_permissions`). Default `true`: the
    /// filesystem then needs no `access` handler and the kernel sends no ACCESS requests.
    public var defaultPermissions: Bool
    /// The source shown by `mount` and `df` (`-o fsname=`). Default "storefs".
    public var fsName: String
    /// The type shown as `fuse.<subtype>` (`-o subtype=`). Default "storefs", so
    /// `findmnt -t fuse.storefs` finds every storefs mount.
    public var subtype: String
    /// The most libfuse worker threads (`max_threads`). Default 8: about the size of the SQLite
    /// reader pool; more threads would only wait for a connection. Idle threads are never torn
    /// down (`max_idle_threads` -1), because creating threads is expensive.
    public var maxThreads: Int
    /// Extra `-o` options passed through unchanged, e.g. `["max_read=131072"]`. Default none.
    /// libfuse rejects unknown ones, so ``FuseSession/init(fileSystem:mountPoint:options:counters:)``
    /// throws for them.
    public var extraOptions: [String]
    /// Let the kernel open and close files and directories without asking (zero-message open,
    /// FUSE_CAP_NO_OPEN_SUPPORT and FUSE_CAP_NO_OPENDIR_SUPPORT). FuseKit answers the first OPEN,
    /// FLUSH and OPENDIR with ENOSYS; the kernel then sends no OPEN, FLUSH, RELEASE, OPENDIR or
    /// RELEASEDIR for the rest of the mount, keeps file pages and directory listings across opens,
    /// and READ and READDIR(PLUS) arrive with handle 0. Reading a small file costs one round trip
    /// instead of four, and listing a directory two fewer. Default `false`: only for filesystems
    /// that need no per-open state, such as a read-only storefs mount; ``FileSystem/open(_:flags:context:)``,
    /// ``FileSystem/flush(_:handle:)``, ``FileSystem/release(_:handle:flags:)``,
    /// ``FileSystem/openDirectory(_:flags:context:)`` and ``FileSystem/releaseDirectory(_:handle:)`` are
    /// then not called. Each half is ignored (opens are asked as usual) when the kernel does not
    /// offer it.
    public var opensWithoutRequests: Bool
    /// Let the kernel keep symbolic link targets in its page cache (FUSE_CAP_CACHE_SYMLINKS), so
    /// `ls -l` of a folder of links asks for each target once per mount instead of every time.
    /// Default `false`: a filesystem whose link changes its target under the same inode must then
    /// drop it with ``KernelCacheInvalidator/invalidateInode(_:)``; a read-only storefs mount,
    /// whose links change only by other processes' commits (which it invalidates), asks for it.
    public var cachesLinkTargets: Bool
    /// Install libfuse's handlers so SIGINT, SIGTERM and SIGHUP end ``FuseSession/run()``.
    /// Default `true`. libfuse keeps one process-wide session for its handlers, so a process that
    /// runs several sessions at once (tests) should set it on at most one of them.
    public var handlesSignals: Bool
    /// Print every request and reply to stderr (libfuse `-d`). Default `false`: very verbose.
    public var debug: Bool
    /// Exchange requests through FUSE over io_uring when the kernel offers it (`-o io_uring`),
    /// through /dev/fuse otherwise. Default `true`, unless the environment has
    /// `STOREFS_IO_URING=0`: a round trip costs 10-11 µs through the ring against 28 µs through
    /// /dev/fuse here (docs/benchmarks.md section 14), and the variable lets a test run or an
    /// operator turn it off for every mount of a process tree. When on, ``FuseSession/mount()``
    /// also turns the kernel's `enable_uring` parameter on where it may (root).
    public var ioUring: Bool
    /// Threads that serve the requests a filesystem says may take long
    /// (``FileSystem/mayTakeLong(_:)``; ``SlowRequests``). Default 4: each runs one computed
    /// answer at a time, bounded in time by the filesystem, so four let a few slow answers run
    /// while the rest of the mount goes on, and a hostile loop of them holds at most four CPUs'
    /// worth of work (the others wait their turn, each one blocked process).
    public var slowRequestThreads: Int = 4

    /// ``ioUring``'s default: on unless `STOREFS_IO_URING=0` is in the environment.
    public static var ioUringByDefault: Bool { ioUringByDefault(in: ProcessInfo.processInfo.environment) }

    /// ``ioUring``'s default in a process whose environment is `environment`: on unless it holds
    /// `STOREFS_IO_URING=0`.
    public static func ioUringByDefault(in environment: [String: String]) -> Bool {
        environment["STOREFS_IO_URING"] != "0"
    }

    public init(
        readOnly: Bool = false, allowOther: Bool = false, autoUnmount: Bool = true,
        defaultPermissions: Bool = true, fsName: String = "storefs", subtype: String = "storefs",
        maxThreads: Int = 8, extraOptions: [String] = [],
        opensWithoutRequests: Bool = false, handlesSignals: Bool = true, debug: Bool = false,
        ioUring: Bool = MountOptions.ioUringByDefault, cachesLinkTargets: Bool = false
    ) {
        self.readOnly = readOnly
        self.allowOther = allowOther
        self.autoUnmount = autoUnmount
        self.defaultPermissions = defaultPermissions
        self.fsName = fsName
        self.subtype = subtype
        self.maxThreads = maxThreads
        self.extraOptions = extraOptions
        self.opensWithoutRequests = opensWithoutRequests
        self.handlesSignals = handlesSignals
        self.debug = debug
        self.ioUring = ioUring
        self.cachesLinkTargets = cachesLinkTargets
    }

    /// The argument vector handed to `fuse_session_new`.
    var arguments: [String] {
        var mountOptions: [String] = []
        if readOnly { mountOptions.append("ro") }
        if allowOther { mountOptions.append("allow_other") }
        if autoUnmount { mountOptions.append("auto_unmount") }
        if defaultPermissions { mountOptions.append("default_permissions") }
        mountOptions.append("fsname=" + Self.escaped(fsName))
        mountOptions.append("subtype=" + Self.escaped(subtype))
        if ioUring { mountOptions.append("io_uring") }
        mountOptions += extraOptions
        var arguments = ["storefs", "-o", mountOptions.joined(separator: ",")]
        if debug { arguments.append("-d") }
        return arguments
    }

    /// Escapes what fuse_opt treats specially inside one `-o` value (commas and backslashes).
    private static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ",", with: "\\,")
    }
}
