import Foundation

/// Fills a store of the ``SampleModel`` with a deterministic company of about `objectCount` objects.
///
/// The same count and seed always give the same objects, keys and values, so tests and benchmarks
/// can compare stores. Objects come in units of 100 (1 department, its head and 4 other managers,
/// 80 employees, 4 projects, 10 milestones), saved every ``unitsPerSave`` units so memory stays flat
/// for a store of millions of objects.
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

    /// Inserts the sample into `context` and saves; `progress` gets (objects written, total).
    public func populate(_ context: ObjectContext, progress: (Int, Int) -> Void = { _, _ in }) throws(ObjectGraphError) {
        let model = context.model
        guard let department = model.entityID(named: "Department"), let manager = model.entityID(named: "Manager"),
            let employee = model.entityID(named: "Employee"), let project = model.entityID(named: "Project"),
            let milestone = model.entityID(named: "Milestone")
        else { throw ObjectGraphError(.invalidModel, "the sample needs the built-in sample model") }
        let units = max(1, objectCount / Self.unitSize)
        let total = units * Self.unitSize
        var random = SplitMix64(seed: seed)
        var nextEmployeeID: Int64 = 1
        var unit = 0
        while unit < units {
            let count = min(unitsPerSave, units - unit)
            let departments = try context.insertObjects(of: department, count: count)
            let managers = try context.insertObjects(of: manager, count: count * 5)
            let employees = try context.insertObjects(of: employee, count: count * 80)
            let projects = try context.insertObjects(of: project, count: count * 4)
            let milestones = try context.insertObjects(of: milestone, count: count * 10)
            for u in 0..<count {
                let number = unit + u + 1
                let d = departments[u]
                try context.setValue(.string(Self.departmentNames[number % Self.departmentNames.count] + " \(number)"), of: "name", for: d)
                try context.setValue(.string(String(format: "D%05d", number)), of: "code", for: d)
                try context.setValue(.decimal(Decimal(100_000 + Int(random.next() % 900_000)) + Decimal(string: "0.25")!), of: "budget", for: d)
                try context.setValue(.date(Self.date(random.next(), from: 1980, years: 40)), of: "founded", for: d)

                let unitManagers = Array(managers[(u * 5)..<(u * 5 + 5)])
                let unitEmployees = Array(employees[(u * 80)..<(u * 80 + 80)])
                for m in unitManagers {
                    try fillPerson(m, context, &random, &nextEmployeeID)
                    try context.setValue(.string(Self.titles[Int(random.next() % UInt64(Self.titles.count))]), of: "title", for: m)
                    try context.setDestination(d, of: "department", for: m)
                }
                try context.setDestination(unitManagers[0], of: "head", for: d)
                for m in unitManagers.dropFirst() {
                    try context.setDestination(unitManagers[0], of: "manager", for: m)
                }
                let unitProjects = Array(projects[(u * 4)..<(u * 4 + 4)])
                for (i, p) in unitProjects.enumerated() {
                    try context.setValue(.string("Project \(number)-\(i + 1)"), of: "name", for: p)
                    try context.setValue(.date(Self.date(random.next(), from: 2015, years: 10)), of: "startDate", for: p)
                    try context.setValue(.double(Double(random.next() % 5_000_000) / 4), of: "budget", for: p)
                    try context.setValue(.boolean(i != 3), of: "isActive", for: p)
                    try context.setDestination(d, of: "department", for: p)
                }
                let unitMilestones = Array(milestones[(u * 10)..<(u * 10 + 10)])
                for (i, ms) in unitMilestones.enumerated() {
                    let p = unitProjects[i < 6 ? i / 3 : 2 + (i - 6) / 2]
                    try context.setValue(.string(Self.milestoneTitles[i % Self.milestoneTitles.count]), of: "title", for: ms)
                    try context.setValue(.date(Self.date(random.next(), from: 2020, years: 8)), of: "dueDate", for: ms)
                    try context.setValue(.boolean(random.next() % 2 == 0), of: "done", for: ms)
                    try context.setDestination(p, of: "project", for: ms)
                }
                for (i, e) in unitEmployees.enumerated() {
                    try fillPerson(e, context, &random, &nextEmployeeID)
                    try context.setDestination(d, of: "department", for: e)
                    try context.setDestination(unitManagers[1 + i % 4], of: "manager", for: e)
                    let first = unitProjects[i % 4]
                    try context.setDestinations(
                        i % 3 == 0 ? [first, unitProjects[(i + 1) % 4]] : [first], of: "projects", for: e)
                }
            }
            try context.save()
            unit += count
            progress(unit * Self.unitSize, total)
        }
    }

    private func fillPerson(
        _ id: ObjectID, _ context: ObjectContext, _ random: inout SplitMix64, _ nextEmployeeID: inout Int64
    ) throws(ObjectGraphError) {
        let first = Self.firstNames[Int(random.next() % UInt64(Self.firstNames.count))]
        let last = Self.lastNames[Int(random.next() % UInt64(Self.lastNames.count))]
        try context.setValue(.string(first), of: "firstName", for: id)
        try context.setValue(.string(last), of: "lastName", for: id)
        try context.setValue(.date(Self.date(random.next(), from: 1955, years: 50)), of: "birthDate", for: id)
        try context.setValue(.uuid(Self.uuid(&random)), of: "personID", for: id)
        if nextEmployeeID % 10 == 1 {
            try context.setValue(.data(Self.photo(&random)), of: "photo", for: id)
        }
        try context.setValue(.integer(nextEmployeeID), of: "employeeID", for: id)
        try context.setValue(.integer(Int64(1 + random.next() % 10)), of: "level", for: id)
        try context.setValue(.integer(Int64(bitPattern: random.next() >> 1)), of: "badgeNumber", for: id)
        let cents = 3_000_000 + Int(random.next() % 15_000_000)
        try context.setValue(.decimal(Decimal(cents) / 100), of: "salary", for: id)
        try context.setValue(.double([40, 37.5, 32, 20, 42.25][Int(random.next() % 5)]), of: "hoursPerWeek", for: id)
        try context.setValue(.float(Float(random.next() % 50) / 10), of: "rating", for: id)
        try context.setValue(.boolean(random.next() % 4 == 0), of: "isRemote", for: id)
        try context.setValue(
            .string("https://example.com/~\(first.lowercased()).\(last.lowercased())"), of: "homepage", for: id)
        if nextEmployeeID % 7 == 0 {
            try context.setValue(.data(Data("{\"theme\":\"dark\",\"id\":\(nextEmployeeID)}".utf8)), of: "preferences", for: id)
        }
        nextEmployeeID += 1
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
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
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
        "John", "Radia", "Niklaus", "Adele", "Tim", "Hedy", "Linus", "Sophie", "Guido", "Katherine",
    ]
    static let lastNames = [
        "Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Ritchie",
        "Hamilton", "Backus", "Perlman", "Wirth", "Goldberg", "Berners-Lee", "Lamarr", "Torvalds", "Wilson",
        "van Rossum", "Johnson",
    ]
    static let departmentNames = ["Engineering", "Sales", "Research", "Support", "Design", "Finance", "Legal", "Operations"]
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
