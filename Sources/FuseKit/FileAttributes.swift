import Foundation

/// The kind of a node.
public enum NodeKind: Sendable, Hashable {
    case directory
    case regularFile
    case symbolicLink
}

/// What `stat` shows for a node.
public struct FileAttributes: Sendable, Hashable {
    public var inode: InodeNumber
    public var kind: NodeKind
    /// Permission bits only (0o755); the kind supplies the file type bits.
    public var permissions: UInt32
    public var size: UInt64
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var modificationTime: Date
    public var changeTime: Date
    public var accessTime: Date

    public init(
        inode: InodeNumber, kind: NodeKind, permissions: UInt32, size: UInt64 = 0,
        linkCount: UInt32 = 1, uid: UInt32 = 0, gid: UInt32 = 0,
        modificationTime: Date = Date(timeIntervalSince1970: 0), changeTime: Date? = nil,
        accessTime: Date? = nil
    ) {
        self.inode = inode
        self.kind = kind
        self.permissions = permissions
        self.size = size
        self.linkCount = linkCount
        self.uid = uid
        self.gid = gid
        self.modificationTime = modificationTime
        self.changeTime = changeTime ?? modificationTime
        self.accessTime = accessTime ?? modificationTime
    }
}

/// A name resolved in a directory, with how long the kernel may cache it.
public struct Entry: Sendable, Hashable {
    public var attributes: FileAttributes
    /// Seconds the kernel may cache the name → inode mapping.
    public var entryTimeout: Double
    /// Seconds the kernel may cache the attributes.
    public var attributeTimeout: Double
    public var generation: UInt64

    public init(attributes: FileAttributes, entryTimeout: Double, attributeTimeout: Double, generation: UInt64 = 0) {
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
        self.generation = generation
    }
}

/// One entry of a directory listing.
public struct DirectoryEntry: Sendable, Hashable {
    public var name: String
    /// The full entry: readdirplus hands it to the kernel (which counts a lookup for it); plain
    /// readdir uses only the inode and kind.
    public var entry: Entry
    /// The cookie that resumes the listing after this entry (never 0).
    public var nextOffset: UInt64

    public init(name: String, entry: Entry, nextOffset: UInt64) {
        self.name = name
        self.entry = entry
        self.nextOffset = nextOffset
    }
}

/// Attribute changes a `setattr` asks for; nil fields are unchanged.
public struct AttributeChanges: Sendable, Hashable {
    public var permissions: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: UInt64?
    public var accessTime: Date?
    public var modificationTime: Date?

    public init(
        permissions: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: UInt64? = nil,
        accessTime: Date? = nil, modificationTime: Date? = nil
    ) {
        self.permissions = permissions
        self.uid = uid
        self.gid = gid
        self.size = size
        self.accessTime = accessTime
        self.modificationTime = modificationTime
    }
}

/// How an open file or directory should be cached by the kernel.
public struct OpenResult: Sendable, Hashable {
    public var handle: FileHandle
    /// Keep the page cache across opens (FOPEN_KEEP_CACHE).
    public var keepCache: Bool
    /// Bypass the page cache (FOPEN_DIRECT_IO).
    public var directIO: Bool
    /// Let the kernel cache directory listings (FOPEN_CACHE_DIR), for opendir.
    public var cacheDirectory: Bool
    /// Whether closing a descriptor of this open sends FLUSH. `false` (FOPEN_NOFLUSH) saves that
    /// round trip on every close of an open that can have nothing to flush, such as a read-only
    /// one; ``FileSystem/flush(_:handle:)`` is then not called for it. Default `true`.
    public var needsFlush: Bool
    /// A descriptor of the file that holds this open's content, for the kernel to read it
    /// itself (FUSE passthrough, ``PassthroughFiles``); nil to serve READ requests. The filesystem
    /// keeps the descriptor open until the handle is released, and serves READ from it when
    /// passthrough is unavailable.
    public var backingFile: Int32?

    public init(
        handle: FileHandle = .none, keepCache: Bool = false, directIO: Bool = false, cacheDirectory: Bool = false,
        needsFlush: Bool = true, backingFile: Int32? = nil
    ) {
        self.backingFile = backingFile
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
        self.cacheDirectory = cacheDirectory
        self.needsFlush = needsFlush
    }
}

/// Filesystem-wide figures for `statfs` (`df`).
public struct FileSystemStatistics: Sendable, Hashable {
    public var blockSize: UInt64 = 4096
    public var blocks: UInt64 = 0
    public var freeBlocks: UInt64 = 0
    public var files: UInt64 = 0
    public var freeFiles: UInt64 = 0
    public var maximumNameLength: UInt64 = 255
    public init() {}
}
