import Foundation
import ObjectGraph
import SQLiteStore

// Benchmark (issue 7): the time to evaluate predicates and a fetched property over a 100,000-object
// sample store, through SQL (the SQLite store's translation) and in memory (the evaluator), cold
// (fresh caches) and warm, with the store requests each makes. Prints figures; asserts nothing.
//
//   swift build -c release --product fetch-benchmark
//   .build/release/fetch-benchmark /tmp/fetch-100k.sqlite    # writes the store first if missing
let path = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "/tmp/fetch-100k.sqlite"
let url = URL(fileURLWithPath: path)
func open() throws -> PersistentStoreCoordinator {
    try PersistentStoreCoordinator.open(
        at: url, types: [SQLiteStoreType()], model: SampleModel.make(), options: StoreOptions(createIfMissing: true))
}
if !FileManager.default.fileExists(atPath: path) {
    let c = try open()
    let t = Date()
    try SampleGenerator(objectCount: 100_000).populate(c.newContext())
    c.close()
    print("generated in \(Date().timeIntervalSince(t)) s")
}
func ms(_ body: () throws -> Int) rethrows -> (Double, Int) {
    let t = DispatchTime.now().uptimeNanoseconds
    let n = try body()
    return (Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6, n)
}
let cases: [(String, String)] = [
    ("Employee", "isRemote == YES AND level <= 5"),
    ("Employee", "isRemote == YES"),
    ("Employee", "department.name BEGINSWITH[c] 'sales'"),
    // Issue 26: an ISO date, and forms SQL answers through the evaluator's own functions (key
    // path against key path, @avg, a collection through a to-one).
    ("Employee", #"birthDate > CAST("1980-01-01", "NSDate")"#),
    ("Employee", "lastName == firstName OR salary < 60000.5"),
    ("Department", "employees.@avg.salary > 110000"),
    ("Milestone", "project.department.employees.salary > 199000")
]
for (entityName, text) in cases {
    let predicate = try PredicateParser.parse(text)
    for strategy in [FetchStrategy.store, .inMemory] {
        let c = try open()
        let context = c.newContext()
        let entity = c.model.entityID(named: entityName)!
        let total = try context.objectIDs(of: entity, includingSubentities: true).count
        c.dropCaches()
        let r0 = c.store.requestCount
        let (cold, n) = try ms { try context.objects(matching: predicate, of: entity, strategy: strategy).count }
        let r1 = c.store.requestCount
        let (warm, _) = try ms { try c.newContext().objects(matching: predicate, of: entity, strategy: strategy).count }
        let r2 = c.store.requestCount
        c.dropCaches()
        let (counting, counted) = try ms {
            try c.newContext().count(matching: predicate, of: entity, strategy: strategy)
        }
        let r3 = c.store.requestCount
        print(
            "\(text) [\(strategy)]: \(n) of \(total) matched; cold \(String(format: "%.1f", cold)) ms (\(r1 - r0) requests), warm \(String(format: "%.1f", warm)) ms (\(r2 - r1) requests); count \(counted) in \(String(format: "%.1f", counting)) ms (\(r3 - r2) requests)"
        )
        c.close()
    }
}
// Fetched property: colleagues of one employee (85 of 100,000 employees+managers).
do {
    let c = try open()
    let context = c.newContext()
    let employee = c.model.entity(named: "Employee")!
    let colleagues = employee.fetchedProperty(named: "colleagues")!
    let predicate = try PredicateParser.parse(colleagues.predicateString)
    let source = try context.objectIDs(of: employee.id)[500]
    for strategy in [FetchStrategy.store, .inMemory] {
        c.dropCaches()
        let (cold, n) = try ms {
            try c.newContext().objects(
                matching: predicate, of: employee.id, source: source, fetchedProperty: colleagues, strategy: strategy
            ).count
        }
        let (warm, _) = try ms {
            try c.newContext().objects(
                matching: predicate, of: employee.id, source: source, fetchedProperty: colleagues, strategy: strategy
            ).count
        }
        print(
            "colleagues [\(strategy)]: \(n); cold \(String(format: "%.1f", cold)) ms, warm \(String(format: "%.1f", warm)) ms"
        )
    }
}
