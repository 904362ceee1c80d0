#if canImport(Glibc)
    import Glibc
#endif

/// The flags of an `open(2)` or `creat(2)` as the kernel hands them to OPEN and CREATE: what a
/// filesystem needs to know of them without touching `O_*` constants.
public struct OpenFlags: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Opened for writing (O_WRONLY or O_RDWR).
    public var isWriting: Bool { rawValue & O_ACCMODE != O_RDONLY }
    /// Opened for reading (O_RDONLY or O_RDWR).
    public var isReading: Bool { rawValue & O_ACCMODE != O_WRONLY }
    /// To be truncated on open (O_TRUNC; FuseKit asks for atomic O_TRUNC, so it arrives here).
    public var truncates: Bool { rawValue & O_TRUNC != 0 }
    /// Every write goes to the end (O_APPEND).
    public var appends: Bool { rawValue & O_APPEND != 0 }

    /// Flags for tests and embedded use: reading, writing, or both, with O_TRUNC and O_APPEND.
    public static func make(
        reading: Bool = true, writing: Bool = false, truncating: Bool = false, appending: Bool = false
    )
        -> OpenFlags
    {
        var raw: Int32 = reading && writing ? O_RDWR : writing ? O_WRONLY : O_RDONLY
        if truncating { raw |= O_TRUNC }
        if appending { raw |= O_APPEND }
        return OpenFlags(rawValue: raw)
    }
}
