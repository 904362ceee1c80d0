// fuzz-modules: StoreFS FuseKit SQLiteStore CoreDataSchema Decoding GRDB ObjectGraph Logging Digest Locking RelationalCore SQLiteRecovery CoreMetrics Devices
// fuzz-libraries: sqlite3 uring numa pthread dl rt
// fuzz-max-len: 512
//
// Persistent history read back from damaged rows: the input rewrites values of ATRANSACTION and
// ACHANGE in a copy of the corpus's SwiftData store (which keeps 38 transactions), with values of
// any storage class (integers, doubles such as 1e308 or infinity, text, blobs, NULL), and can first
// rebuild both tables without column types so that keys hold TEXT. The copy is then read as
// `storefs history` and the `.history` folders read it: every page, every transaction by number,
// printed as text and as JSON. Issue 34: a ZTIMESTAMP of 1e20 trapped the mount, a TEXT Z_PK
// made reading endless. A timestamp out of the range a file's time holds is reported as a crash.
//
// Input: byte 0 bit 0 rebuilds the tables untyped; then records of [table][row][column][kind]
// [value...]: table 0 ATRANSACTION, 1 ACHANGE; row picks one of the first 256 by key order; kind
// 0 NULL, 1 an 8-byte integer, 2 an 8-byte double, 3 text and 4 a blob (a length byte, then bytes).
import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
@testable import StoreFS

/// The corpus store, checkpointed into one file once per process (each input starts from it).
private let pristine: URL? = {
    let source = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        .appendingPathComponent("Tests/Fixtures/corpus/sqlite/sergd2005_ResourcesManager_default.store")
    let copy = FuzzSupport.remove(named: "history-pristine.store")
    do {
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: copy.path + suffix)
        }
        let queue = try DatabaseQueue(path: copy.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE")
        }
        try queue.close()
        return copy
    } catch {
        return nil
    }
}()

private let columns: [[String]] = [
    ["Z_PK", "ZTIMESTAMP", "ZAUTHORTS", "ZBUNDLEIDTS", "ZPROCESSIDTS", "ZCONTEXTNAMETS", "ZAUTHOR"],
    ["Z_PK", "ZTRANSACTIONID", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZCOLUMNS"]
]
private let tables = ["ATRANSACTION", "ACHANGE"]

private let untyped = """
    CREATE TABLE T1 AS SELECT * FROM ATRANSACTION; DROP TABLE ATRANSACTION;
    CREATE TABLE ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP,
        ZAUTHOR, ZBUNDLEID, ZCONTEXTNAME, ZPROCESSID, ZQUERYGEN);
    INSERT INTO ATRANSACTION SELECT * FROM T1; DROP TABLE T1;
    CREATE TABLE T2 AS SELECT * FROM ACHANGE; DROP TABLE ACHANGE;
    CREATE TABLE ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS);
    INSERT INTO ACHANGE SELECT * FROM T2; DROP TABLE T2;
    CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID);
    """

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHistory(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let pristine, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let url = FuzzSupport.remove(named: "history.store")
    guard (try? FileManager.default.copyItem(at: pristine, to: url)) != nil else { return 0 }
    do {
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in
            if bytes[0] & 1 != 0 { try db.execute(sql: untyped) }
            var at = 1
            func take(_ count: Int) -> ArraySlice<UInt8>? {
                guard at + count <= bytes.count else { return nil }
                defer { at += count }
                return bytes[at..<at + count]
            }
            while let head = take(4) {
                let table = Int(head[head.startIndex]) % tables.count
                let row = Int(head[head.startIndex + 1])
                let column = columns[table][Int(head[head.startIndex + 2]) % columns[table].count]
                let value: DatabaseValue
                switch head[head.startIndex + 3] % 5 {
                case 0: value = .null
                case 1: value = take(8).map { Int64(bitPattern: $0.reduce(0) { $0 << 8 | UInt64($1) }).databaseValue } ?? .null
                case 2: value = take(8).map { Double(bitPattern: $0.reduce(0) { $0 << 8 | UInt64($1) }).databaseValue } ?? .null
                case 3:
                    let count = Int(take(1)?.first ?? 0)
                    value = String(decoding: take(count) ?? [], as: UTF8.self).databaseValue
                default:
                    let count = Int(take(1)?.first ?? 0)
                    value = Data(take(count) ?? []).databaseValue
                }
                // One row by its place in key order; a value the column refuses is skipped.
                try? db.execute(
                    sql: "UPDATE \(tables[table]) SET \(column) = ? WHERE rowid = (SELECT rowid FROM \(tables[table]) ORDER BY rowid LIMIT 1 OFFSET ?)",
                    arguments: [value, row])
            }
        }
        try queue.close()
    } catch {
        return 0
    }
    FuzzSupport.settle(url)
    guard
        let coordinator = try? PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true),
            configuration: FuzzSupport.configuration),
        let store = coordinator.store as? any PersistentHistoryStore
    else { return 0 }
    defer { coordinator.close() }
    let model = coordinator.model
    func check(_ transaction: HistoryTransaction) {
        let seconds = transaction.timestamp.timeIntervalSinceReferenceDate
        if !HistoryTransaction.timestampRange.contains(seconds) {
            fatalError("transaction \(transaction.number) has timestamp \(seconds), which no file's time holds")
        }
        _ = HistoryText.text(of: transaction, model: model)
        _ = HistoryText.jsonLine(of: transaction, model: model, storeUUID: "UUID")
    }
    // `storefs history` and the `.history` listing page through it; both must end.
    for limit in [1, 7, 500] {
        var after: Int64 = 0
        var pages = 0
        while let page = try? store.historyTransactions(after: after, limit: limit, includingChanges: limit != 7),
            let last = page.last
        {
            pages += 1
            if pages > 1_000 { fatalError("reading the history in pages of \(limit) does not end") }
            page.forEach(check)
            after = last.number
        }
    }
    if let sqlite = coordinator.store as? SQLiteStore, let all = try? sqlite.persistentHistory() {
        all.forEach(check)
        for transaction in all.prefix(8) {
            if let again = try? store.historyTransaction(transaction.number) { check(again) }
            for change in transaction.changes.prefix(4) {
                _ = try? store.historyTransactionNumber(ofChange: change.changeID)
            }
        }
    }
    return 0
}
