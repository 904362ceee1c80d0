// fuzz-modules: SQLiteRecovery ObjectGraph Locking Digest
// fuzz-max-len: 262144
//
// SQLiteRecovery's page and WAL reader (Sources/SQLiteRecovery): the input is a database file,
// followed, from the first WAL header magic at a 512-byte boundary, by its -wal. Everything the
// recovery of a store reads is run on it: the header, every version's freelist, the schema walk,
// the scan of every page version for the records of a table laid out as Core Data lays one out
// (whole, and partial: their end overwritten), and each version's pages. Whatever the bytes, it
// ends, within the bounds, without a trap.
import Foundation
import SQLiteRecovery

private let table = TableSignature(
    name: "ZNOTE",
    columns: [
        .init(name: "Z_PK", declaredType: "INTEGER"), .init(name: "Z_ENT", declaredType: "INTEGER"),
        .init(name: "Z_OPT", declaredType: "INTEGER"), .init(name: "ZCOUNT", declaredType: "INTEGER"),
        .init(name: "ZDATE", declaredType: "TIMESTAMP"), .init(name: "ZTITLE", declaredType: "VARCHAR"),
        .init(name: "ZDATA", declaredType: "BLOB")
    ],
    rowidColumn: 0, entityColumn: 1, entityCodes: [1, 2, 3], versionColumn: 2, rootPage: 2)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSQLiteRecovery(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var split = bytes.count
    var offset = 512
    while offset + 4 <= bytes.count {
        if bytes[offset] == 0x37, bytes[offset + 1] == 0x7F, bytes[offset + 2] == 0x06,
            bytes[offset + 3] & 0xFE == 0x82
        {
            split = offset
            break
        }
        offset += 512
    }
    let log: (any ByteSource)? = split < bytes.count ? MemoryBytes(Array(bytes[split...])) : nil
    guard let files = DatabaseFiles(database: MemoryBytes(Array(bytes[..<split])), log: log) else { return 0 }
    for version in 0...min(files.lastVersion, 8) {
        let state = files.state(version)
        let (trunks, leaves) = state.freelist()
        precondition(trunks.count + leaves.count <= Int(state.pageCount) + files.usableSize / 4, "a freelist past its pages")
        for (name, root, _) in state.tables() {
            precondition(root >= 1 && !name.isEmpty || root >= 1, "a table without a root")
        }
        var rows = 0
        state.walkTable(root: 2) { _, _ in rows += 1 }
        for number in 1...max(1, min(state.pageCount, 64)) { _ = state.page(number) }
    }
    let result = RecoveryScan.run(files, tables: [table])
    for row in result.rows {
        precondition(!row.sources.isEmpty, "a record found nowhere")
        precondition(row.payload.count <= 256 << 20, "a record past the bound")
        precondition(row.payload.count <= row.wholeLength, "a record longer than it was")
        let record = SurvivingRecord(row.payload)
        precondition(record != nil, "a record whose header does not read")
        if let record {
            precondition(record.isWhole == !row.isPartial, "a partial record read whole or the reverse")
            _ = record.values
            if !row.isPartial {
                precondition(
                    RecordFormat.values(record.types, in: row.payload, at: record.headerLength, limit: row.payload.count)
                        != nil)
            }
        }
    }
    return 0
}
