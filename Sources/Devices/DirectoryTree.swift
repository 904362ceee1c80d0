import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A folder on disk as a ``DeviceTree``: a simulator's or a Mac app's container, an app group
/// folder, a file-system extraction, a folder of stores.
///
/// Every access starts from a descriptor of the folder taken when the tree is made and walks
/// down one component at a time with `O_NOFOLLOW`, so a symbolic link is never followed (links
/// show as links; the kernel resolves them, on this machine, when someone follows one) and
/// a folder replaced by a link meanwhile is refused rather than entered. Nothing is read until
/// asked for: a folder is listed when it is listed, a file stat'ed when it is looked up.
///
/// Threading: stateless after creation; safe from any thread.
public final class DirectoryTree: DeviceTree {
    public let origin: URL
    private let root: Int32

    /// Opens the folder at `folder`.
    public init(folder: URL) throws(DeviceError) {
        origin = folder.standardizedFileURL
        let fd = open(origin.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw DeviceError(.notFolder, "\(origin.path) cannot be opened as a folder (\(FileAccess.reason))")
        }
        root = fd
    }

    deinit { close(root) }

    public var summary: String { "folder \(origin.path)" }
    public var isReadOnly: Bool { false }

    /// A descriptor of folder `path` (the caller closes it), reached without following a link.
    private func folder(_ path: String) throws(DeviceError) -> Int32 {
        let parts = DevicePath.components(path)
        guard parts.count <= DevicePath.maximumDepth else {
            throw DeviceError(
                .refused, "\(path): deeper than \(DevicePath.maximumDepth) folders, which a folder mount does not show")
        }
        // Its own open file description: a dup would share the directory offset with every
        // other listing, and a listing after the first would start at its end.
        var fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw DeviceError(.io, "\(origin.path): \(FileAccess.reason)") }
        for part in parts {
            guard DevicePath.isValidName(part), let next = FileAccess.openFolder(part, in: fd) else {
                let code = errno
                close(fd)
                throw DeviceError(
                    code == ENOENT ? .notFound : .notFolder,
                    "\(path): \(part) is not a folder here (\(String(cString: strerror(code))))")
            }
            close(fd)
            fd = next
        }
        return fd
    }

    public func listing(of path: String) throws(DeviceError) -> [DeviceName] {
        let fd = try folder(path)
        guard let directory = fdopendir(fd) else {
            close(fd)
            throw DeviceError(.io, "\(path): cannot be listed (\(FileAccess.reason))")
        }
        defer { closedir(directory) }
        var names: [DeviceName] = []
        while let entry = readdir(directory) {
            guard names.count < DevicePath.maximumEntries else { break }
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(validatingCString: $0) }
            }
            // A name that is not UTF-8 cannot be named through the mount; it is left out.
            guard let name, DevicePath.isValidName(name) else { continue }
            let kind: DeviceItem.Kind?? =
                switch Int32(entry.pointee.d_type) {
                case Int32(DT_DIR): .folder
                case Int32(DT_REG): .file
                case Int32(DT_LNK): .link
                case Int32(DT_UNKNOWN): .some(nil)
                default: nil
                }
            guard let kind else { continue }
            names.append(DeviceName(name: name, kind: kind))
        }
        return DevicePath.sorted(names)
    }

    public func item(at path: String) throws(DeviceError) -> DeviceItem {
        guard !path.isEmpty else {
            var info = stat()
            guard fstat(root, &info) == 0 else { throw DeviceError(.io, "\(origin.path): \(FileAccess.reason)") }
            return item("", info)
        }
        guard let found = try items(named: [DevicePath.name(of: path)], in: DevicePath.parent(of: path))[0] else {
            throw DeviceError(.notFound, "\(path) is not in \(origin.path)")
        }
        return found
    }

    public func items(named names: [String], in path: String) throws(DeviceError) -> [DeviceItem?] {
        let fd = try folder(path)
        defer { close(fd) }
        return names.map { name in
            guard DevicePath.isValidName(name), let info = FileAccess.status(of: name, in: fd),
                FileAccess.kind(of: info) != nil
            else { return nil }
            return item(DevicePath.join(path, name), info)
        }
    }

    private func item(_ path: String, _ info: stat) -> DeviceItem {
        DeviceItem(
            path: path, kind: FileAccess.kind(of: info) ?? .file, size: UInt64(max(0, info.st_size)),
            permissions: UInt32(info.st_mode) & 0o7777, modified: FileAccess.date(info.st_mtim),
            changed: FileAccess.date(info.st_ctim), identity: FileAccess.identity(of: info))
    }

    public func openFile(at path: String) throws(DeviceError) -> Int32 {
        let fd = try folder(DevicePath.parent(of: path))
        defer { close(fd) }
        let name = DevicePath.name(of: path)
        guard DevicePath.isValidName(name), let file = FileAccess.openFile(name, in: fd) else {
            throw DeviceError(
                errno == ENOENT ? .notFound : .notFile, "\(path): not a regular file here (\(FileAccess.reason))")
        }
        return file
    }

    public func linkTarget(at path: String) throws(DeviceError) -> String {
        let fd = try folder(DevicePath.parent(of: path))
        defer { close(fd) }
        guard let target = FileAccess.linkTarget(DevicePath.name(of: path), in: fd) else {
            throw DeviceError(.notLink, "\(path): not a link (\(FileAccess.reason))")
        }
        return target
    }

    /// A folder's store is opened where it is: its -wal and external data are beside it.
    public func storeLocation(at path: String) throws(DeviceError) -> StoreLocation {
        StoreLocation(url: origin.appendingPathComponent(path), path: path)
    }

    public func facts(of path: String) -> [(name: String, value: String)] { [] }
    public var rootFacts: [(name: String, value: String)] { [] }
}
