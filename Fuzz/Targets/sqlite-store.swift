// fuzz-modules: SQLiteStore CoreDataSchema Decoding GRDB ObjectGraph Logging Digest RelationalCore SQLiteRecovery Locking
// fuzz-libraries: sqlite3
// fuzz-max-len: 262144
//
// The SQLite store opener: the input is a whole .sqlite file (schema, Z_PRIMARYKEY, Z_METADATA and
// its plist, rows of any type), opened read-only with no model as `storefs info` and a read-only
// mount open it, then walked.
import Foundation
import ObjectGraph
import SQLiteStore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSQLiteStore(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let url = FuzzSupport.file(named: "store.sqlite", UnsafeRawBufferPointer(start: data, count: size))
    FuzzSupport.openAndWalk(url, types: [SQLiteStoreType()])
    return 0
}
