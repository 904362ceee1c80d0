import Foundation

/// The copy `storefs doctor --fix` keeps beside a store file before it changes anything:
/// `NAME.pre-doctor.EXT` (then `-2`, `-3`, ...: never one over another), a store of the same type
/// that opens and mounts as it is, with its companion files (SQLite's external data).
///
/// Stateless; called with the store's ``StoreLock`` held, so no storefs writer changes it while
/// it is copied.
public enum StoreBackup {
    /// Makes the store at `url` one file (``PersistentStoreType/consolidate(at:)``: an SQLite
    /// store's -wal folded in), copies it, links its companion folders' files (external data
    /// files never change once written, so a link keeps them whatever the store does to its own
    /// name for them) and syncs; returns the copy's URL. Nothing is left behind on failure.
    public static func make(of url: URL, type: any PersistentStoreType) throws(ObjectGraphError) -> URL {
        try type.consolidate(at: url)
        let backup = try StoreFiles.backupName(for: url, label: "pre-doctor")
        var made: [URL] = []
        do throws(ObjectGraphError) {
            do {
                try FileManager.default.copyItem(at: url, to: backup)
            } catch {
                throw ObjectGraphError(
                    .io, "cannot keep a backup of \(url.path) at \(backup.path): \(error.localizedDescription)")
            }
            made.append(backup)
            StoreFiles.syncFile(backup)
            for (folder, copy) in zip(type.companionFolders(of: url), type.companionFolders(of: backup))
            where !StoreFiles.files(under: folder).isEmpty {
                made.append(copy)
                try StoreFiles.linkOrCopyFiles(from: folder, into: copy)
            }
            StoreFiles.syncFolder(url.deletingLastPathComponent())
            return backup
        } catch {
            for item in made.reversed() { try? FileManager.default.removeItem(at: item) }
            throw error
        }
    }

    /// `NAME.quarantine/STAMP` beside the store at `url`: where `--fix` moves external data
    /// files no row names (moving them back undoes it).
    public static func quarantineFolder(for url: URL, stamp: String) -> URL {
        url.deletingLastPathComponent().appendingPathComponent(
            url.deletingPathExtension().lastPathComponent + ".quarantine"
        )
        .appendingPathComponent(stamp)
    }

    /// A timestamp for names: `20261128T101500Z`.
    public static func stamp(_ date: Date = Date()) -> String {
        let text = ISO8601DateText.text(
            of: Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.rounded(.down)))
        return text.filter { $0 != "-" && $0 != ":" }
    }
}
