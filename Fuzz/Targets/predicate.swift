// fuzz-modules: SQLiteStore CoreDataSchema Decoding GRDB ObjectGraph Logging Digest RelationalCore SQLiteRecovery Locking
// fuzz-libraries: sqlite3
// fuzz-max-len: 4096
//
// The predicate parser: the input is predicate format text, as in a model's fetched property or
// fetch request. One that parses is printed and parsed again, then evaluated on the sample
// company store both ways a mount evaluates predicates: in memory, and translated to SQL on an
// SQLite store (the two must agree; a difference is reported as a crash). Both run under a query
// budget (issue 34: a key path over to-many chains grew a mount past 1.7 GB): an input that stops
// at a limit is answered with an error, as a mount answers it, and is not compared.
import Foundation
import ObjectGraph
import SQLiteStore

/// The sample store, made once per process: 200 objects of the company model in SQLite.
private let sample: PersistentStoreCoordinator? = {
    let url = FuzzSupport.remove(named: "sample.sqlite")
    guard
        let coordinator = try? PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true),
            configuration: FuzzSupport.configuration)
    else { return nil }
    try? SampleGenerator(objectCount: 200).populate(coordinator.newContext())
    return coordinator
}()

/// One budget for all the evaluations of an input, well inside libFuzzer's timeout (10 s) and
/// memory limit: an input that needs more stops, and the evaluations after it stop at once.
private let limits = QueryLimits(time: 3, rowsVisited: 2_000_000, memory: 128 << 20)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPredicate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let predicate = try? PredicateParser.parse(text) else { return 0 }
    _ = try? PredicateParser.parse(predicate.description)
    guard let sample else { return 0 }
    let model = sample.model
    let context = sample.newContext()
    let budget = QueryBudget(limits: limits, subject: "the input")
    for entity in model.entities {
        let source = (try? sample.store.objectIDs(of: entity.id))?.first
        let fetched = entity.allFetchedProperties.first
        let inMemory = try? budget.run { () throws(ObjectGraphError) in
            try context.objects(
                matching: predicate, of: entity.id, source: source, fetchedProperty: fetched, strategy: .inMemory)
        }
        let inSQL = try? budget.run { () throws(ObjectGraphError) in
            try context.objects(
                matching: predicate, of: entity.id, source: source, fetchedProperty: fetched, strategy: .store)
        }
        if let inMemory, let inSQL, Set(inMemory) != Set(inSQL) {
            fatalError("\(predicate) on \(entity.name): SQL selects \(inSQL.count) objects, the evaluator \(inMemory.count)")
        }
    }
    return 0
}
