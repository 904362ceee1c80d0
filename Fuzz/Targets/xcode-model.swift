// fuzz-modules: SQLiteStore CoreDataSchema Decoding XMLStore BinaryStore AtomicStore GRDB ObjectGraph Logging Digest RelationalCore SQLiteRecovery Locking
// fuzz-libraries: sqlite3
// fuzz-max-len: 131072
//
// The Xcode model reader: the input is a `contents` file. A model that loads is then used as
// `storefs create --model` uses one: written back as contents and read again, its predicates
// parsed, and an empty store of each type created for it, reopened and walked (table, column and
// element names come from the model).
import Foundation
import ObjectGraph
import SQLiteStore
import XMLStore
import BinaryStore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzXcodeModel(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let model = try? XcodeModelLoader.load(contents: Data(bytes: data, count: size), source: "fuzz input") else {
        return 0
    }
    _ = try? XcodeModelLoader.load(contents: Data(XcodeModelWriter.contents(of: model).utf8), source: "written back")
    let types: [(String, any PersistentStoreType)] = [
        ("new.sqlite", SQLiteStoreType()), ("new.xml", XMLStoreType()), ("new.binary", BinaryStoreType()),
    ]
    for (name, type) in types {
        let url = FuzzSupport.remove(named: name)
        guard
            let created = try? PersistentStoreCoordinator.open(
                at: url, types: [type], model: model, options: StoreOptions(createIfMissing: true))
        else { continue }
        created.store.close()
        FuzzSupport.openAndWalk(url, types: [type])
    }
    return 0
}
