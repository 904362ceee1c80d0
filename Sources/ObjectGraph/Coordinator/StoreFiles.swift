import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The file moves a migration makes around a store: a new store written under a temporary name
/// beside its destination and renamed into place, its companion folders (SQLite's external data)
/// moved with it, the backup an in-place migration keeps, and the syncs that make each move stick.
///
/// Stateless; safe from any thread.
enum StoreFiles {
    /// `.NAME.migrating-PID-XXXXXXXX.EXT` beside `url`: hidden, and of the same suffix, so the
    /// store type that writes it recognizes it; the process ID says whose it is, so that what a
    /// killed migration left can be told from a running one's (``removeStaleTemporaries(of:type:holdingLock:)``).
    static func temporaryName(for url: URL) -> URL {
        let name = temporaryPrefix(for: url) + "\(getpid())-\(UUID().uuidString.prefix(8))"
        let temporary = url.deletingLastPathComponent().appendingPathComponent(name)
        return url.pathExtension.isEmpty ? temporary : temporary.appendingPathExtension(url.pathExtension)
    }

    private static func temporaryPrefix(for url: URL) -> String { ".\(url.lastPathComponent).migrating-" }

    /// Removes what migrations into `url` left when their process died (kill -9, a power cut):
    /// each temporary store `.NAME.migrating-PID-XXXXXXXX.EXT` whose process no longer runs, with
    /// its -wal, -shm, -journal and companion folders. A running migration's files are left
    /// alone; so are those of storefs versions that wrote no PID, unless `holdingLock` (an
    /// in-place migration holds the store's lock, so no other migration of it can be running).
    /// Only names of exactly that form are touched. Returns the temporary stores removed.
    @discardableResult
    static func removeStaleTemporaries(of url: URL, type: any PersistentStoreType, holdingLock: Bool) -> [String] {
        let folder = url.deletingLastPathComponent()
        let prefix = temporaryPrefix(for: url)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var stale = Set<String>()
        for name in names where name.hasPrefix(prefix) {
            let rest = Array(name.utf8.dropFirst(prefix.utf8.count))
            func isHex(_ byte: UInt8) -> Bool {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
            }
            let digits = rest.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            var id: String
            if !digits.isEmpty, digits.count <= 10, rest.count >= digits.count + 9,
                rest[digits.count] == UInt8(ascii: "-"),
                rest[(digits.count + 1)..<(digits.count + 9)].allSatisfy(isHex),
                let pid = pid_t(String(decoding: digits, as: UTF8.self)), pid > 0
            {
                guard kill(pid, 0) != 0, errno == ESRCH else { continue }
                id = String(decoding: rest[..<(digits.count + 9)], as: UTF8.self)
            } else if holdingLock, rest.count >= 8, rest[..<8].allSatisfy(isHex),
                rest.count == 8 || [UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_")].contains(rest[8])
            {
                id = String(decoding: rest[..<8], as: UTF8.self)
            } else {
                continue
            }
            if !url.pathExtension.isEmpty { id += "." + url.pathExtension }
            stale.insert(prefix + id)
        }
        for name in stale { removeStore(folder.appendingPathComponent(name), type: type) }
        return stale.sorted()
    }

    /// `NAME.pre-migration.EXT` beside `url`, or `NAME.pre-migration-2.EXT`, ... : the first that
    /// does not exist (a backup is never overwritten). `label` names what it comes before
    /// (`pre-doctor` for `storefs doctor --fix`).
    static func backupName(for url: URL, label: String = "pre-migration") throws(ObjectGraphError) -> URL {
        let folder = url.deletingLastPathComponent()
        let base = url.deletingPathExtension().lastPathComponent
        for number in 1...1000 {
            var name = base + (number == 1 ? ".\(label)" : ".\(label)-\(number)")
            if !url.pathExtension.isEmpty { name += "." + url.pathExtension }
            let candidate = folder.appendingPathComponent(name)
            var info = stat()
            if lstat(candidate.path, &info) != 0 && errno == ENOENT { return candidate }
        }
        throw ObjectGraphError(
            .exists, "\(folder.path) holds 1000 backups of \(url.lastPathComponent) already; remove old ones")
    }

    /// Removes a store file that was being written and whatever SQLite left beside it.
    static func removeStore(_ url: URL, type: any PersistentStoreType) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
        for folder in type.companionFolders(of: url) { try? FileManager.default.removeItem(at: folder) }
    }

    /// A closed store must be one file: a -wal that still holds data would stay behind a rename.
    static func checkClosed(_ url: URL) throws(ObjectGraphError) {
        let fileManager = FileManager.default
        for suffix in ["-wal", "-shm"] where fileManager.fileExists(atPath: url.path + suffix) {
            let size = (try? fileManager.attributesOfItem(atPath: url.path + suffix)[.size] as? Int) ?? 0
            if size > 0 && suffix == "-wal" {
                throw ObjectGraphError(.io, "the new store was not checkpointed; its -wal file still holds data")
            }
            try? fileManager.removeItem(atPath: url.path + suffix)
        }
    }

    /// Removes a store's -shm and an empty -wal: nothing in them belongs to the file once it is
    /// replaced. A -wal that holds data (a write another program made meanwhile) stops the
    /// replacement.
    static func removeEmptySidecars(of url: URL) throws(ObjectGraphError) {
        let wal = url.path + "-wal"
        if FileManager.default.fileExists(atPath: wal) {
            let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
            guard size == 0 else {
                throw ObjectGraphError(
                    .busy,
                    "\(url.path) was written by another program during the migration (its -wal holds data); nothing was replaced"
                )
            }
            try? FileManager.default.removeItem(atPath: wal)
        }
        try? FileManager.default.removeItem(atPath: url.path + "-shm")
    }

    /// Every file under `folder`, as paths relative to it.
    static func files(under folder: URL) -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        var result: [String] = []
        while let next = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(
                atPath: folder.appendingPathComponent(next).path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                result.append(next)
            }
        }
        return result.sorted()
    }

    /// Moves every file of `source` into `destination` (made as needed), refusing to replace one;
    /// returns where they went.
    @discardableResult
    static func moveFiles(from source: URL, into destination: URL) throws(ObjectGraphError) -> [URL] {
        var moved: [URL] = []
        for relative in files(under: source) {
            let from = source.appendingPathComponent(relative)
            let to = destination.appendingPathComponent(relative)
            try makeFolder(of: to)
            guard !FileManager.default.fileExists(atPath: to.path) else {
                throw ObjectGraphError(
                    .exists, "\(to.path) exists; the new store's file of that name was not moved over it")
            }
            guard rename(from.path, to.path) == 0 else {
                throw ObjectGraphError(
                    .io, "cannot move \(from.path) to \(to.path): \(String(cString: strerror(errno)))")
            }
            moved.append(to)
        }
        return moved
    }

    /// Makes the folder `file` goes into, and the folders above it, as needed.
    private static func makeFolder(of file: URL) throws(ObjectGraphError) {
        do {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw ObjectGraphError(
                .io, "cannot make \(file.deletingLastPathComponent().path): \(error.localizedDescription)")
        }
    }

    /// A copy of `source` at `destination` sharing the files' data (hard links), or copied where
    /// links cannot be made (another filesystem).
    static func linkOrCopy(_ source: URL, to destination: URL) throws(ObjectGraphError) {
        if link(source.path, destination.path) == 0 { return }
        do {
            try FileManager.default.copyItem(at: source, to: destination)
        } catch {
            throw ObjectGraphError(
                .io, "cannot keep a backup of \(source.path) at \(destination.path): \(error.localizedDescription)")
        }
    }

    /// ``linkOrCopy(_:to:)`` for every file under `folder`.
    static func linkOrCopyFiles(from folder: URL, into destination: URL) throws(ObjectGraphError) {
        for relative in files(under: folder) {
            let to = destination.appendingPathComponent(relative)
            try makeFolder(of: to)
            try linkOrCopy(folder.appendingPathComponent(relative), to: to)
        }
    }

    /// Makes the entries of `folder` (renames, links) durable.
    static func syncFolder(_ folder: URL) {
        DurableFile.syncFolder(folder)
    }

    /// Makes a file's data durable.
    static func syncFile(_ url: URL) {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
