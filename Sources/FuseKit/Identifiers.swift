/// An inode number as the kernel sees it. 1 is the mount's root.
public struct InodeNumber: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// The root directory of every mount (`FUSE_ROOT_ID`).
    public static let root = InodeNumber(1)
    public static func < (lhs: InodeNumber, rhs: InodeNumber) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "ino#\(rawValue)" }
}

/// A file handle a filesystem returns from open/opendir/create and gets back on later calls.
public struct FileHandle: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// The handle of an open that keeps no state.
    public static let none = FileHandle(0)
}

/// Who made a request.
public struct RequestContext: Sendable, Hashable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }
}
