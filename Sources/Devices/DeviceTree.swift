import Foundation

/// A tree of files taken from a device, read-only: a folder as it is on disk (``DirectoryTree``:
/// a simulator's or an app's container, a file-system extraction) or an iOS backup, whose names
/// come from its manifest (``BackupTree``). A folder mount shows it, with the Core Data stores in it
/// (found by content, ``StoreRecognizer``) as store folders; `storefs find` walks it.
///
/// Paths are relative to the tree's root, components joined by `/` (`""` the root); each
/// component is a name the tree itself listed (``DevicePath/isValidName(_:)``), never `.` or `..`,
/// so no path reaches outside the tree. Nothing is ever written to the tree, and no symlink in it
/// is followed.
///
/// Threading: implementations are safe from several threads at once.
public protocol DeviceTree: AnyObject, Sendable {
    /// The folder the tree is read from.
    var origin: URL { get }
    /// What the tree is, for messages: `folder /x`, `iOS backup /x (Manifest.db, 3,721 files)`.
    var summary: String { get }
    /// Whether its stores are read-only too (a backup: the folder must stay as the device wrote it).
    var isReadOnly: Bool { get }

    /// The names in folder `path`, sorted by their UTF-8 bytes, each with its kind when the
    /// listing says it (a backup's always do; a folder's from the directory entry's type). At
    /// most ``DevicePath/maximumEntries``.
    func listing(of path: String) throws(DeviceError) -> [DeviceName]
    /// The item at `path`.
    func item(at path: String) throws(DeviceError) -> DeviceItem
    /// The items named `names` in folder `path` (nil for a name that is not there): one walk to
    /// the folder for them all.
    func items(named names: [String], in path: String) throws(DeviceError) -> [DeviceItem?]
    /// A descriptor of the regular file at `path`, opened read-only (the caller closes it).
    func openFile(at path: String) throws(DeviceError) -> Int32
    /// The target of the symbolic link at `path`, as recorded.
    func linkTarget(at path: String) throws(DeviceError) -> String
    /// The files of the store at `path`, laid out so that a store type can open it by one file
    /// name (its -wal, -journal and external data beside it).
    func storeLocation(at path: String) throws(DeviceError) -> StoreLocation
    /// Facts the tree records about the item at `path`, as extended attributes (`user.backup.*`);
    /// empty for a folder on disk.
    func facts(of path: String) -> [(name: String, value: String)]
    /// Facts about the whole tree, for the mount's root.
    var rootFacts: [(name: String, value: String)] { get }
}

/// A name in a folder's listing and, when known without asking further, its kind.
public struct DeviceName: Sendable, Hashable {
    public var name: String
    public var kind: DeviceItem.Kind?

    public init(name: String, kind: DeviceItem.Kind?) {
        self.name = name
        self.kind = kind
    }
}

/// One file, folder or link of a ``DeviceTree``.
public struct DeviceItem: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case folder
        case file
        case link
    }

    public var path: String
    public var kind: Kind
    /// Bytes of the file as it is in the folder (not what a manifest says); a link's target length.
    public var size: UInt64
    /// Permission bits (`0o7777`) as recorded.
    public var permissions: UInt32
    public var modified: Date
    public var changed: Date
    /// Identifies the file's bytes without reading them (device, inode, size and times; a
    /// backup's file ID too): what ``StoreRecognizer`` keys its answers by.
    public var identity: String

    public init(
        path: String, kind: Kind, size: UInt64, permissions: UInt32, modified: Date, changed: Date? = nil,
        identity: String
    ) {
        self.path = path
        self.kind = kind
        self.size = size
        self.permissions = permissions
        self.modified = modified
        self.changed = changed ?? modified
        self.identity = identity
    }

    public var name: String { DevicePath.name(of: path) }
}

/// An error reading a device tree: what was wrong, for the log and the user.
public struct DeviceError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Hashable {
        case notFound
        case notFolder
        case notFile
        case notLink
        /// Deeper than ``DevicePath/maximumDepth``, or a name that cannot be shown.
        case refused
        /// Not an iOS backup, or one storefs cannot read (encrypted, another manifest format).
        case unsupported
        /// A manifest larger than storefs reads.
        case tooLarge
        case io
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Paths inside a device tree, and the bounds every walk of one keeps.
public enum DevicePath {
    /// Folders deeper than this are shown empty (their listing is refused): real device trees
    /// are far shallower (an app container's deepest paths have about 15 components), and a
    /// hostile one must not make every request walk thousands of folders.
    public static let maximumDepth = 128
    /// Names a folder's listing holds at most; the rest are left out, and the log says so.
    public static let maximumEntries = 1_000_000
    /// NAME_MAX: longer names cannot be shown.
    public static let maximumNameBytes = 255

    /// The components of `path` (none for the root).
    public static func components(_ path: String) -> [String] {
        path.isEmpty ? [] : path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    }

    /// `folder/name` (`name` in the root).
    public static func join(_ folder: String, _ name: String) -> String { folder.isEmpty ? name : folder + "/" + name }

    /// The folder holding `path` (`""` for a name in the root).
    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// The last component of `path`.
    public static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Whether `name` can be one component of a path shown on Linux: not empty, not `.` or `..`,
    /// no `/` or NUL, at most NAME_MAX bytes.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && name.utf8.count <= maximumNameBytes
            && !name.utf8.contains(where: { $0 == 0x2F || $0 == 0 })
    }

    /// Sorts names by their UTF-8 bytes: the order listings resume in.
    public static func sorted(_ names: [DeviceName]) -> [DeviceName] {
        names.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}
