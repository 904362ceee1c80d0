#if canImport(Glibc)
    import Glibc
#endif

/// An errno that a filesystem operation answers with.
public struct FileSystemError: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let notPermitted = FileSystemError(rawValue: EPERM)
    public static let notFound = FileSystemError(rawValue: ENOENT)
    public static let io = FileSystemError(rawValue: EIO)
    public static let badHandle = FileSystemError(rawValue: EBADF)
    public static let accessDenied = FileSystemError(rawValue: EACCES)
    public static let exists = FileSystemError(rawValue: EEXIST)
    public static let crossDevice = FileSystemError(rawValue: EXDEV)
    public static let notDirectory = FileSystemError(rawValue: ENOTDIR)
    public static let isDirectory = FileSystemError(rawValue: EISDIR)
    public static let invalid = FileSystemError(rawValue: EINVAL)
    public static let tooBig = FileSystemError(rawValue: EFBIG)
    public static let noSpace = FileSystemError(rawValue: ENOSPC)
    public static let readOnly = FileSystemError(rawValue: EROFS)
    public static let range = FileSystemError(rawValue: ERANGE)
    public static let nameTooLong = FileSystemError(rawValue: ENAMETOOLONG)
    public static let notImplemented = FileSystemError(rawValue: ENOSYS)
    public static let notEmpty = FileSystemError(rawValue: ENOTEMPTY)
    public static let noAttribute = FileSystemError(rawValue: ENODATA)
    public static let notSupported = FileSystemError(rawValue: EOPNOTSUPP)
    public static let busy = FileSystemError(rawValue: EBUSY)
    public static let timedOut = FileSystemError(rawValue: ETIMEDOUT)
    /// The request was interrupted (FUSE INTERRUPT: its caller got a signal or was killed).
    public static let interrupted = FileSystemError(rawValue: EINTR)
    /// A lock another holder has, asked for without waiting (EAGAIN, which is EWOULDBLOCK).
    public static let wouldBlock = FileSystemError(rawValue: EAGAIN)
    /// A lock that cannot be kept (a byte range where only whole files are locked).
    public static let noLocks = FileSystemError(rawValue: ENOLCK)

    public var description: String { String(cString: strerror(rawValue)) + " (errno \(rawValue))" }
}
