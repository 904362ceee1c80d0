import Foundation

/// Fills a store of the ``SampleModel`` with a deterministic company of about `objectCount` objects.
///
/// The same count and seed always give the same objects, keys and values, so tests and benchmarks
/// can compare stores. Objects come in units of 100 (1 department, its head and 4 other managers,
/// 80 employees, 4 projects, 10 milestones), saved every ``unitsPerSave`` units so memory stays flat
/// for a store of millions of objects (an atomic store, which holds them all anyway, gets one save).
///
/// The objects go to the store as save requests built here, both sides of every relationship
/// included, as a context would save them: a context checking and recording every value and link
/// one by one was two thirds of the time of a large sample.
public struct SampleGenerator: Sendable {
    public var objectCount: Int
    public var seed: UInt64
    /// Units per save: 100 units is about 10,000 objects per transaction.
    public var unitsPerSave = 100

    public init(objectCount: Int, seed: UInt64 = 1) {
        self.objectCount = objectCount
        self.seed = seed
    }

    /// Objects one unit holds.
    public static let unitSize = 100

    /// Inserts the sample into the store of `context` and saves; `progress` gets (objects
    /// written, total). The context must have no changes of its own: the sample goes to its store.
    public func populate(_ context: ObjectContext, progress: (Int, Int) -> Void = { _, _ in }) throws(ObjectGraphError)
    {
        try populate(context.coordinator.store, progress: progress)
    }

    /// Inserts the sample into `store` (of the sample model), one save per ``unitsPerSave`` units,
    /// or one save of everything for an atomic store.
    public func populate(_ store: any PersistentStore, progress: (Int, Int) -> Void = { _, _ in })
        throws(ObjectGraphError)
    {
        let model = store.model
        guard let department = model.entityID(named: "Department"), let manager = model.entityID(named: "Manager"),
            let employee = model.entityID(named: "Employee"), let project = model.entityID(named: "Project"),
            let milestone = model.entityID(named: "Milestone")
        else { throw ObjectGraphError(.invalidModel, "the sample needs the built-in sample model") }
        func reserve(_ entity: EntityID, _ count: Int) throws(ObjectGraphError) -> [ObjectID] {
            try store.reserveKeys(in: model[entity].rootID, count: count).map { ObjectID(entity: entity, key: $0) }
        }
        let units = max(1, objectCount / Self.unitSize)
        let total = units * Self.unitSize
        var random = SplitMix64(seed: seed)
        var nextEmployeeID: Int64 = 1
        let perSave = store.isAtomic ? units : max(1, unitsPerSave)
        var unit = 0
        while unit < units {
            let count = min(perSave, units - unit)
            let departments = try reserve(department, count)
            let managers = try reserve(manager, count * 5)
            let employees = try reserve(employee, count * 80)
            let projects = try reserve(project, count * 4)
            let milestones = try reserve(milestone, count * 10)
            var batch = Batch()
            for u in 0..<count {
                let number = unit + u + 1
                let d = departments[u]
                let unitManagers = Array(managers[(u * 5)..<(u * 5 + 5)])
                let unitEmployees = Array(employees[(u * 80)..<(u * 80 + 80)])
                let unitProjects = Array(projects[(u * 4)..<(u * 4 + 4)])
                let unitMilestones = Array(milestones[(u * 10)..<(u * 10 + 10)])
                var departmentObject = Snapshot(objectID: d, version: 0)
                departmentObject.attributes = [
                    "name": .string(Self.departmentNames[number % Self.departmentNames.count] + " \(number)"),
                    "code": .string(Self.code(number)),
                    "budget": .decimal(
                        Self.decimal(units: Int64(100_000 + random.next() % 900_000) * 100 + 25, scale: 2)),
                    "founded": .date(Self.date(random.next(), from: 1980, years: 40))
                ]
                departmentObject.toOne["head"] = unitManagers[0]
                batch.insert(departmentObject)

                for (i, m) in unitManagers.enumerated() {
                    var object = person(m, &random, &nextEmployeeID)
                    object.attributes["title"] = .string(Self.titles[Int(random.next() % UInt64(Self.titles.count))])
                    object.toOne["department"] = d
                    batch.append(m, to: "employees", of: d)
                    if i == 0 {
                        object.toOne["headOf"] = d
                    } else {
                        object.toOne["manager"] = unitManagers[0]
                        batch.append(m, to: "directReports", of: unitManagers[0])
                    }
                    batch.insert(object)
                }
                for (i, p) in unitProjects.enumerated() {
                    var object = Snapshot(objectID: p, version: 0)
                    object.attributes = [
                        "name": .string("Project \(number)-\(i + 1)"),
                        "startDate": .date(Self.date(random.next(), from: 2015, years: 10)),
                        "budget": .double(Double(random.next() % 5_000_000) / 4),
                        "isActive": .boolean(i != 3)
                    ]
                    object.toOne["department"] = d
                    batch.append(p, to: "projects", of: d)
                    batch.insert(object)
                }
                for (i, ms) in unitMilestones.enumerated() {
                    let p = unitProjects[i < 6 ? i / 3 : 2 + (i - 6) / 2]
                    var object = Snapshot(objectID: ms, version: 0)
                    object.attributes = [
                        "title": .string(Self.milestoneTitles[i % Self.milestoneTitles.count]),
                        "dueDate": .date(Self.date(random.next(), from: 2020, years: 8)),
                        "done": .boolean(random.next() % 2 == 0)
                    ]
                    object.toOne["project"] = p
                    batch.append(ms, to: "milestones", of: p)
                    batch.insert(object)
                }
                for (i, e) in unitEmployees.enumerated() {
                    var object = person(e, &random, &nextEmployeeID)
                    let boss = unitManagers[1 + i % 4]
                    object.toOne["department"] = d
                    object.toOne["manager"] = boss
                    batch.append(e, to: "employees", of: d)
                    batch.append(e, to: "directReports", of: boss)
                    let first = unitProjects[i % 4]
                    let memberOf = i % 3 == 0 ? [first, unitProjects[(i + 1) % 4]] : [first]
                    for p in memberOf {
                        batch.append(p, to: "projects", of: e)
                        batch.append(e, to: "members", of: p)
                    }
                    batch.insert(object)
                }
            }
            try store.save(batch.request)
            unit += count
            progress(unit * Self.unitSize, total)
        }
    }

    /// One save's objects and to-many lists; lists keep the order their members were added in,
    /// which is the order of ordered relationships.
    private struct Batch {
        var request = SaveRequest()
        var lists: [SaveRequest.ToManyChange] = []
        var listIndex: [ListKey: Int] = [:]

        struct ListKey: Hashable {
            var source: ObjectID
            var relationship: String
        }

        mutating func insert(_ snapshot: Snapshot) { request.inserted.append(snapshot) }

        mutating func append(_ destination: ObjectID, to relationship: String, of source: ObjectID) {
            let key = ListKey(source: source, relationship: relationship)
            if let index = listIndex[key] {
                request.toManyChanges[index].destinations.append(destination)
            } else {
                listIndex[key] = request.toManyChanges.count
                request.toManyChanges.append(
                    .init(source: source, relationship: relationship, destinations: [destination]))
            }
        }
    }

    private func person(_ id: ObjectID, _ random: inout SplitMix64, _ nextEmployeeID: inout Int64) -> Snapshot {
        let first = Self.firstNames[Int(random.next() % UInt64(Self.firstNames.count))]
        let last = Self.lastNames[Int(random.next() % UInt64(Self.lastNames.count))]
        var values: PropertyValues<AttributeValue> = [
            "firstName": .string(first),
            "lastName": .string(last),
            "birthDate": .date(Self.date(random.next(), from: 1955, years: 50)),
            "personID": .uuid(Self.uuid(&random))
        ]
        if nextEmployeeID % 10 == 1 {
            values["photo"] = .data(Self.photo(&random))
        }
        values["employeeID"] = .integer(nextEmployeeID)
        values["level"] = .integer(Int64(1 + random.next() % 10))
        values["badgeNumber"] = .integer(Int64(bitPattern: random.next() >> 1))
        values["salary"] = .decimal(Self.decimal(units: Int64(3_000_000 + random.next() % 15_000_000), scale: 2))
        values["hoursPerWeek"] = .double([40, 37.5, 32, 20, 42.25][Int(random.next() % 5)])
        values["rating"] = .float(Float(random.next() % 50) / 10)
        values["isRemote"] = .boolean(random.next() % 4 == 0)
        values["homepage"] = .string("https://example.com/~\(first.lowercased()).\(last.lowercased())")
        if nextEmployeeID % 7 == 0 {
            values["preferences"] = .data(Data("{\"theme\":\"dark\",\"id\":\(nextEmployeeID)}".utf8))
        }
        nextEmployeeID += 1
        return Snapshot(objectID: id, version: 0, attributes: values)
    }

    /// `units` hundredths (scale 2) as a Decimal, normalized as Decimal's own arithmetic leaves it
    /// (no trailing zeros in the mantissa): built from its parts, without a division.
    static func decimal(units: Int64, scale: Int) -> Decimal {
        var mantissa = UInt64(units.magnitude)
        var exponent = -scale
        while mantissa != 0, mantissa % 10 == 0 {
            mantissa /= 10
            exponent += 1
        }
        return Decimal(sign: units < 0 ? .minus : .plus, exponent: exponent, significand: Decimal(mantissa))
    }

    /// A department's code, D00001 and up.
    private static func code(_ number: Int) -> String {
        let digits = String(number)
        return "D" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    private static func date(_ bits: UInt64, from year: Int, years: Int) -> Date {
        // Seconds since 2001 with a fractional part, as Core Data stores dates.
        let start = Double(year - 2001) * 365.2425 * 86400
        let offset = Double(bits % UInt64(years * 365 * 86400 * 1000)) / 1000
        return Date(timeIntervalSinceReferenceDate: start + offset)
    }

    private static func uuid(_ random: inout SplitMix64) -> UUID {
        let a = random.next()
        let b = random.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// A tiny valid PNG-like blob: a fixed signature and pseudo-random bytes (binary, not text).
    private static func photo(_ random: inout SplitMix64) -> Data {
        var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        for _ in 0..<7 {
            withUnsafeBytes(of: random.next().littleEndian) { data.append(contentsOf: $0) }
        }
        return data
    }

    static let firstNames = [
        "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Dennis", "Margaret",
        "John", "Radia", "Niklaus", "Adele", "Tim", "Hedy", "Linus", "Sophie", "Guido", "Katherine"
    ]
    static let lastNames = [
        "Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Ritchie",
        "Hamilton", "Backus", "Perlman", "Wirth", "Goldberg", "Berners-Lee", "Lamarr", "Torvalds", "Wilson",
        "van Rossum", "Johnson"
    ]
    static let departmentNames = [
        "Engineering", "Sales", "Research", "Support", "Design", "Finance", "Legal", "Operations"
    ]
    static let titles = ["Director", "Team Lead", "Head of Unit", "Principal", "Vice President"]
    static let milestoneTitles = ["Kick-off", "Design review", "Beta", "Launch", "Retrospective"]
}

/// A small, fast, deterministic random number generator (SplitMix64), so samples are the same on
/// every machine and a failing randomized test is repeated by its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
