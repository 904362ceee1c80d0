import Foundation
import ObjectGraph
import TestSupport

/// Device trees made from the corpus's real stores for the folder-mount and backup tests: an app
/// container of nested folders whose stores have no telling names, and an iOS backup (Manifest.db,
/// files under the SHA-1 of `DOMAIN-relativePath` in two-letter folders, as iTunes and Finder
/// write them), with hostile rows.
enum DeviceFixtures {
    static func corpus(_ name: String) -> URL { Corpus.url("sqlite/\(name)") }

    static let notes = "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    static let photos = "RhetTbull_merge_photos_libraries_Photos.sqlite"
    static let swiftData = "sergd2005_ResourcesManager_default.store"

    /// Copies corpus store `name` (with its -wal) to `destination` (its -wal beside it).
    static func copyStore(_ name: String, to destination: URL) throws {
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: corpus(name).path + suffix) {
            try FileManager.default.copyItem(atPath: corpus(name).path + suffix, toPath: destination.path + suffix)
        }
    }

    /// What sqlite3 answers to `sql` on a private copy of `store` and its -wal (opening the
    /// original, even read-only, would leave a -shm beside it).
    static func query(_ store: URL, _ sql: String) throws -> String {
        let scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "storefs-count-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let copy = scratch.appendingPathComponent("store")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: store.path + suffix) {
            try FileManager.default.copyItem(atPath: store.path + suffix, toPath: copy.path + suffix)
        }
        let result = try run("sqlite3", ["-batch", copy.path, sql])
        guard result.status == 0 else { throw HarnessError("sqlite3 \(store.path): \(result.error)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Objects in an SQLite store as sqlite3 counts them: each root entity's table.
    static func objectCount(_ store: URL) throws -> Int {
        let tables = try query(
            store,
            "select group_concat('(select count(*) from Z'||upper(Z_NAME)||')','+') from Z_PRIMARYKEY where Z_SUPER=0 and Z_ENT<16000"
        )
        guard let count = Int(try query(store, "select \(tables)")) else {
            throw HarnessError("sqlite3 could not count the objects of \(store.path)")
        }
        return count
    }

    /// The note whose title ``notesWithWAL(in:)`` changes, the title it gives, and the object
    /// it adds (a server change token, entity ICServerChangeToken).
    static let walNote = (object: "p13", title: "Changed only in the WAL")

    /// The corpus's Notes store (macOS 14) with a `-wal` that holds the last commit, as Notes
    /// leaves a store it has open: sqlite3 renames note 13 and adds a server change token with
    /// checkpoints off, and copies the database and its -wal before it closes (closing would
    /// move the frames into the database). The database file stays byte-identical to the
    /// corpus's; both changes live only in the -wal. Returns the store (`-wal` beside it).
    static func notesWithWAL(in folder: URL) throws -> URL {
        let work = folder.appendingPathComponent("notes-work")
        let kept = folder.appendingPathComponent("notes-wal")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: kept, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let store = work.appendingPathComponent("NoteStore.sqlite")
        try FileManager.default.copyItem(at: corpus(notes), to: store)
        let result = try run(
            "sqlite3", ["-batch", "-bail", store.path],
            input: Data(
                """
                PRAGMA journal_mode=WAL;
                PRAGMA wal_autocheckpoint=0;
                UPDATE ZICCLOUDSYNCINGOBJECT SET ZTITLE1='\(walNote.title)' WHERE Z_PK=13 AND Z_ENT=11;
                INSERT INTO ZICSERVERCHANGETOKEN (Z_PK, Z_ENT, Z_OPT) VALUES (1, 20, 1);
                UPDATE Z_PRIMARYKEY SET Z_MAX=1 WHERE Z_ENT=20;
                .shell cp '\(store.path)' '\(store.path)-wal' '\(kept.path)/'

                """.utf8))
        let copy = kept.appendingPathComponent("NoteStore.sqlite")
        guard result.status == 0, FileManager.default.fileExists(atPath: copy.path + "-wal") else {
            throw HarnessError("sqlite3 could not make the Notes store with a -wal: \(result.error)")
        }
        return copy
    }

    /// An app container as a simulator keeps one: stores at several depths, none named `.sqlite`
    /// but one, companions beside them, other files, a non-Core-Data database, link cycles.
    static func container(in folder: URL) throws {
        let fm = FileManager.default
        try copyStore(swiftData, to: folder.appendingPathComponent("Library/Application Support/default.store"))
        try copyStore(notes, to: folder.appendingPathComponent("Documents/Notes/NoteStore"))
        try copyStore(photos, to: folder.appendingPathComponent("Media/PhotoData/Photos.sqlite"))
        try fm.createDirectory(
            at: folder.appendingPathComponent("Library/Preferences"), withIntermediateDirectories: true)
        try Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict/></plist>\n".utf8).write(
            to: folder.appendingPathComponent("Library/Preferences/com.example.plist"))
        try fm.createDirectory(at: folder.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        try fm.copyItem(
            at: Corpus.url("xml/haraldmartin_things-rb_Database.xml"), to: folder.appendingPathComponent("tmp/Database")
        )
        let plain = try run(
            "sqlite3",
            [
                "-batch", folder.appendingPathComponent("Library/cache.db").path,
                "create table t(a); insert into t values (1);"
            ])
        guard plain.status == 0 else { throw HarnessError("sqlite3: \(plain.error)") }
        // Links: a cycle of two, a link to the folder above, one out of the container.
        try fm.createSymbolicLink(atPath: folder.appendingPathComponent("tmp/a").path, withDestinationPath: "b")
        try fm.createSymbolicLink(atPath: folder.appendingPathComponent("tmp/b").path, withDestinationPath: "a")
        try fm.createSymbolicLink(atPath: folder.appendingPathComponent("Documents/up").path, withDestinationPath: "..")
        try fm.createSymbolicLink(
            atPath: folder.appendingPathComponent("Documents/etc").path, withDestinationPath: "/etc")
        // A folder past NAME_MAX cannot be made on Linux; a deep chain of folders can.
        var deep = folder.appendingPathComponent("deep")
        for level in 0..<40 { deep = deep.appendingPathComponent("d\(level)") }
        try fm.createDirectory(at: deep, withIntermediateDirectories: true)
        try copyStore(swiftData, to: deep.appendingPathComponent("deep.store"))
    }

    // MARK: - Backups

    struct Row {
        var domain: String
        var relativePath: String
        /// 1 file, 2 folder, 4 link.
        var flags: Int
        /// A file's bytes in the backup; nil for a file the backup lacks.
        var content: URL?
        var size: Int64? = nil
        var mode: Int64 = 0o100644
        var fileID: String? = nil
        var target: String? = nil
    }

    /// The SHA-1 of `text` in hex, as sha1sum gives it.
    static func sha1(_ text: String) throws -> String {
        let result = try run("sha1sum", [], input: Data(text.utf8))
        guard result.status == 0 else { throw HarnessError("sha1sum: \(result.error)") }
        return String(result.output.prefix(40))
    }

    /// An `MBFile` archive as Manifest.db's `file` column holds one.
    static func archive(_ row: Row) -> Data {
        var writer = KeyedArchiveWriter()
        var fields: [(String, PropertyListValue)] = [
            ("Size", .integer(row.size ?? 0)), ("Mode", .integer(row.mode)),
            ("LastModified", .integer(1_638_559_935)), ("LastStatusChange", .integer(1_638_559_935)),
            ("Birth", .integer(1_638_559_935)), ("UserID", .integer(501)), ("GroupID", .integer(501)),
            ("InodeNumber", .integer(123_456)), ("ProtectionClass", .integer(3)), ("Flags", .integer(0))
        ]
        if let target = row.target { fields.append(("Target", writer.string(target))) }
        fields.append(("RelativePath", writer.string(row.relativePath)))
        let root = writer.add(className: "MBFile", classes: ["MBFile", "NSObject"], fields: fields)
        guard case .uid(let uid) = root else { return Data() }
        return writer.finish(root: uid)
    }

    /// Writes a backup of `rows` into `folder`: each present file copied under its file ID,
    /// Manifest.db written by sqlite3, Manifest.plist and Info.plist.
    static func backup(_ rows: [Row], in folder: URL, encrypted: Bool = false) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var sql =
            "CREATE TABLE Files (fileID TEXT PRIMARY KEY, domain TEXT, relativePath TEXT, flags INTEGER, file BLOB);\n"
        sql += "CREATE INDEX FilesDomainIdx ON Files(domain);\nBEGIN;\n"
        for row in rows {
            let fileID = try row.fileID ?? sha1("\(row.domain)-\(row.relativePath)")
            if row.flags == 1, let content = row.content, BackupTreeFileID.isPlain(fileID) {
                let at = folder.appendingPathComponent(String(fileID.prefix(2)))
                try FileManager.default.createDirectory(at: at, withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: content, to: at.appendingPathComponent(fileID))
            }
            var withSize = row
            if withSize.size == nil, let content = row.content {
                withSize.size = Int64(
                    (try? FileManager.default.attributesOfItem(atPath: content.path)[.size] as? Int) ?? 0)
            }
            let blob = archive(withSize).map { String(format: "%02X", $0) }.joined()
            func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
            sql +=
                "INSERT INTO Files VALUES (\(quoted(fileID)), \(quoted(row.domain)), \(quoted(row.relativePath)), \(row.flags), X'\(blob)');\n"
        }
        sql += "COMMIT;\n"
        let result = try run(
            "sqlite3", ["-batch", folder.appendingPathComponent("Manifest.db").path], input: Data(sql.utf8))
        guard result.status == 0 else { throw HarnessError("sqlite3 Manifest.db: \(result.error)") }
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>IsEncrypted</key><\(encrypted ? "true" : "false")/>
            <key>Version</key><string>10.0</string>
            <key>Lockdown</key><dict><key>ProductVersion</key><string>17.1</string><key>DeviceName</key><string>Test iPhone</string></dict>
            </dict></plist>

            """.utf8
        ).write(to: folder.appendingPathComponent("Manifest.plist"))
        try Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>Device Name</key><string>Test iPhone</string>
            <key>Product Type</key><string>iPhone14,2</string>
            </dict></plist>

            """.utf8
        ).write(to: folder.appendingPathComponent("Info.plist"))
    }
}

extension DeviceFixtures {
    /// A backup of iOS 5–9: `Manifest.mbdb` (big-endian records) and each file in the top folder
    /// under the SHA-1 of `DOMAIN-path`, as sha1sum computes it.
    static func mbdbBackup(_ rows: [Row], in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var bytes: [UInt8] = Array("mbdb".utf8) + [5, 0]
        func integer(_ value: UInt64, _ size: Int) {
            for shift in stride(from: (size - 1) * 8, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
        }
        func string(_ text: String?) {
            guard let text else { return integer(0xFFFF, 2) }
            integer(UInt64(text.utf8.count), 2)
            bytes += Array(text.utf8)
        }
        for row in rows {
            let mode: UInt64 = row.flags == 2 ? 0o40755 : row.flags == 4 ? 0o120777 : 0o100644
            var size: UInt64 = 0
            if row.flags == 1, let content = row.content {
                let fileID = try sha1("\(row.domain)-\(row.relativePath)")
                try FileManager.default.copyItem(at: content, to: folder.appendingPathComponent(fileID))
                size = UInt64((try FileManager.default.attributesOfItem(atPath: content.path)[.size] as? Int) ?? 0)
            }
            string(row.domain)
            string(row.relativePath)
            string(row.target)
            string(nil)
            string(nil)
            integer(mode, 2)
            integer(7, 8)
            integer(501, 4)
            integer(501, 4)
            for _ in 0..<3 { integer(1_400_000_000, 4) }
            integer(size, 8)
            integer(4, 1)
            integer(0, 1)
        }
        try Data(bytes).write(to: folder.appendingPathComponent("Manifest.mbdb"))
    }
}

/// Whether a file ID is one a test may copy a file under (40 hexadecimal digits).
enum BackupTreeFileID {
    static func isPlain(_ fileID: String) -> Bool {
        fileID.utf8.count == 40 && fileID.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
