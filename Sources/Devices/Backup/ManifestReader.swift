import Foundation
import SQLiteRecovery

/// The manifest readers as bytes in, records out, for callers that hold a manifest in memory
/// rather than a backup folder (the fuzz target Fuzz/Targets/backup-manifest.swift):
/// ``BackupTree/open(_:)`` reads the files of a backup's folder through the same code.
public enum ManifestReader {
    /// The rows of a `Manifest.db` (and its `-wal`), and how many rows did not read.
    public static func databaseRecords(_ database: [UInt8], log: [UInt8]?) throws(DeviceError) -> (
        records: [BackupRecord], unreadable: Int
    ) {
        let (records, unreadable) = try ManifestDatabase.records(
            database: MemoryBytes(database), log: log.map { MemoryBytes($0) }, path: "Manifest.db")
        return (records, unreadable)
    }

    /// The records of a `Manifest.mbdb`, and whether it ended inside a record.
    public static func mbdbRecords(_ bytes: [UInt8]) throws(DeviceError) -> (records: [BackupRecord], truncated: Bool) {
        try ManifestMBDB.records(bytes)
    }

    /// The tree `records` make, with the files whose ID `present` accepts taken as in the
    /// backup (one byte each) and every other one as missing.
    public static func index(_ records: [BackupRecord], unreadable: Int, present: (String) -> Bool) -> BackupIndex {
        BackupIndex(records: records, unreadableRows: unreadable) { fileID in
            guard present(fileID) else { return nil }
            var info = stat()
            info.st_size = 1
            return info
        }
    }
}
