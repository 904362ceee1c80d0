import Foundation
import Testing

@testable import ObjectGraph

// MARK: - Writing archives by hand

/// Writes binary property lists object by object, references by index, so that a test can write
/// what no real writer would: cycles, lies about counts and offsets.
struct PlistWriter {
    enum Object {
        case null
        case bool(Bool)
        case int(Int64)
        case real(Double)
        case ascii(String)
        case utf16(String)
        case data([UInt8])
        case uid(Int)
        case array([Int])
        case dict([(Int, Int)])
        /// Bytes written as they are (a marker and whatever follows).
        case raw([UInt8])
    }

    var objects: [Object] = []

    mutating func add(_ object: Object) -> Int {
        objects.append(object)
        return objects.count - 1
    }

    func encode(top: Int, referenceSize: Int = 4) -> Data {
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        func length(_ marker: UInt8, _ count: Int) {
            if count < 15 {
                out.append(marker | UInt8(count))
            } else {
                out.append(marker | 0x0F)
                out.append(0x13)
                out += bigEndian(UInt64(count), 8)
            }
        }
        for object in objects {
            offsets.append(out.count)
            switch object {
            case .null: out.append(0x00)
            case .bool(let b): out.append(b ? 0x09 : 0x08)
            case .int(let i):
                out.append(0x13)
                out += bigEndian(UInt64(bitPattern: i), 8)
            case .real(let d):
                out.append(0x23)
                out += bigEndian(d.bitPattern, 8)
            case .ascii(let s):
                length(0x50, s.utf8.count)
                out += Array(s.utf8)
            case .utf16(let s):
                let units = Array(s.utf16)
                length(0x60, units.count)
                for unit in units { out += bigEndian(UInt64(unit), 2) }
            case .data(let bytes):
                length(0x40, bytes.count)
                out += bytes
            case .uid(let u):
                out.append(0x83)
                out += bigEndian(UInt64(u), 4)
            case .array(let refs):
                length(0xA0, refs.count)
                for r in refs { out += bigEndian(UInt64(r), referenceSize) }
            case .dict(let pairs):
                length(0xD0, pairs.count)
                for p in pairs { out += bigEndian(UInt64(p.0), referenceSize) }
                for p in pairs { out += bigEndian(UInt64(p.1), referenceSize) }
            case .raw(let bytes):
                out += bytes
            }
        }
        let tableOffset = out.count
        for offset in offsets { out += bigEndian(UInt64(offset), 4) }
        out += [0, 0, 0, 0, 0, 0, 4, UInt8(referenceSize)]
        out += bigEndian(UInt64(objects.count), 8)
        out += bigEndian(UInt64(top), 8)
        out += bigEndian(UInt64(tableOffset), 8)
        return Data(out)
    }

    private func bigEndian(_ value: UInt64, _ size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (size - 1 - $0))) }
    }
}

/// A keyed archive built as Core Data's archiver lays it out: `$objects` entries that refer to
/// each other by UID, class records, and `$top.root`.
struct ArchiveBuilder {
    indirect enum Value {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case uid(Int)
        case dict([(String, Value)])
        case array([Value])
    }

    var objects: [Value] = [.string("$null")]
    private var classes: [String: Int] = [:]

    mutating func add(_ value: Value) -> Int {
        objects.append(value)
        return objects.count - 1
    }

    /// Reserves an entry to fill later (for objects that refer to each other).
    mutating func reserve() -> Int { add(.string("placeholder")) }

    mutating func set(_ uid: Int, _ value: Value) { objects[uid] = value }

    mutating func classRecord(_ name: String, _ superclasses: [String] = ["NSObject"]) -> Int {
        if let known = classes[name] { return known }
        let uid = add(
            .dict([("$classname", .string(name)), ("$classes", .array(([name] + superclasses).map(Value.string)))]))
        classes[name] = uid
        return uid
    }

    /// An instance of `className` with `fields`.
    @discardableResult
    mutating func instance(
        _ className: String, _ superclasses: [String] = ["NSObject"], _ fields: [(String, Value)], at uid: Int? = nil
    )
        -> Int
    {
        let record = classRecord(className, superclasses)
        let value = Value.dict([("$class", .uid(record))] + fields)
        if let uid {
            set(uid, value)
            return uid
        }
        return add(value)
    }

    mutating func string(_ s: String) -> Value { .uid(add(.string(s))) }

    mutating func dictionary(_ entries: [(String, Int)]) -> Value {
        let keys = entries.map { Value.uid(add(.string($0.0))) }
        return .uid(
            instance(
                "NSDictionary", ["NSObject"],
                [("NS.keys", .array(keys)), ("NS.objects", .array(entries.map { .uid($0.1) }))]))
    }

    mutating func array(_ items: [Int]) -> Value {
        .uid(instance("NSArray", ["NSObject"], [("NS.objects", .array(items.map { .uid($0) }))]))
    }

    func encode(root: Int) -> Data {
        var writer = PlistWriter()
        func flatten(_ value: Value) -> Int {
            switch value {
            case .string(let s): return writer.add(s.allSatisfy(\.isASCII) ? .ascii(s) : .utf16(s))
            case .int(let i): return writer.add(.int(i))
            case .bool(let b): return writer.add(.bool(b))
            case .uid(let u): return writer.add(.uid(u))
            case .array(let items): return writer.add(.array(items.map(flatten)))
            case .dict(let entries):
                let pairs = entries.map { (writer.add(.ascii($0.0)), flatten($0.1)) }
                return writer.add(.dict(pairs))
            }
        }
        let objectRefs = objects.map(flatten)
        let objectsArray = writer.add(.array(objectRefs))
        let top = flatten(.dict([("root", .uid(root))]))
        let top2 = writer.add(
            .dict([
                (writer.add(.ascii("$archiver")), writer.add(.ascii("NSKeyedArchiver"))),
                (writer.add(.ascii("$version")), writer.add(.int(100_000))),
                (writer.add(.ascii("$top")), top),
                (writer.add(.ascii("$objects")), objectsArray)
            ]))
        return writer.encode(top: top2)
    }

    /// A model: Person(name: String, required; nickname: String, optional; friends ↔ friends,
    /// to-many), Employee: Person (salary: Integer 64, default 7; manager → Employee ↔ reports).
    static func sampleModel() -> (ArchiveBuilder, root: Int) {
        var b = ArchiveBuilder()
        let modelUID = b.reserve()
        let person = b.reserve()
        let employee = b.reserve()
        let attribute = ["NSPropertyDescription", "NSObject"]
        let name = b.instance(
            "NSAttributeDescription", attribute,
            [
                ("NSPropertyName", b.string("name")), ("NSAttributeType", .int(700)), ("NSEntity", .uid(person))
            ])
        let nickname = b.instance(
            "NSAttributeDescription", attribute,
            [
                ("NSPropertyName", b.string("nickname")), ("NSAttributeType", .int(700)), ("NSIsOptional", .bool(true)),
                ("NSEntity", .uid(person))
            ])
        let friends = b.reserve()
        b.instance(
            "NSRelationshipDescription", attribute,
            [
                ("NSPropertyName", b.string("friends")), ("NSDestinationEntity", .uid(person)),
                ("NSInverseRelationship", .uid(friends)),
                ("NSMinCount", .int(0)), ("NSMaxCount", .int(0)), ("NSDeleteRule", .int(1)),
                ("NSIsOptional", .bool(true)),
                ("NSEntity", .uid(person))
            ], at: friends)
        let salary = b.instance(
            "NSAttributeDescription", attribute,
            [
                ("NSPropertyName", b.string("salary")), ("NSAttributeType", .int(300)),
                ("NSDefaultValue", .uid(b.add(.int(7)))),
                ("NSEntity", .uid(employee))
            ])
        let manager = b.reserve()
        let reports = b.reserve()
        b.instance(
            "NSRelationshipDescription", attribute,
            [
                ("NSPropertyName", b.string("manager")), ("NSDestinationEntity", .uid(employee)),
                ("NSInverseRelationship", .uid(reports)),
                ("NSMinCount", .int(0)), ("NSMaxCount", .int(1)), ("NSDeleteRule", .int(1)),
                ("NSIsOptional", .bool(true)),
                ("NSEntity", .uid(employee))
            ], at: manager)
        b.instance(
            "NSRelationshipDescription", attribute,
            [
                ("NSPropertyName", b.string("reports")), ("NSDestinationEntity", .uid(employee)),
                ("NSInverseRelationship", .uid(manager)),
                ("NSMinCount", .int(0)), ("NSMaxCount", .int(0)), ("NSDeleteRule", .int(3)),
                ("NSIsOptional", .bool(true)),
                ("NSEntity", .uid(employee))
            ], at: reports)
        let personProperties = b.dictionary([("name", name), ("nickname", nickname), ("friends", friends)])
        // The subentity lists its inherited properties too, as Core Data's archives do.
        let employeeProperties = b.dictionary([
            ("name", name), ("nickname", nickname), ("friends", friends), ("salary", salary), ("manager", manager),
            ("reports", reports)
        ])
        b.instance(
            "NSEntityDescription", ["NSObject"],
            [
                ("NSEntityName", b.string("Person")), ("NSProperties", personProperties),
                ("NSManagedObjectModel", .uid(modelUID)),
                ("NSVersionHashModifier", b.string("v2"))
            ], at: person)
        b.instance(
            "NSEntityDescription", ["NSObject"],
            [
                ("NSEntityName", b.string("Employee")), ("NSProperties", employeeProperties),
                ("NSSuperentity", .uid(person)),
                ("NSManagedObjectModel", .uid(modelUID))
            ], at: employee)
        let entities = b.dictionary([("Person", person), ("Employee", employee)])
        b.instance("NSManagedObjectModel", ["NSObject"], [("NSEntities", entities)], at: modelUID)
        return (b, modelUID)
    }
}

// MARK: - Tests

@Suite struct CompiledModelTests {
    @Test func binaryPlistsFromFoundationReadBack() throws {
        let value: [String: Any] = [
            "int": 42, "negative": -7, "big": Int64.max, "real": 2.5, "string": "plain", "unicode": "Zürich ✓",
            "data": Data([0, 1, 2, 255]), "array": [1, "two", false], "nested": ["a": ["b": true]],
            "long": String(repeating: "x", count: 300)
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: value, format: .binary, options: 0)
        let parsed = try BinaryPropertyList.parse(data, source: "test")
        #expect(parsed["int"] == .integer(42))
        #expect(parsed["negative"] == .integer(-7))
        #expect(parsed["big"] == .integer(Int64.max))
        #expect(parsed["real"] == .real(2.5))
        #expect(parsed["string"] == .string("plain"))
        #expect(parsed["unicode"] == .string("Zürich ✓"))
        #expect(parsed["data"] == .data(Data([0, 1, 2, 255])))
        #expect(parsed["array"] == .array([.integer(1), .string("two"), .boolean(false)]))
        #expect(parsed["nested"]?["a"]?["b"] == .boolean(true))
        #expect(parsed["long"] == .string(String(repeating: "x", count: 300)))
    }

    /// A derivation reads back as NSExpression prints it (`now()`, which the version hash hashes);
    /// what Core Data hashes and storefs does not model (a filtering predicate, a read-only
    /// property) is noted, naming the entity whose hash will differ.
    @Test func derivationsReadAsNSExpressionPrintsThemAndUnmodelledHashInputsAreNoted() throws {
        var b = ArchiveBuilder()
        let modelUID = b.reserve()
        let item = b.reserve()
        let expression = ["NSExpression", "NSObject"]
        let utilities = b.instance(
            "NSConstantValueExpression", expression,
            [
                ("NSExpressionType", .int(0)), ("NSConstantValueClassName", b.string("_NSPredicateUtilities"))
            ])
        let now = b.instance(
            "NSFunctionExpression", expression,
            [
                ("NSOperand", .uid(utilities)), ("NSSelectorName", b.string("now")), ("NSExpressionType", .int(4)),
                ("NSArguments", b.array([]))
            ])
        let filter = b.instance("NSTruePredicate", ["NSPredicate", "NSObject"], [])
        let stamp = b.instance(
            "NSDerivedAttributeDescription", ["NSAttributeDescription", "NSPropertyDescription", "NSObject"],
            [
                ("NSPropertyName", b.string("stamp")), ("NSAttributeType", .int(900)), ("NSIsOptional", .bool(true)),
                ("NSDerivationExpression", .uid(now)), ("NSFilteringPredicate", .uid(filter)), ("NSEntity", .uid(item))
            ])
        let fixed = b.instance(
            "NSAttributeDescription", ["NSPropertyDescription", "NSObject"],
            [
                ("NSPropertyName", b.string("fixed")), ("NSAttributeType", .int(700)), ("NSIsReadOnly", .bool(true)),
                ("NSEntity", .uid(item))
            ])
        b.instance(
            "NSEntityDescription", ["NSObject"],
            [
                ("NSEntityName", b.string("Item")),
                ("NSProperties", b.dictionary([("stamp", stamp), ("fixed", fixed)])),
                ("NSManagedObjectModel", .uid(modelUID))
            ], at: item)
        b.instance("NSManagedObjectModel", ["NSObject"], [("NSEntities", b.dictionary([("Item", item)]))], at: modelUID)
        let decoded = try CompiledModelLoader.decode(archive: b.encode(root: modelUID), source: "derived")
        #expect(decoded.model.entity(named: "Item")?.attribute(named: "stamp")?.derivationExpression == "now()")
        #expect(
            decoded.notes.contains {
                $0.contains("Item.stamp has a filtering predicate") && $0.contains("version hash of Item")
            })
        #expect(decoded.notes.contains { $0.contains("Item.fixed is read-only") })
        #expect(decoded.notes.count == 2, "\(decoded.notes)")
    }

    @Test func aHandBuiltModelArchiveDecodes() throws {
        let (builder, root) = ArchiveBuilder.sampleModel()
        let decoded = try CompiledModelLoader.decode(archive: builder.encode(root: root), source: "sample")
        let model = decoded.model
        #expect(model.entities.map(\.name) == ["Person", "Employee"])
        let person = try #require(model.entity(named: "Person"))
        #expect(person.attributes.map(\.name) == ["name", "nickname"])
        #expect(person.attribute(named: "name")?.isOptional == false)
        #expect(person.attribute(named: "nickname")?.isOptional == true)
        #expect(person.relationship(named: "friends")?.inverseName == "friends")
        #expect(person.versionHashModifier == "v2")
        let employee = try #require(model.entity(named: "Employee"))
        #expect(employee.parentName == "Person")
        #expect(employee.attributes.map(\.name) == ["salary"], "inherited properties are not redeclared")
        #expect(employee.attribute(named: "salary")?.defaultValue == .integer(7))
        #expect(employee.relationship(named: "reports")?.deleteRule == .deny)
        #expect(employee.relationship(named: "manager")?.isToMany == false)
    }

    // MARK: Hostile input: every case a clear error, never a crash

    static func failure(_ data: Data) -> String? {
        do {
            _ = try CompiledModelLoader.decode(archive: data, source: "hostile")
            return nil
        } catch {
            #expect(error.code == .invalidModel)
            return error.message
        }
    }

    @Test func everyTruncationIsAnError() {
        let (builder, root) = ArchiveBuilder.sampleModel()
        let data = builder.encode(root: root)
        for length in 0..<data.count {
            #expect(Self.failure(data.prefix(length)) != nil, "\(length) bytes")
        }
    }

    /// Random damage to a valid archive: any outcome but a crash (decoded or refused).
    @Test func randomDamageNeverCrashes() {
        let (builder, root) = ArchiveBuilder.sampleModel()
        let original = [UInt8](builder.encode(root: root))
        var state: UInt64 = 0x5DEE_CE66_D1CE_4E5B
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var refused = 0
        for _ in 0..<3000 {
            var bytes = original
            for _ in 0...next(4) {
                switch next(3) {
                case 0: bytes[next(bytes.count)] = UInt8(next(256))
                case 1: bytes[next(bytes.count)] ^= UInt8(1 << next(8))
                default: bytes.insert(UInt8(next(256)), at: next(bytes.count))
                }
            }
            if Self.failure(Data(bytes)) != nil { refused += 1 }
        }
        #expect(refused > 0)
    }

    @Test func anArrayThatContainsItselfIsRefused() throws {
        var w = PlistWriter()
        let array = w.add(.array([0]))
        let message = try #require(Self.failure(w.encode(top: array)))
        #expect(message.contains("contains itself"), "\(message)")
    }

    @Test func deepNestingIsRefused() throws {
        var w = PlistWriter()
        var inner = w.add(.null)
        for _ in 0..<300 { inner = w.add(.array([inner])) }
        let message = try #require(Self.failure(w.encode(top: inner)))
        #expect(message.contains("deeper"), "\(message)")
    }

    @Test func countsAndOffsetsThatLieAreRefused() throws {
        // A string claiming 2^40 characters, an array claiming 2^31 entries, a trailer claiming
        // more objects than bytes, a reference past the object table, a zero reference size.
        var w = PlistWriter()
        let long = w.add(.raw([0x6F, 0x13, 0, 0, 1, 0, 0, 0, 0, 0]))
        #expect(Self.failure(w.encode(top: long))?.contains("length") == true)
        var w2 = PlistWriter()
        let big = w2.add(.raw([0xAF, 0x12, 0x80, 0, 0, 0]))
        #expect(Self.failure(w2.encode(top: big)) != nil)
        var w3 = PlistWriter()
        let dangling = w3.add(.array([99]))
        #expect(Self.failure(w3.encode(top: dangling))?.contains("refers to object 99") == true)
        var bytes = [UInt8](w3.encode(top: dangling))
        bytes[bytes.count - 25] = 0x7F  // object count: 2^63-ish
        #expect(Self.failure(Data(bytes))?.contains("trailer") == true)
        bytes = [UInt8](w3.encode(top: dangling))
        bytes[bytes.count - 25] = 1
        bytes[bytes.count - 26] = 0  // reference size 0
        #expect(Self.failure(Data(bytes)) != nil)
    }

    @Test func keyedArchiveStructureIsChecked() throws {
        // Not an archive; a UID past $objects; the root of another class; entities not a dictionary.
        let plain = try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .binary, options: 0)
        #expect(Self.failure(plain)?.contains("not an NSKeyedArchiver") == true)
        var b = ArchiveBuilder()
        #expect(Self.failure(b.encode(root: 500))?.contains("refers to object 500") == true)
        let text = b.instance("NSString", ["NSObject"], [("NS.string", .string("hello"))])
        #expect(Self.failure(b.encode(root: text))?.contains("not an NSManagedObjectModel") == true)
        let model = b.instance("NSManagedObjectModel", ["NSObject"], [("NSEntities", .int(3))])
        #expect(Self.failure(b.encode(root: model))?.contains("not a dictionary") == true)
    }

    @Test func modelGraphsThatCannotBeModelsAreRefused() throws {
        // Two entities each the other's superentity.
        var b = ArchiveBuilder()
        let modelUID = b.reserve()
        let a = b.reserve()
        let c = b.reserve()
        let empty = b.dictionary([])
        b.instance(
            "NSEntityDescription", ["NSObject"],
            [("NSEntityName", b.string("A")), ("NSSuperentity", .uid(c)), ("NSProperties", empty)], at: a)
        b.instance(
            "NSEntityDescription", ["NSObject"],
            [("NSEntityName", b.string("C")), ("NSSuperentity", .uid(a)), ("NSProperties", empty)], at: c)
        b.instance(
            "NSManagedObjectModel", ["NSObject"], [("NSEntities", b.dictionary([("A", a), ("C", c)]))], at: modelUID)
        #expect(Self.failure(b.encode(root: modelUID))?.contains("cycle") == true)

        // A relationship whose destination is a string, not an entity; a proxy for itself.
        var d = ArchiveBuilder()
        let model2 = d.reserve()
        let entity = d.reserve()
        let bad = d.instance(
            "NSRelationshipDescription", ["NSPropertyDescription", "NSObject"],
            [
                ("NSPropertyName", d.string("link")), ("NSDestinationEntity", d.string("Nowhere")),
                ("NSMaxCount", .int(1))
            ])
        d.instance(
            "NSEntityDescription", ["NSObject"],
            [("NSEntityName", d.string("E")), ("NSProperties", d.dictionary([("link", bad)]))], at: entity)
        d.instance("NSManagedObjectModel", ["NSObject"], [("NSEntities", d.dictionary([("E", entity)]))], at: model2)
        #expect(Self.failure(d.encode(root: model2))?.contains("not one of the model's entities") == true)

        var p = ArchiveBuilder()
        let model3 = p.reserve()
        let entity3 = p.reserve()
        let proxy = p.reserve()
        p.instance("_NSPropertyDescriptionProxy", ["NSObject"], [("NSUnderlyingProperty", .uid(proxy))], at: proxy)
        p.instance(
            "NSEntityDescription", ["NSObject"],
            [("NSEntityName", p.string("E")), ("NSProperties", p.dictionary([("loop", proxy)]))], at: entity3)
        p.instance("NSManagedObjectModel", ["NSObject"], [("NSEntities", p.dictionary([("E", entity3)]))], at: model3)
        #expect(Self.failure(p.encode(root: model3))?.contains("proxies") == true)
    }

    @Test func aPredicateThatContainsItselfIsRefused() throws {
        var b = ArchiveBuilder()
        let modelUID = b.reserve()
        let entity = b.reserve()
        let predicate = b.reserve()
        let list = b.array([predicate])
        b.instance(
            "NSCompoundPredicate", ["NSPredicate", "NSObject"],
            [("NSCompoundPredicateType", .int(1)), ("NSSubpredicates", list)], at: predicate)
        let request = b.instance(
            "NSFetchRequest", ["NSObject"], [("NSEntity", .uid(entity)), ("NSPredicate", .uid(predicate))])
        b.instance(
            "NSEntityDescription", ["NSObject"], [("NSEntityName", b.string("E")), ("NSProperties", b.dictionary([]))],
            at: entity)
        b.instance(
            "NSManagedObjectModel", ["NSObject"],
            [
                ("NSEntities", b.dictionary([("E", entity)])),
                ("NSFetchRequestTemplates", b.dictionary([("loop", request)]))
            ], at: modelUID)
        #expect(Self.failure(b.encode(root: modelUID))?.contains("nests deeper") == true)
    }

    @Test func compiledModelFilesAndFolders() throws {
        let (builder, root) = ArchiveBuilder.sampleModel()
        let data = builder.encode(root: root)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("momd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let folder = scratch.appendingPathComponent("App.momd")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try data.write(to: folder.appendingPathComponent("App 2.mom"))
        // One version: taken without a VersionInfo.plist.
        #expect(try ModelLoader.load(from: folder).model.entity(named: "Employee") != nil)
        #expect(ModelLoader.isCompiledModel(folder.appendingPathComponent("App 2.mom")))
        #expect(try ModelLoader.load(from: folder.appendingPathComponent("App 2.mom")).model.entities.count == 2)
        // Two versions: VersionInfo.plist names the current one.
        var other = ArchiveBuilder()
        let otherModel = other.reserve()
        let solo = other.reserve()
        other.instance(
            "NSEntityDescription", ["NSObject"],
            [("NSEntityName", other.string("Solo")), ("NSProperties", other.dictionary([]))], at: solo)
        other.instance(
            "NSManagedObjectModel", ["NSObject"], [("NSEntities", other.dictionary([("Solo", solo)]))], at: otherModel)
        try other.encode(root: otherModel).write(to: folder.appendingPathComponent("App.mom"))
        #expect(throws: ObjectGraphError.self) { try ModelLoader.load(from: folder) }
        let info: [String: Any] = [
            "NSManagedObjectModel_CurrentVersionName": "App", "NSManagedObjectModel_VersionHashes": [:]
        ]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: folder.appendingPathComponent("VersionInfo.plist"))
        #expect(try ModelLoader.load(from: folder).model.entities.map(\.name) == ["Solo"])
        let missing: [String: Any] = ["NSManagedObjectModel_CurrentVersionName": "App 3"]
        try PropertyListSerialization.data(fromPropertyList: missing, format: .xml, options: 0)
            .write(to: folder.appendingPathComponent("VersionInfo.plist"))
        #expect(throws: ObjectGraphError.self) { try ModelLoader.load(from: folder) }
    }
}
