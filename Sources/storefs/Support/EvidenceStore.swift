import ArgumentParser
import Foundation
import FuseKit
import Logging
import ObjectGraph
import StoreFS
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A store opened as evidence: its folder is never written, created in or locked, every file
/// read is recorded with its SHA-256, and edits go to an overlay in memory that never reaches the
/// store (docs/SEMANTICS.md, "Evidence").
///
/// Every command that takes `--evidence` (or `-o evidence`) opens its store here: `storefs mount`,
/// `storefs info`, and `storefs export` and `storefs diff`, which read through ``coordinator``
/// (its store is the overlay: the store as read, with nothing changed unless something writes to
/// it), print ``record``'s files and hashes, and end with ``close()``, whose answer says what
/// changed in the store's folder meanwhile (nothing, unless another program wrote there):
///
/// ```swift
/// let evidence = try EvidenceStore.open(at: url, model: options.model, type: options.type, logger: logger)
/// let context = evidence.coordinator.newContext()
/// ... read ...
/// for file in evidence.record.files { print("\(file.sha256 ?? "")  \(file.path)") }
/// let changed = evidence.close()   // [] when the folder is as it was
/// ```
///
/// What "never written" rests on: the store is opened read-only from a private copy of its files
/// (SQLite: the store and its -wal, ``StoreOptions/hashesInputs``; XML and binary: the bytes read
/// once), no lock file is made (read-only opens take none), the overlay has no file
/// (``OverlayStore/url`` is nil, so a recovery file goes to the temporary folder), and what
/// storefs writes for the evidence itself (the record, exported overlays) goes to a private
/// folder under TMPDIR, removed by ``close()``.
///
/// Threading: safe from any thread; ``close()`` once.
final class EvidenceStore: Sendable {
    /// What an evidence open found and read.
    struct Record: Codable, Sendable {
        var store: String
        /// When the store was opened, ISO 8601 in UTC.
        var opened: String
        var storefs: String
        /// Where the model came from.
        var model: String
        /// Every file read (the store's, then a `--model` file's), with its SHA-256.
        var files: [InputFile]
        /// The store's folder (and its external data folder) when the store was opened: names,
        /// sizes and modification times, to compare with at the end.
        var folder: [FolderEntry]
    }

    /// One entry of the store's folder.
    struct FolderEntry: Codable, Sendable, Equatable {
        /// Relative to the store's folder.
        var name: String
        /// `file`, `folder`, `link` or `other`.
        var kind: String
        var size: Int64
        var modified: String
    }

    let url: URL
    /// The coordinator to read (and, for a mount, write) through: its store is ``overlay``.
    let coordinator: PersistentStoreCoordinator
    let overlay: OverlayStore
    let record: Record
    /// Where the record and exported overlays are written (mode 0700, under TMPDIR).
    let privateFolder: URL
    private let exports = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    /// The mount's filesystem, for the changes it holds that the overlay could not take.
    private let fileSystem = Mutex<StoreFileSystem?>(nil)

    private init(
        url: URL, coordinator: PersistentStoreCoordinator, overlay: OverlayStore, record: Record, privateFolder: URL
    ) {
        self.url = url
        self.coordinator = coordinator
        self.overlay = overlay
        self.record = record
        self.privateFolder = privateFolder
    }

    /// Opens the store at `url` as evidence, with the model at `model` (`--model`) and the type
    /// `type` names (`--type`) when given.
    static func open(
        at url: URL, model: String?, type: String?, configuration: EngineConfiguration = EngineConfiguration(),
        progress: LoadProgress? = nil, logger: Logger
    ) throws -> EvidenceStore {
        guard !StoreURL.isService(url) else {
            throw ValidationError(
                "evidence mode reads store files and checks their folder; \(StoreURL.describe(url)) is a store on a server"
            )
        }
        // The folder as found, before anything of storefs opens a file of it.
        let folder = listing(of: url)
        let opened = ISO8601DateFormatter.string(
            from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withInternetDateTime])
        let given = try StoreTypes.loadModel(at: model, logger: logger)
        let base = try PersistentStoreCoordinator.open(
            at: url, types: StoreTypes.all, model: given?.model,
            options: StoreOptions(readOnly: true, progress: progress, hashesInputs: true), configuration: configuration,
            modelDescription: given?.source, forcedType: try StoreTypes.type(named: type))
        let overlay = OverlayStore(base: base.store)
        let coordinator = PersistentStoreCoordinator(
            store: overlay, configuration: configuration, modelSource: base.modelSource)
        var files = base.store.inputFiles
        if let model, model != "sample" || FileManager.default.fileExists(atPath: model) {
            do {
                files += try modelFiles(at: URL(fileURLWithPath: model))
            } catch {
                coordinator.close()
                throw error
            }
        }
        let record = Record(
            store: url.path, opened: opened, storefs: StoreFSCommand.version, model: base.modelSource.description,
            files: files,
            folder: folder)
        let privateFolder: URL
        do {
            privateFolder = try makePrivateFolder()
            try encoded(record).write(to: privateFolder.appendingPathComponent("evidence.json"))
        } catch {
            coordinator.close()
            throw error
        }
        logger.debug(
            "\(url.path) opened as evidence: \(files.count) files read and hashed; edits go to an overlay in memory")
        return EvidenceStore(
            url: url, coordinator: coordinator, overlay: overlay, record: record, privateFolder: privateFolder)
    }

    /// Closes the store and removes the private folder; returns what changed in the store's
    /// folder since the open (empty: names, kinds, sizes and modification times are as they were).
    @discardableResult
    func close() -> [String] {
        guard !closed.exchange(true, ordering: .relaxed) else { return [] }
        coordinator.close()
        try? FileManager.default.removeItem(at: privateFolder)
        return Self.differences(record.folder, Self.listing(of: url))
    }

    /// Tells the evidence which filesystem serves it, for ``patch()``'s unsaved changes.
    func serve(_ fileSystem: StoreFileSystem) { self.fileSystem.withLock { $0 = fileSystem } }

    // MARK: - The overlay

    /// The overlay's changes as a patch (``OverlayPatch``), with the changes the mount holds that
    /// the overlay did not take (values the model refuses).
    func patch() throws -> OverlayPatch {
        let unsaved =
            fileSystem.withLock { $0 }?.context.pendingChanges().map {
                ($0.objectID, $0.failure?.message ?? "not committed yet")
            } ?? []
        return OverlayPatch(
            try overlay.changes(), model: overlay.model, store: url.path, metadata: try overlay.base.metadata(),
            read: record.files,
            unsaved: unsaved)
    }

    /// Writes the patch to a new file in the private folder and returns its path.
    func exportPatch() throws -> URL {
        let file = privateFolder.appendingPathComponent("overlay-\(exports.add(1, ordering: .relaxed).newValue).json")
        try patch().encoded().write(to: file, options: [.withoutOverwriting])
        return file
    }

    /// The root's extended attributes of an evidence mount: `user.storefs.evidence` (the record,
    /// with the overlay's size) and `user.storefs.overlay` (read by name: writes the overlay as a
    /// patch file and answers its path).
    var rootAttributes: ProvidedAttributes {
        ProvidedAttributes([
            Self.evidenceName: .init(listed: true) { [self] () throws(FileSystemError) -> Data in
                do { return try attributeValue() } catch { throw .io }
            },
            Self.overlayName: .init(listed: false) { [self] () throws(FileSystemError) -> Data in
                do { return Data(try exportPatch().path.utf8) } catch { throw .io }
            }
        ])
    }

    static let evidenceName = "user.storefs.evidence"
    static let overlayName = "user.storefs.overlay"
    /// An extended attribute's value cannot exceed 64 KiB (XATTR_SIZE_MAX); a larger record is
    /// shown without its folder listing, which the record file holds.
    static let attributeLimit = 60_000

    private func attributeValue() throws -> Data {
        struct Shown: Encodable {
            var record: Record
            var recordFile: String
            var overlay: String
        }
        let summary = try patch().summary
        let file = privateFolder.appendingPathComponent("evidence.json").path
        let data = try Self.encoded(Shown(record: record, recordFile: file, overlay: summary))
        guard data.count > Self.attributeLimit else { return data }
        var short = record
        short.folder = []
        if let first = short.files.first { short.files = [first] }
        return try Self.encoded(Shown(record: short, recordFile: file, overlay: summary))
    }

    private static func encoded(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(value)
        data.append(0x0A)
        return data
    }

    // MARK: - The folder

    /// The store's folder, one level, and its external data folder (`.NAME_SUPPORT`) entirely,
    /// sorted by name; entries are lstat'ed, never opened.
    static func listing(of store: URL) -> [FolderEntry] {
        let folder = store.deletingLastPathComponent().path
        var entries: [FolderEntry] = []
        let support = "." + store.deletingPathExtension().lastPathComponent + "_SUPPORT"
        func add(_ relative: String, depth: Int) {
            var info = stat()
            guard lstat(folder + "/" + relative, &info) == 0 else { return }
            let kind: String
            switch info.st_mode & S_IFMT {
            case S_IFREG: kind = "file"
            case S_IFDIR: kind = "folder"
            case S_IFLNK: kind = "link"
            default: kind = "other"
            }
            entries.append(
                FolderEntry(
                    name: relative, kind: kind, size: Int64(info.st_size), modified: InputFile.Stamp(info).modifiedText)
            )
            // The external data folder's files are inputs too; its depth is bounded (a hostile tree).
            if kind == "folder", depth < 4, relative == support || relative.hasPrefix(support + "/") {
                for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder + "/" + relative)) ?? [])
                    .sorted()
                {
                    add(relative + "/" + name, depth: depth + 1)
                }
            }
        }
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
            add(name, depth: 0)
        }
        return entries
    }

    /// What differs between two listings, one line each.
    static func differences(_ before: [FolderEntry], _ after: [FolderEntry]) -> [String] {
        let old = Dictionary(before.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let new = Dictionary(after.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var lines: [String] = []
        for name in Set(old.keys).union(new.keys).sorted() {
            switch (old[name], new[name]) {
            case (nil, let added?): lines.append("\(name): made (\(added.kind), \(added.size) bytes)")
            case (let removed?, nil): lines.append("\(name): removed (\(removed.kind), \(removed.size) bytes)")
            case (let a?, let b?) where a != b:
                lines.append(
                    "\(name): \(a.kind) of \(a.size) bytes modified \(a.modified) is now \(b.kind) of \(b.size) bytes modified \(b.modified)"
                )
            default: break
            }
        }
        return lines
    }

    /// The files of a `--model`: the file (with a store's -wal and -journal), or every regular
    /// file under the folder (an Xcode model, a .momd), hashed.
    private static func modelFiles(at url: URL) throws -> [InputFile] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else { return [] }
        if !isFolder.boolValue {
            return try ["", "-wal", "-journal"].filter {
                $0.isEmpty || FileManager.default.fileExists(atPath: url.path + $0)
            }.map {
                try InputFile.read(URL(fileURLWithPath: url.path + $0), copyingTo: nil, hashing: true).0
            }
        }
        var files: [InputFile] = []
        let paths = (FileManager.default.subpaths(atPath: url.path) ?? []).sorted().prefix(10_000)
        for relative in paths {
            var info = stat()
            let path = url.path + "/" + relative
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            files.append(try InputFile.read(URL(fileURLWithPath: path), copyingTo: nil, hashing: true).0)
        }
        return files
    }

    /// A new folder under TMPDIR, `storefs-evidence-PID-XXXXXX`, mode 0700; those of processes
    /// that died (`kill -9`) are removed first.
    private static func makePrivateFolder() throws -> URL {
        let tmp = (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
        let prefix = "storefs-evidence-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count).prefix(while: { $0 != "-" })), pid > 0, pid != getpid(),
                kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            var info = stat()
            guard lstat(tmp + "/" + name, &info) == 0, info.st_uid == getuid(), (info.st_mode & S_IFMT) == S_IFDIR
            else { continue }
            try? FileManager.default.removeItem(atPath: tmp + "/" + name)
        }
        var template = Array(
            "\(tmp.hasSuffix("/") ? String(tmp.dropLast()) : tmp)/\(prefix)\(getpid())-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw ObjectGraphError(
                .io,
                "cannot make a private folder in \(tmp) (\(String(cString: strerror(errno)))); set TMPDIR to a folder storefs can write"
            )
        }
        return URL(
            fileURLWithPath: String(
                decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
