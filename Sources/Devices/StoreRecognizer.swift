import Foundation
import ObjectGraph
import SQLiteRecovery
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Tells which files of a device tree are Core Data stores, by their content alone, whatever
/// their names: an SQLite file with Core Data's tables (`Z_PRIMARYKEY` and `Z_METADATA`, as every
/// Core Data and SwiftData store has from its first transaction), an XML store by its
/// `<database>` document, a binary store by its magic (each type's
/// ``PersistentStoreType/recognizes(fileStart:)``).
///
/// An SQLite file's schema is read from its pages (SQLiteRecovery), never through SQLite: nothing
/// is opened for writing, locked or made beside the file, and a damaged or hostile file costs at
/// most a walk of its schema's pages. The `-wal` beside it is read only when the database file's
/// schema is empty (a store whose tables are all still in its log); a file whose schema has
/// tables but not Core Data's is not a store.
///
/// Answers are kept by the file's identity (device, inode, size, times; the -wal's too), so a
/// folder listed again reads nothing, and a file that changed is looked at again.
///
/// Threading: safe from any thread; the kept answers have their own lock.
public final class StoreRecognizer: Sendable {
    public let types: [any PersistentStoreType]
    private let answers = Mutex<[String: String]>([:])
    /// Kept answers at most (the table is emptied when full): one per file of a large tree.
    static let maximumAnswers = 500_000
    /// Type names of the recognized, and the empty string for "not a store".
    private static let notAStore = ""

    public init(types: [any PersistentStoreType]) { self.types = types }

    /// The type of the store at `path` in `tree`, or nil when it is no Core Data store (or not a
    /// regular file, or unreadable).
    public func storeType(at path: String, in tree: any DeviceTree) -> (any PersistentStoreType)? {
        let name = DevicePath.name(of: path)
        guard let found = try? tree.items(named: [name, name + "-wal"], in: DevicePath.parent(of: path)),
            let item = found[0], item.kind == .file
        else { return nil }
        let log = found[1].flatMap { $0.kind == .file ? $0 : nil }
        return storeType(of: item, log: log, in: tree)
    }

    /// The type of file `item` (with its `-wal` `log`, when there is one) in `tree`.
    public func storeType(of item: DeviceItem, log: DeviceItem?, in tree: any DeviceTree) -> (any PersistentStoreType)?
    {
        guard item.kind == .file, item.size >= 16 else { return nil }
        let key = item.identity + "|" + (log?.identity ?? "")
        if let known = answers.withLock({ $0[key] }) { return type(named: known) }
        let answer = recognize(item, log: log, in: tree)
        answers.withLock { answers in
            if answers.count >= Self.maximumAnswers { answers.removeAll(keepingCapacity: true) }
            answers[key] = answer?.name ?? Self.notAStore
        }
        return answer
    }

    private func type(named name: String) -> (any PersistentStoreType)? {
        name == Self.notAStore ? nil : types.first { $0.name == name }
    }

    private func recognize(_ item: DeviceItem, log: DeviceItem?, in tree: any DeviceTree) -> (any PersistentStoreType)?
    {
        guard let fd = try? tree.openFile(at: item.path) else { return nil }
        let bytes = FileBytes(descriptor: fd)
        let start = bytes.bytes(at: 0, count: Int(min(bytes.size, Int64(PersistentStoreCoordinator.recognitionLength))))
        guard let start else { return nil }
        if start.count >= 16, start.prefix(16).elementsEqual(DatabaseHeader.magic) {
            guard Self.isCoreDataSQLite(database: bytes, log: { log.flatMap { try? tree.openFile(at: $0.path) } })
            else { return nil }
            return types.first { $0.recognizes(fileStart: Data(start)) }
        }
        return types.first { $0.recognizes(fileStart: Data(start)) }
    }

    /// Whether the SQLite database in `database` has Core Data's tables (in its own pages, or,
    /// when its schema is empty, in the log `log` opens).
    static func isCoreDataSQLite(database: any ByteSource, log: () -> Int32?) -> Bool {
        guard let files = DatabaseFiles(database: database, log: nil) else { return false }
        let tables = files.state(0).tables().map { $0.name.uppercased() }
        if !tables.isEmpty { return hasCoreDataTables(tables) }
        guard let fd = log() else { return false }
        guard let logged = DatabaseFiles(database: database, log: FileBytes(descriptor: fd)) else { return false }
        return hasCoreDataTables(logged.state(logged.lastVersion).tables().map { $0.name.uppercased() })
    }

    static func hasCoreDataTables(_ tables: [String]) -> Bool {
        tables.contains("Z_PRIMARYKEY") && tables.contains("Z_METADATA")
    }
}
