import Decoding
import Foundation
import ObjectGraph
import SQLiteRecovery

#if canImport(Glibc)
    import Glibc
#endif

/// An iOS backup (iTunes, Finder, idevicebackup2) as a ``DeviceTree``: `DOMAIN/RELATIVE/PATH`
/// for every file its manifest lists and its folder holds, folders as folders, links as links.
///
/// The manifest is `Manifest.db` (iOS 10 and later: files under the SHA-1 of
/// `DOMAIN-relativePath` in two-letter folders) or `Manifest.mbdb` (iOS 5–9: the same names, in
/// the top folder). It is read whole when the tree is made (``BackupIndex`` says how hostile
/// rows are refused); the files themselves are read only when asked for, each opened by its file
/// ID inside the backup's folder without following a link, so no row reaches outside it.
///
/// Encrypted backups (`Manifest.plist` IsEncrypted) are refused: storefs does not decrypt them.
///
/// Threading: immutable after ``open(_:)``; safe from any thread.
public final class BackupTree: DeviceTree {
    public let origin: URL
    public let index: BackupIndex
    /// `Manifest.db` or `Manifest.mbdb`.
    public let format: String
    private let root: Int32
    private let properties: [(name: String, value: String)]

    public var isReadOnly: Bool { true }
    public var summary: String {
        "iOS backup \(origin.path) (\(format), \(index.presentFiles) files, \(index.missingFiles) listed but missing)"
    }

    /// Whether `folder` holds an iOS backup's manifest (`Manifest.db` or `Manifest.mbdb`).
    public static func isBackup(_ folder: URL) -> Bool {
        ["Manifest.db", "Manifest.mbdb"].contains {
            var info = stat()
            return lstat(folder.appendingPathComponent($0).path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }

    /// Why the backup at `folder` cannot be mounted before its manifest is read (it is
    /// encrypted); nil when it is no backup or can be read.
    public static func refusal(of folder: URL) -> String? {
        guard isBackup(folder) else { return nil }
        let root = Glibc.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return nil }
        defer { close(root) }
        return encryptionRefusal(propertyList("Manifest.plist", in: root), origin: folder.standardizedFileURL)
    }

    private static func encryptionRefusal(_ manifest: PropertyListValue?, origin: URL) -> String? {
        guard manifest?["IsEncrypted"]?.bool == true else { return nil }
        return "\(origin.path) is an encrypted backup (Manifest.plist: IsEncrypted): storefs does not decrypt backups; "
            + "make an unencrypted one (Finder or iTunes: untick \"Encrypt local backup\"; idevicebackup2 encryption off) "
            + "or decrypt this one first (docs/DEVICES.md)"
    }

    /// Reads the backup at `folder`: refuses an encrypted one, reads its manifest and checks
    /// which of the files it lists are there.
    public static func open(_ folder: URL) throws(DeviceError) -> BackupTree {
        let origin = folder.standardizedFileURL
        let root = Glibc.open(origin.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else {
            throw DeviceError(.notFolder, "\(origin.path) cannot be opened as a folder (\(FileAccess.reason))")
        }
        do throws(DeviceError) {
            let manifest = propertyList("Manifest.plist", in: root)
            if let refusal = encryptionRefusal(manifest, origin: origin) { throw DeviceError(.unsupported, refusal) }
            let info = propertyList("Info.plist", in: root)
            let (records, unreadable, format, flat) = try readManifest(in: root, origin: origin)
            let index = BackupIndex(records: records, unreadableRows: unreadable) { fileID in
                fileStatus(fileID, flat: flat, in: root)
            }
            return BackupTree(
                origin: origin, index: index, format: format, root: root,
                properties: deviceFacts(manifest: manifest, info: info, flat: flat))
        } catch {
            close(root)
            throw error
        }
    }

    private init(
        origin: URL, index: BackupIndex, format: String, root: Int32, properties: [(name: String, value: String)]
    ) {
        self.origin = origin
        self.index = index
        self.format = format
        self.root = root
        self.properties = properties
    }

    deinit { close(root) }

    // MARK: - Reading the backup's own files

    /// The records of the manifest, rows that did not read, its name, and whether its files sit
    /// in the top folder (Manifest.mbdb) rather than in two-letter folders.
    private static func readManifest(in root: Int32, origin: URL) throws(DeviceError) -> (
        [BackupRecord], Int, String, Bool
    ) {
        if let fd = FileAccess.openFile("Manifest.db", in: root) {
            let database = FileBytes(descriptor: fd)
            let log = FileAccess.openFile("Manifest.db-wal", in: root).map { FileBytes(descriptor: $0) }
            let (records, unreadable) = try ManifestDatabase.records(
                database: database, log: log, path: origin.appendingPathComponent("Manifest.db").path)
            return (records, unreadable, "Manifest.db", false)
        }
        guard let fd = FileAccess.openFile("Manifest.mbdb", in: root) else {
            throw DeviceError(
                .unsupported, "\(origin.path) is not an iOS backup: it has no Manifest.db or Manifest.mbdb file")
        }
        let bytes = FileBytes(descriptor: fd)
        guard bytes.size <= 1 << 30, let content = bytes.bytes(at: 0, count: Int(bytes.size)) else {
            throw DeviceError(.tooLarge, "\(origin.path)/Manifest.mbdb: more than 1 GiB, or unreadable")
        }
        let (records, truncated) = try ManifestMBDB.records(content)
        return (records, truncated ? 1 : 0, "Manifest.mbdb", true)
    }

    /// A property list in the backup's top folder (binary or XML), at most 16 MiB; nil when
    /// there is none or it does not read.
    private static func propertyList(_ name: String, in root: Int32) -> PropertyListValue? {
        guard let fd = FileAccess.openFile(name, in: root) else { return nil }
        let bytes = FileBytes(descriptor: fd)
        guard bytes.size <= 16 << 20, let content = bytes.bytes(at: 0, count: Int(bytes.size)) else { return nil }
        let data = Data(content)
        if BinaryPropertyList.looksLikeBinaryPropertyList(data) {
            return try? BinaryPropertyList.parse(data, source: name)
        }
        return XMLPropertyListReader.parse(data)
    }

    /// What the backup says about the device: `user.backup.device`, `.productType`,
    /// `.productVersion`, `.date`, `.udid`.
    private static func deviceFacts(manifest: PropertyListValue?, info: PropertyListValue?, flat: Bool) -> [(
        name: String, value: String
    )] {
        let lockdown = manifest?["Lockdown"]
        func text(_ values: PropertyListValue?...) -> String? {
            for value in values {
                if let string = value?.string { return string }
                if case .date(let seconds)? = value {
                    return BackupFileFacts.time(Int64(seconds + Date.timeIntervalBetween1970AndReferenceDate))
                }
            }
            return nil
        }
        var result: [(String, String)] = []
        if let name = text(info?["Device Name"], lockdown?["DeviceName"]) {
            result.append(("user.backup.device", name))
        }
        if let type = text(info?["Product Type"], lockdown?["ProductType"]) {
            result.append(("user.backup.productType", type))
        }
        if let version = text(info?["Product Version"], lockdown?["ProductVersion"]) {
            result.append(("user.backup.productVersion", version))
        }
        if let date = text(info?["Last Backup Date"], manifest?["Date"]) { result.append(("user.backup.date", date)) }
        if let udid = text(info?["Unique Identifier"], lockdown?["UniqueDeviceID"]) {
            result.append(("user.backup.udid", udid))
        }
        return result
    }

    /// The status of the backup's file `fileID` when it is a regular file inside the backup's
    /// folder (reached without following a link); nil otherwise.
    private static func fileStatus(_ fileID: String, flat: Bool, in root: Int32) -> stat? {
        guard BackupIndex.isFileID(fileID) else { return nil }
        if flat {
            guard let info = FileAccess.status(of: fileID, in: root), (info.st_mode & S_IFMT) == S_IFREG else {
                return nil
            }
            return info
        }
        guard let folder = FileAccess.openFolder(String(fileID.prefix(2)), in: root) else { return nil }
        defer { close(folder) }
        guard let info = FileAccess.status(of: fileID, in: folder), (info.st_mode & S_IFMT) == S_IFREG else {
            return nil
        }
        return info
    }

    private var isFlat: Bool { format == "Manifest.mbdb" }

    /// Where file `fileID` is, relative to the backup's folder.
    private func location(of fileID: String) -> String { isFlat ? fileID : "\(fileID.prefix(2))/\(fileID)" }

    private func openBackupFile(_ fileID: String) -> Int32? {
        guard BackupIndex.isFileID(fileID) else { return nil }
        if isFlat { return FileAccess.openFile(fileID, in: root) }
        guard let folder = FileAccess.openFolder(String(fileID.prefix(2)), in: root) else { return nil }
        defer { close(folder) }
        return FileAccess.openFile(fileID, in: folder)
    }

    // MARK: - The tree

    private func node(_ path: String) throws(DeviceError) -> BackupIndex.Node {
        guard let node = index.node(at: path) else { throw DeviceError(.notFound, "\(path) is not in the backup") }
        return node
    }

    public func listing(of path: String) throws(DeviceError) -> [DeviceName] {
        let folder = try node(path)
        guard folder.kind == .folder else { throw DeviceError(.notFolder, "\(path) is not a folder") }
        return index.children(of: folder).map { DeviceName(name: $0.name, kind: $0.kind) }
    }

    public func item(at path: String) throws(DeviceError) -> DeviceItem { item(try node(path), path) }

    public func items(named names: [String], in path: String) throws(DeviceError) -> [DeviceItem?] {
        names.map { name in
            let full = DevicePath.join(path, name)
            return index.node(at: full).map { item($0, full) }
        }
    }

    private func item(_ node: BackupIndex.Node, _ path: String) -> DeviceItem {
        let facts = node.record.map { index.records[$0].facts }
        let fileID = node.record.map { index.records[$0].fileID } ?? ""
        let modified = facts?.modified.map { Date(timeIntervalSince1970: Double($0)) } ?? Date(timeIntervalSince1970: 0)
        let changed = facts?.statusChanged.map { Date(timeIntervalSince1970: Double($0)) }
        let defaultPermissions: UInt32 = node.kind == .folder ? 0o755 : node.kind == .link ? 0o777 : 0o644
        let permissions = facts?.mode.map { UInt32(truncatingIfNeeded: $0) & 0o7777 } ?? defaultPermissions
        let size: UInt64 =
            switch node.kind {
            case .file: node.size
            case .link: UInt64(facts?.target?.utf8.count ?? 0)
            case .folder: 0
            }
        return DeviceItem(
            path: path, kind: node.kind, size: size, permissions: permissions, modified: modified, changed: changed,
            identity: "backup:\(fileID):\(node.size):\(node.diskIdentity)")
    }

    public func openFile(at path: String) throws(DeviceError) -> Int32 {
        let file = try node(path)
        guard file.kind == .file, let record = file.record else {
            throw DeviceError(.notFile, "\(path) is not a file of the backup")
        }
        guard let fd = openBackupFile(index.records[record].fileID) else {
            throw DeviceError(
                .notFound,
                "\(path): the backup's file \(location(of: index.records[record].fileID)) cannot be read (\(FileAccess.reason))"
            )
        }
        return fd
    }

    public func linkTarget(at path: String) throws(DeviceError) -> String {
        let link = try node(path)
        guard link.kind == .link, let record = link.record, let target = index.records[record].facts.target else {
            throw DeviceError(.notLink, "\(path) is not a link of the backup")
        }
        return target
    }

    /// The store laid out in a private folder (``StoreLocation``): its file, its `-wal` and
    /// `-journal` (the manifest's `relativePath` with the suffix, in the same domain), and its
    /// external data folder `.NAME_SUPPORT`, each a copy of the backup's file.
    public func storeLocation(at path: String) throws(DeviceError) -> StoreLocation {
        let store = try node(path)
        guard store.kind == .file, let record = store.record else {
            throw DeviceError(.notFile, "\(path) is not a file of the backup")
        }
        let name = DevicePath.name(of: path)
        let folder = DevicePath.parent(of: path)
        var files: [(name: String, descriptor: Int32)] = []
        defer { for file in files { close(file.descriptor) } }
        func link(_ fileID: String, as copyName: String) throws(DeviceError) {
            guard let fd = openBackupFile(fileID) else {
                throw DeviceError(.notFound, "\(path): the backup's file \(location(of: fileID)) cannot be read")
            }
            files.append((copyName, fd))
        }
        try link(index.records[record].fileID, as: name)
        for suffix in ["-wal", "-journal"] {
            if let companion = index.node(at: path + suffix), companion.kind == .file, let row = companion.record {
                try link(index.records[row].fileID, as: name + suffix)
            }
        }
        let support = "." + ((name as NSString).deletingPathExtension) + "_SUPPORT"
        let supportPath = DevicePath.join(folder, support)
        if let top = index.node(at: supportPath), top.kind == .folder {
            var pending = [(top, support)]
            var count = 0
            while let (folderNode, relative) = pending.popLast(), count < 100_000 {
                for child in index.children(of: folderNode) {
                    count += 1
                    let childPath = relative + "/" + child.name
                    if child.kind == .folder {
                        pending.append((child, childPath))
                    } else if child.kind == .file, let row = child.record {
                        try link(index.records[row].fileID, as: childPath)
                    }
                }
            }
        }
        return try StoreLocation.staged(files, path: path)
    }

    public func facts(of path: String) -> [(name: String, value: String)] {
        guard !path.isEmpty, let node = index.node(at: path) else { return [] }
        let parts = DevicePath.components(path)
        var result: [(String, String)] = [
            ("user.backup.domain", parts[0]),
            ("user.backup.relativePath", parts.dropFirst().joined(separator: "/"))
        ]
        guard let row = node.record else { return result }
        let record = index.records[row]
        if node.kind == .file { result.insert(("user.backup.fileID", record.fileID), at: 0) }
        result += record.facts.attributes
        return result
    }

    public var rootFacts: [(name: String, value: String)] {
        var result: [(String, String)] = [
            ("user.backup.format", format),
            ("user.backup.files", String(index.presentFiles)),
            ("user.backup.missing", String(index.missingFiles)),
            ("user.backup.skipped", String(index.skipped.values.reduce(0, +)))
        ]
        if !index.skipped.isEmpty {
            result.append(
                (
                    "user.backup.skippedReasons",
                    index.skipped.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")
                ))
        }
        return result + properties
    }
}
