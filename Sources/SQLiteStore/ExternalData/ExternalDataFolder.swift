import Foundation
import GRDB
import Logging
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

/// Core Data's external binary data: values of attributes that allow external storage ("Allows
/// External Storage" in Xcode) are kept in the row with a one-byte marker, and the large ones in
/// files beside the store.
///
/// The format, as three independent public readers of real app stores describe it (no store in
/// the test corpus holds such a value, so it is not verified against Core Data itself):
/// - `0x01` followed by the value's bytes: the value is in the row;
/// - `0x02` followed by a UUID in ASCII (36 characters; a trailing NUL is accepted): the value is
///   the file `.<store name without extension>_SUPPORT/_EXTERNAL_DATA/<UUID>` beside the store.
///
/// Only attributes whose model allows external storage are read this way: the same first bytes
/// occur in other columns (hashes, UUIDs). Values written go to a file when they are larger than
/// ``threshold`` (Core Data decides per value, "about 100 KB" in public reports), written to a
/// temporary name, synced and renamed before the transaction that refers to them commits; the
/// files of values a save replaces or deletes are removed after it commits (``ExternalDataChanges``).
///
/// Threading: a value; share it freely. Reading and writing files is safe from any thread.
struct ExternalDataFolder: Sendable {
    /// `.<name>_SUPPORT/_EXTERNAL_DATA` beside the store.
    let folder: URL
    /// The store file, whose owner and mode new files and folders take.
    let store: URL
    let logger: Logger

    /// Values larger than this go to a file.
    static let threshold = 128 * 1024
    /// Larger files are not read (a damaged or hostile folder cannot make storefs allocate
    /// without bound): such a value reads as absent, with a log line.
    static let maximumFileSize = 1 << 30
    static let inlineMarker: UInt8 = 0x01
    static let externalMarker: UInt8 = 0x02
    /// The suffix of files being written; leftovers of a crash are storefs's to remove.
    static let temporarySuffix = ".storefs-tmp"

    init(store: URL, logger: Logger) {
        let name = store.deletingPathExtension().lastPathComponent
        self.store = store
        self.folder = store.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT")
            .appendingPathComponent("_EXTERNAL_DATA")
        self.logger = logger
    }

    // MARK: - Reading

    /// The value a stored column holds: the bytes after an inline marker, or the content of the
    /// file an external reference names. A reference whose file is missing, unreadable or too
    /// large reads as NULL (the object stays readable; the log names the file); a value without
    /// a marker (written by a tool that did not know the format) is shown as it is.
    /// With `asFile`, a value in a file is not read: its ``FileBackedValue`` reference stands for it.
    func resolve(_ value: DatabaseValue, place: @autoclosure () -> String, asFile: Bool = false) -> DatabaseValue {
        guard case .blob(let data) = value.storage, let marker = data.first else { return value }
        switch marker {
        case Self.inlineMarker:
            return Data(data.dropFirst()).databaseValue
        case Self.externalMarker:
            guard let name = Self.fileName(inReference: data) else {
                logger.error("\(place()): an external data reference that is not a UUID; the value reads as absent")
                return .null
            }
            let file = folder.appendingPathComponent(name)
            if asFile {
                var info = stat()
                if lstat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                    return FileBackedValue(path: file.path).reference.databaseValue
                }
            }
            do {
                return try Self.read(file).databaseValue
            } catch {
                logger.error(
                    "\(place()): its value is kept in \(file.path), which cannot be read (\(error)); it reads as absent"
                )
                return .null
            }
        default:
            logger.debug("\(place()): a value without Core Data's external-storage marker; shown as stored")
            return value
        }
    }

    /// The file name (an upper-case UUID) an external reference names; nil unless the bytes are
    /// the marker and a UUID, so no reference can name another path.
    static func fileName(inReference data: Data) -> String? {
        var bytes = data.dropFirst()
        guard data.first == externalMarker else { return nil }
        if bytes.last == 0 { bytes = bytes.dropLast() }
        guard bytes.count == 36, let text = String(bytes: bytes, encoding: .ascii), let uuid = UUID(uuidString: text)
        else {
            return nil
        }
        // Core Data's UUIDs are upper case; a lower-case name on disk is kept as written.
        return text == uuid.uuidString || text == uuid.uuidString.lowercased() ? text : nil
    }

    private static func read(_ file: URL) throws -> Data {
        // A regular file only, opened without waiting: a FIFO with a value's name would block
        // the read (RegularFile).
        let (descriptor, status) = try RegularFile.openForReading(file, as: "values kept outside the store")
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        defer { try? handle.close() }
        let size = UInt64(max(status.st_size, 0))
        guard size <= UInt64(maximumFileSize) else {
            throw ObjectGraphError(.io, "\(size) bytes, more than the \(maximumFileSize) storefs reads")
        }
        let data = try handle.read(upToCount: Int(size)) ?? Data()
        guard data.count == Int(size) else { throw ObjectGraphError(.io, "the file changed while it was read") }
        return data
    }

    /// Every regular file of the folder (none when there is no folder), read and hashed, by name:
    /// the inputs an evidence open records. Values are read from the files when needed, later.
    func inputFiles() throws(ObjectGraphError) -> [InputFile] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var files: [InputFile] = []
        for name in names.sorted() {
            let file = folder.appendingPathComponent(name)
            guard let stamp = InputFile.Stamp(path: file.path) else { continue }
            var info = stat()
            guard lstat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, stamp.size >= 0 else { continue }
            files.append(try InputFile.read(file, copyingTo: nil, hashing: true).0)
        }
        return files
    }

    // MARK: - Writing

    /// The column value for `data`: inline with its marker, or, above ``threshold``, a reference
    /// to a new file written (and synced) now and listed in `changes` so it goes if the save
    /// does not commit.
    func encode(_ data: Data, changes: inout ExternalDataChanges) throws(ObjectGraphError) -> DatabaseValue {
        if let value = FileBackedValue(reference: data) { return try adopt(value, changes: &changes) }
        guard data.count > Self.threshold else {
            var inline = Data([Self.inlineMarker])
            inline.append(data)
            return inline.databaseValue
        }
        let name = UUID().uuidString
        let file = folder.appendingPathComponent(name)
        do {
            try makeFolder()
            let temporary = folder.appendingPathComponent(".\(name)\(Self.temporarySuffix)")
            do {
                try write(data, to: temporary)
            } catch {
                // A full disk leaves no half-written file behind to take more of it.
                try? FileManager.default.removeItem(at: temporary)
                throw error
            }
            changes.staged.append(file)
            guard rename(temporary.path, file.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw ObjectGraphError(.io, "cannot rename \(temporary.path) to \(name): \(reason)")
            }
            try Self.sync(folder.path)
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw ObjectGraphError(.io, "writing external data to \(file.path): \(error)")
        }
        var reference = Data([Self.externalMarker])
        reference.append(contentsOf: Array(name.utf8))
        return reference.databaseValue
    }

    // MARK: - Values written into their files

    /// A new empty file for a value to be written into (``FileBackedValueStore/newValueFile(for:)``):
    /// `.<UUID>.storefs-tmp` in the folder, and the value it becomes, the file `<UUID>`.
    func newValueFile() throws(ObjectGraphError) -> (writing: String, value: FileBackedValue) {
        let name = UUID().uuidString
        let temporary = folder.appendingPathComponent(".\(name)\(Self.temporarySuffix)")
        do {
            try makeFolder()
        } catch let error as ObjectGraphError {
            throw error
        } catch {
            throw ObjectGraphError(.io, "making \(folder.path): \(error)")
        }
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ObjectGraphError.writing("cannot create \(temporary.path)", errno: errno) }
        adoptOwnership(fd: fd, mode: storeMode & 0o666)
        close(fd)
        return (temporary.path, FileBackedValue(path: folder.appendingPathComponent(name).path))
    }

    /// The file name of a value file in this folder, nil for any other path.
    private func name(of value: FileBackedValue) -> String? {
        let url = URL(fileURLWithPath: value.path)
        let name = url.lastPathComponent
        guard url.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path,
            UUID(uuidString: name) != nil
        else { return nil }
        return name
    }

    private func temporaryFile(named name: String) -> URL {
        folder.appendingPathComponent(".\(name)\(Self.temporarySuffix)")
    }

    /// Where `value` is now: its file once saved, its temporary file while it is being written.
    func currentFile(of value: FileBackedValue) -> String? {
        guard let name = name(of: value) else { return nil }
        let temporary = temporaryFile(named: name)
        if access(value.path, F_OK) == 0 { return value.path }
        return access(temporary.path, F_OK) == 0 ? temporary.path : nil
    }

    func discard(_ value: FileBackedValue) {
        guard let name = name(of: value) else { return }
        unlink(temporaryFile(named: name).path)
    }

    /// The reference for a value written into its file: a file still being written is synced
    /// and renamed into place (listed in `changes`, so a rollback renames it back and the value
    /// can be saved again); one already in place (saved before) is kept as it is.
    private func adopt(_ value: FileBackedValue, changes: inout ExternalDataChanges) throws(ObjectGraphError)
        -> DatabaseValue
    {
        guard let name = name(of: value) else {
            throw ObjectGraphError(.validation, "\(value.path) is not a file of \(folder.path)")
        }
        let file = folder.appendingPathComponent(name)
        let temporary = temporaryFile(named: name)
        if access(temporary.path, F_OK) == 0 {
            let fd = open(temporary.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw ObjectGraphError.writing("cannot open \(temporary.path)", errno: errno) }
            let synced = fsync(fd)
            let error = errno
            close(fd)
            guard synced == 0 else { throw ObjectGraphError.writing("syncing \(temporary.path)", errno: error) }
            guard rename(temporary.path, file.path) == 0 else {
                throw ObjectGraphError.writing("cannot rename \(temporary.path) to \(name)", errno: errno)
            }
            changes.adopted.append((temporary, file))
            do {
                try Self.sync(folder.path)
            } catch {
                throw ObjectGraphError(.io, "\(error)")
            }
        } else if access(file.path, F_OK) == 0 {
            changes.kept.append(file)
        } else {
            throw ObjectGraphError(.io, "the file of a value being saved is gone: \(file.path)")
        }
        var reference = Data([Self.externalMarker])
        reference.append(contentsOf: Array(name.utf8))
        return reference.databaseValue
    }

    /// The file a stored column value refers to, if it is an external reference.
    func file(referencedBy value: DatabaseValue) -> URL? {
        guard case .blob(let data) = value.storage, let name = Self.fileName(inReference: data) else { return nil }
        return folder.appendingPathComponent(name)
    }

    private func write(_ data: Data, to file: URL) throws {
        let fd = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ObjectGraphError.writing("cannot create \(file.path)", errno: errno)
        }
        defer { close(fd) }
        var written = 0
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            while written < buffer.count {
                let n = Glibc.write(fd, base + written, buffer.count - written)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    // A write of 0 bytes sets no errno: the disk is full.
                    throw ObjectGraphError.writing("writing \(file.path)", errno: n == 0 ? ENOSPC : errno)
                }
                written += n
            }
        }
        adoptOwnership(fd: fd, mode: storeMode & 0o666)
        guard fsync(fd) == 0 else {
            throw ObjectGraphError.writing("syncing \(file.path)", errno: errno)
        }
    }

    /// Makes `.X_SUPPORT/_EXTERNAL_DATA` as Core Data would, owned like the store (storefs
    /// often runs as root on another user's store) with the store's mode plus search bits.
    private func makeFolder() throws {
        let support = folder.deletingLastPathComponent()
        for directory in [support, folder] where !FileManager.default.fileExists(atPath: directory.path) {
            let mode = (storeMode & 0o777) | ((storeMode & 0o444) >> 2)
            guard mkdir(directory.path, mode_t(mode)) == 0 || errno == EEXIST else {
                throw ObjectGraphError(.io, "cannot make \(directory.path): \(String(cString: strerror(errno)))")
            }
            let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 {
                adoptOwnership(fd: fd, mode: mode)
                close(fd)
            }
            try Self.sync(directory.deletingLastPathComponent().path)
        }
    }

    private var storeMode: UInt32 {
        var info = stat()
        return stat(store.path, &info) == 0 ? UInt32(info.st_mode) & 0o7777 : 0o644
    }

    private func adoptOwnership(fd: Int32, mode: UInt32) {
        var info = stat()
        guard stat(store.path, &info) == 0 else { return }
        if getuid() == 0 { _ = fchown(fd, info.st_uid, info.st_gid) }
        _ = fchmod(fd, mode_t(mode))
    }

    static func sync(_ directory: String) throws {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ObjectGraphError(.io, "cannot open \(directory): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else {
            throw ObjectGraphError(.io, "syncing \(directory): \(String(cString: strerror(errno)))")
        }
    }
}

/// The files one save adds and makes obsolete: the new ones go if the save does not commit, the
/// replaced and deleted ones once it has.
struct ExternalDataChanges {
    var staged: [URL] = []
    var obsolete: [URL] = []
    /// Files written through a mount and renamed into place by this save (temporary, final).
    var adopted: [(URL, URL)] = []
    /// Files of values saved before that this save refers to again.
    var kept: [URL] = []

    /// After the commit: the files of replaced and deleted values go.
    func committed(logger: Logger) {
        let current = Set(staged + kept + adopted.map(\.1))
        for file in Set(obsolete) where !current.contains(file) {
            if unlink(file.path) != 0 && errno != ENOENT {
                logger.warning("removing \(file.path), no longer referenced: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// After a rollback: the files this save wrote go; the old ones stay referenced.
    func rolledBack() {
        for file in staged { unlink(file.path) }
        // A value written through a mount is still the pending value: its file goes back to its
        // temporary name, for the next save to take.
        for (temporary, file) in adopted { rename(file.path, temporary.path) }
    }
}
