import Foundation
import ObjectGraph
import TestSupport
import Testing

/// Temp folders, graph copying and graph comparison shared by the XML and binary store tests.
enum StoreFixtures {
    static let corpus = Corpus.directory

    static func tempDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("storetypetests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A writable copy of corpus store `name` (and its WAL), in a folder of its own.
    static func corpusCopy(_ name: String) throws -> URL {
        try Corpus.copy(sqlite: name, into: tempDirectory())
    }

    /// An in-memory store of the sample model holding `objects` generated objects.
    static func sampleStore(objects: Int = 1000) throws -> GraphStore {
        let store = GraphStore(model: SampleModel.make())
        let coordinator = PersistentStoreCoordinator(store: store)
        try SampleGenerator(objectCount: objects).populate(coordinator.newContext())
        return store
    }

    /// Copies every object of `source` into `destination` keeping keys, in one save, with the
    /// source's custom metadata merged into the destination's.
    static func copyGraph(from source: any PersistentStore, to destination: any PersistentStore) throws {
        var request = SaveRequest()
        let model = source.model
        for entity in model.entities {
            let ids = try source.objectIDs(of: entity.id)
            guard !ids.isEmpty else { continue }
            request.inserted += try source.snapshots(for: ids)
            for relationship in entity.persistentRelationships where relationship.isToMany {
                let lists = try source.toManyDestinations(of: relationship.name, in: entity.id, for: ids)
                for id in ids {
                    request.toManyChanges.append(
                        .init(source: id, relationship: relationship.name, destinations: lists[id] ?? []))
                }
            }
        }
        var metadata = try destination.metadata()
        for (key, value) in try source.metadata().values where !StoreMetadata.managedKeys.contains(key) {
            metadata[key] = value
        }
        request.metadata = metadata
        try destination.save(request)
    }

    /// Expects two stores to hold the same graph: the same IDs, attribute values bit for bit,
    /// to-ones, to-many lists (ordered ones in order, others as sets) and, optionally, the same
    /// metadata apart from NSStoreType and NSStoreUUID. Versions are not compared.
    static func expectSameGraph(
        _ a: any PersistentStore, _ b: any PersistentStore, metadata compareMetadata: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let model = a.model
        #expect(model.entities.map(\.name) == b.model.entities.map(\.name), sourceLocation: sourceLocation)
        var total = 0
        for entity in model.entities {
            let idsA = try a.objectIDs(of: entity.id)
            let idsB = try b.objectIDs(of: entity.id)
            total += idsA.count
            #expect(idsA == idsB, "objects of \(entity.name)", sourceLocation: sourceLocation)
            #expect(try b.count(of: entity.id) == idsA.count, sourceLocation: sourceLocation)
            let snapsA = Dictionary(uniqueKeysWithValues: try a.snapshots(for: idsA).map { ($0.objectID, $0) })
            let snapsB = Dictionary(uniqueKeysWithValues: try b.snapshots(for: idsA).map { ($0.objectID, $0) })
            var attributeMismatches = 0
            var toOneMismatches = 0
            for id in idsA {
                if snapsA[id]?.attributes != snapsB[id]?.attributes {
                    attributeMismatches += 1
                    if attributeMismatches == 1 {
                        Issue.record(
                            "\(entity.name) \(id.key): \(String(describing: snapsA[id]?.attributes)) != \(String(describing: snapsB[id]?.attributes))",
                            sourceLocation: sourceLocation)
                    }
                }
                if snapsA[id]?.toOne != snapsB[id]?.toOne { toOneMismatches += 1 }
            }
            #expect(attributeMismatches == 0, "\(entity.name) attributes", sourceLocation: sourceLocation)
            #expect(toOneMismatches == 0, "\(entity.name) to-ones", sourceLocation: sourceLocation)
            for relationship in entity.persistentRelationships where relationship.isToMany {
                let listsA = try a.toManyDestinations(of: relationship.name, in: entity.id, for: idsA)
                let listsB = try b.toManyDestinations(of: relationship.name, in: entity.id, for: idsA)
                var mismatches = 0
                for id in idsA {
                    let la = listsA[id] ?? [], lb = listsB[id] ?? []
                    let same = relationship.isOrdered ? la == lb : Set(la) == Set(lb) && la.count == lb.count
                    if !same { mismatches += 1 }
                }
                #expect(mismatches == 0, "\(entity.name).\(relationship.name) lists", sourceLocation: sourceLocation)
            }
        }
        #expect(
            total == (try model.entities.reduce(0) { $0 + (try b.count(of: $1.id)) }), sourceLocation: sourceLocation)
        if compareMetadata {
            var ma = try a.metadata(), mb = try b.metadata()
            for key in StoreMetadata.managedKeys {
                ma[key] = nil
                mb[key] = nil
            }
            #expect(ma == mb, "metadata", sourceLocation: sourceLocation)
        }
    }

    /// Employees (and one department) holding values that are hard to store exactly.
    static func awkwardSave(model: ManagedObjectModel) -> SaveRequest {
        let employee = model.entityID(named: "Employee")!
        let department = model.entityID(named: "Department")!
        let strings = [
            "a<b>&c\"d'e</attribute>]]>", "line1\nline2\r\nline3\rend", "\ttab\t", "  lead and trail  ", "   ",
            "emoji 👩‍👩‍👧 ✓ é", "\u{1}\u{0}\u{1F}\u{7F}\u{FFFE}x", "\\u3c00 is a literal backslash-u", "\\", "",
            "&amp; &lt; <![CDATA[x]]>"
        ]
        let doubles: [Double] = [
            -0.0, .nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1, -1e-300,
            123_456_789_012_345_680
        ]
        let floats: [Float] = [
            -0.0, .nan, .infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.leastNormalMagnitude, 0.1,
            16_777_216
        ]
        let integers: [Int64] = [.min, .max, 0, -1, 1 << 53 + 1]
        let dates = [
            Date(timeIntervalSinceReferenceDate: 259_257_125.711286), Date(timeIntervalSince1970: -1234.567891),
            Date(timeIntervalSinceReferenceDate: -1e10 + 0.000123), Date(timeIntervalSinceReferenceDate: 1e-300),
            Date(timeIntervalSinceReferenceDate: 0.1)
        ]
        let decimals = [
            Decimal(string: "12345678901234567890.123456789012345678")!,
            Decimal(string: "-0.000000000000000000000001")!,
            Decimal(0), Decimal(string: "99999999999999999999999999999999999999")!
        ]
        let datas = [Data(), Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), Data([0, 0xFF])]
        var request = SaveRequest()
        let count = max(strings.count, doubles.count, floats.count)
        for i in 0..<count {
            var attributes: PropertyValues<AttributeValue> = [
                "firstName": .string(strings[i % strings.count]),
                "lastName": .string(strings[(i + 3) % strings.count]),
                "hoursPerWeek": .double(doubles[i % doubles.count]),
                "rating": .float(floats[i % floats.count]),
                "badgeNumber": .integer(integers[i % integers.count]),
                "employeeID": .integer(i % 2 == 0 ? Int64(Int32.max) : Int64(Int32.min)),
                "level": .integer(i % 2 == 0 ? Int64(Int16.min) : Int64(Int16.max)),
                "birthDate": .date(dates[i % dates.count]),
                "salary": .decimal(decimals[i % decimals.count]),
                "photo": .data(datas[i % datas.count]),
                "personID": .uuid(UUID()),
                "isRemote": .boolean(i % 2 == 0),
                "homepage": .string(i % 2 == 0 ? "https://example.com/a?b=c&d=<e>" : "file:///tmp/x%20y"),
                "preferences": .data(Data("prefs \(i)".utf8))
            ]
            if i == 0 { attributes["hoursPerWeek"] = nil }
            request.inserted.append(
                Snapshot(
                    objectID: ObjectID(entity: employee, key: PrimaryKey(Int64(i + 1))), version: 1,
                    attributes: attributes,
                    toOne: ["department": ObjectID(entity: department, key: PrimaryKey(1))]))
        }
        request.inserted.append(
            Snapshot(
                objectID: ObjectID(entity: department, key: PrimaryKey(1)), version: 1,
                attributes: ["name": .string("R&D <main>")]))
        request.toManyChanges.append(
            .init(
                source: ObjectID(entity: department, key: PrimaryKey(1)), relationship: "employees",
                destinations: (1...count).map { ObjectID(entity: employee, key: PrimaryKey(Int64($0))) }))
        return request
    }

    /// Runs a command (mount, umount) and returns its exit status.
    @discardableResult
    static func run(_ arguments: String...) throws -> Int32 {
        try runTool(arguments[0], Array(arguments.dropFirst())).status
    }

    static func expectError(
        _ code: ObjectGraphError.Code, mentioning text: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
        } catch let error as ObjectGraphError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(
                error.message.contains(text), "\(error.message) should mention \(text)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    static func files(in directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }
}
