import Foundation
import ObjectGraph
import TestSupport
import Testing

/// The engine's model migration without files: differences and lightweight verdicts on the rule
/// models of Tests/Fixtures/migration/rules, value expressions evaluated on in-memory stores,
/// the planning of staged migrations.
@Suite struct ModelMigrationTests {
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/migration/rules").standardizedFileURL

    /// The error `body` throws, as text; nil when it throws none.
    static func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    static func rule(_ name: String) throws -> ManagedObjectModel {
        try ModelLoader.load(from: rules.appendingPathComponent("\(name).xcdatamodel")).model
    }

    // MARK: - Differences

    @Test(arguments: [
        ("Added", true, 0), ("Removed", true, 0), ("Renamed", true, 0), ("MadeMandatory", true, 0),
        ("ToOneToMany", true, 0),
        ("ToManyToOne", true, 1), ("Reordered", true, 0), ("IntoHierarchy", true, 0), ("OutOfHierarchy", true, 0),
        ("WidenedTypes", true, 0), ("ChangedType", false, 0)
    ])
    func eachRuleHasCoreDatasVerdict(rule: String, lightweight: Bool, conditions: Int) throws {
        let difference = ModelDifference(from: try Self.rule("Base"), to: try Self.rule(rule))
        #expect(difference.isLightweight == lightweight, "\(rule): \(difference.refusals)")
        #expect(difference.conditions.count == conditions, "\(rule): \(difference.conditions)")
        #expect(!difference.isCompatible, "\(rule) changes version hashes")
    }

    @Test func renamesAreFoundByRenamingIdentifier() throws {
        let difference = ModelDifference(from: try Self.rule("Base"), to: try Self.rule("Renamed"))
        let writer = try #require(difference.entities.first { $0.name == "Writer" })
        #expect(writer.change == .renamed(from: "Author"))
        #expect(writer.properties.contains { $0.name == "fullName" && $0.change == .renamed(from: "name") })
        #expect(difference.entityMatches["Author"] == "Writer")
        #expect(difference.propertyMatches["Book"]?["heading"] == "title")
        #expect(difference.propertyMatches["Book"]?["writer"] == "author")
    }

    @Test func aChangedTypeIsRefusedNamingTheProperty() throws {
        let difference = ModelDifference(from: try Self.rule("Base"), to: try Self.rule("ChangedType"))
        #expect(difference.refusals.count == 1)
        #expect(
            difference.refusals.first?.hasPrefix(
                "Book.pages: Core Data cannot infer a change of type from Integer 16 to String") == true)
        #expect(throws: ObjectGraphError.self) {
            try MappingModel.inferred(from: try Self.rule("Base"), to: try Self.rule("ChangedType"))
        }
    }

    @Test func identicalModelsAreCompatible() throws {
        let base = try Self.rule("Base")
        let difference = ModelDifference(from: base, to: base)
        #expect(difference.isCompatible && difference.isLightweight)
        #expect(difference.entities.allSatisfy { $0.change == .unchanged })
    }

    @Test(arguments: [
        (AttributeType.integer16, AttributeType.integer64, true), (.integer64, .integer16, false),
        (.float, .double, true),
        (.double, .float, false), (.string, .uri, true), (.binaryData, .transformable, true),
        (.integer64, .double, false),
        (.string, .integer32, false), (.date, .double, false), (.boolean, .integer16, true)
    ])
    func lightweightTypeChangesKeepEveryValue(from: AttributeType, to: AttributeType, allowed: Bool) {
        #expect(AttributeConversion.isLossless(from: from, to: to) == allowed)
    }

    @Test func valuesConvertOnlyExactly() {
        #expect(AttributeConversion.convert(.integer(70_000), to: .integer16) == nil)
        #expect(AttributeConversion.convert(.integer(-32_768), to: .integer16) == .integer(-32_768))
        #expect(AttributeConversion.convert(.double(2.5), to: .integer64) == nil)
        #expect(AttributeConversion.convert(.double(3), to: .integer32) == .integer(3))
        #expect(AttributeConversion.convert(.double(.infinity), to: .integer64) == nil)
        #expect(AttributeConversion.convert(.integer(.max), to: .double) == nil, "2^63-1 is not a double")
        #expect(AttributeConversion.convert(.integer(1 << 53), to: .double) == .double(9_007_199_254_740_992))
        #expect(AttributeConversion.convert(.string("12"), to: .integer64) == nil)
        #expect(AttributeConversion.convert(.integer(1), to: .boolean) == .boolean(true))
        #expect(AttributeConversion.convert(.integer(2), to: .boolean) == nil)
    }

    // MARK: - Expressions

    @Test(arguments: [
        "$source.title", "\"constant\"", "42", "-1.5", "YES", "nil", "FUNCTION($source.name, \"uppercaseString\")",
        "FUNCTION($manager, \"destinationInstancesForEntityMappingNamed:sourceInstances:\", \"PostToColor\", $source)",
        "add:to:($source.count, 1)", "castObject:toType:($source.n, \"NSString\")", "{1, 2}", "$source.books.@count"
    ])
    func expressionsPrintAsTheyParse(text: String) throws {
        let expression = try MappingExpression.parse(text)
        #expect(try MappingExpression.parse(expression.description) == expression, "\(text) → \(expression)")
    }

    @Test(arguments: ["FUNCTION($source, uppercase)", "$", "\"open", "FUNCTION(", "add:to:", "$source.", "1 2"])
    func malformedExpressionsAreErrorsWithAPosition(text: String) {
        let failure = Self.failure { _ = try MappingExpression.parse(text) }
        #expect(failure?.contains("at position") == true, "\(failure ?? "\(text) parsed")")
    }

    @Test func deepNestingIsBounded() {
        let text = String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000)
        #expect(throws: ObjectGraphError.self) { try MappingExpression.parse(text) }
    }

    /// A person becomes a card through every expression form storefs runs.
    static let people = try! ManagedObjectModel(entities: [
        EntityDescription(
            name: "Person",
            attributes: [
                AttributeDescription(name: "first", type: .string), AttributeDescription(name: "last", type: .string),
                AttributeDescription(name: "age", type: .integer16), AttributeDescription(name: "score", type: .double),
                AttributeDescription(name: "code", type: .string), AttributeDescription(name: "born", type: .date)
            ],
            relationships: [
                RelationshipDescription(
                    name: "pets", destinationEntityName: "Pet", inverseName: "owner", isToMany: true)
            ]),
        EntityDescription(
            name: "Pet", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [
                RelationshipDescription(name: "owner", destinationEntityName: "Person", inverseName: "pets")
            ])
    ])

    static let cards = try! ManagedObjectModel(entities: [
        EntityDescription(
            name: "Card",
            attributes: [
                AttributeDescription(name: "shout", type: .string),
                AttributeDescription(name: "whisper", type: .string),
                AttributeDescription(name: "full", type: .string),
                AttributeDescription(name: "nextAge", type: .integer32),
                AttributeDescription(name: "ageText", type: .string), AttributeDescription(name: "half", type: .double),
                AttributeDescription(name: "number", type: .integer64),
                AttributeDescription(name: "petCount", type: .integer16),
                AttributeDescription(name: "kind", type: .string, isOptional: false, defaultValue: .string("person")),
                AttributeDescription(name: "initial", type: .string),
                AttributeDescription(name: "seconds", type: .double)
            ],
            relationships: [
                RelationshipDescription(name: "tags", destinationEntityName: "Tag", inverseName: "card", isToMany: true)
            ]),
        EntityDescription(
            name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
            relationships: [RelationshipDescription(name: "card", destinationEntityName: "Card", inverseName: "tags")])
    ])

    static func peopleStore() throws -> GraphStore {
        let store = GraphStore(model: people)
        let person = people.entityID(named: "Person")!
        let pet = people.entityID(named: "Pet")!
        var request = SaveRequest()
        let ada = ObjectID(entity: person, key: PrimaryKey(1))
        request.inserted = [
            Snapshot(
                objectID: ada, version: 1,
                attributes: [
                    "first": .string("Ada"), "last": .string("Lovelace"), "age": .integer(36), "score": .double(9),
                    "code": .string("  42abc"), "born": .date(Date(timeIntervalSinceReferenceDate: 100))
                ]),
            Snapshot(
                objectID: ObjectID(entity: pet, key: PrimaryKey(1)), version: 1, attributes: ["name": .string("Cat")],
                toOne: ["owner": ada]),
            Snapshot(
                objectID: ObjectID(entity: pet, key: PrimaryKey(2)), version: 1, attributes: ["name": .string("Dog")],
                toOne: ["owner": ada])
        ]
        request.toManyChanges = [
            .init(
                source: ada, relationship: "pets",
                destinations: [ObjectID(entity: pet, key: PrimaryKey(1)), ObjectID(entity: pet, key: PrimaryKey(2))])
        ]
        try store.save(request)
        return store
    }

    static func migrate(
        _ attributes: [(String, String)], relationships: [(String, String)] = [], petsToTags: Bool = false
    ) throws
        -> (GraphStore, ModelMigrationResult)
    {
        var mappings = [
            EntityMapping(
                name: "PersonToCard", kind: .transform, sourceEntityName: "Person", destinationEntityName: "Card",
                attributeMappings: try attributes.map {
                    PropertyMapping(name: $0.0, valueExpression: try MappingExpression.parse($0.1))
                },
                relationshipMappings: try relationships.map {
                    PropertyMapping(name: $0.0, valueExpression: try MappingExpression.parse($0.1))
                })
        ]
        if petsToTags {
            mappings.append(
                EntityMapping(
                    name: "PetToTag", kind: .transform, sourceEntityName: "Pet", destinationEntityName: "Tag",
                    attributeMappings: [
                        PropertyMapping(name: "label", valueExpression: .variable("source", keyPath: ["name"]))
                    ]))
        }
        let mapping = MappingModel(source: "test", entityMappings: mappings)
        let destination = GraphStore(model: cards)
        let result = try PersistentStoreCoordinator(store: try peopleStore()).migrateModel(
            into: destination,
            steps: [MigrationStep(from: "people", to: "cards", source: people, destination: cards, mapping: mapping)])
        return (destination, result)
    }

    @Test func expressionFormsGiveTheirValues() throws {
        let (store, result) = try Self.migrate(
            [
                ("shout", "FUNCTION($source.first, \"uppercaseString\")"), ("whisper", "lowercase:($source.last)"),
                ("full", "FUNCTION($source.first, \"stringByAppendingString:\", \" Lovelace\")"),
                ("nextAge", "add:to:($source.age, 1)"),
                ("ageText", "FUNCTION($source.age, \"stringValue\")"), ("half", "divide:by:($source.score, 2)"),
                ("number", "FUNCTION($source.code, \"integerValue\")"), ("petCount", "$source.pets.@count"),
                ("initial", "FUNCTION($source.first, \"substringToIndex:\", 1)"),
                ("seconds", "FUNCTION($source.born, \"timeIntervalSinceReferenceDate\")")
            ],
            relationships: [
                (
                    "tags",
                    "FUNCTION($manager, \"destinationInstancesForEntityMappingNamed:sourceInstances:\", \"PetToTag\", $source.pets)"
                )
            ],
            petsToTags: true)
        #expect(result.objectCount == 3)
        let card = try #require(
            try store.snapshots(for: store.objectIDs(of: Self.cards.entityID(named: "Card")!)).first)
        let values = card.attributes.dictionary
        #expect(
            values["shout"] == .string("ADA") && values["whisper"] == .string("lovelace")
                && values["full"] == .string("Ada Lovelace"))
        #expect(
            values["nextAge"] == .integer(37) && values["ageText"] == .string("36") && values["half"] == .double(4.5))
        #expect(
            values["number"] == .integer(42) && values["petCount"] == .integer(2) && values["initial"] == .string("A"))
        #expect(values["seconds"] == .double(100), "\(values)")
        #expect(values["kind"] == .string("person"), "an attribute without mapping gets its default")
        let tags =
            try store.toManyDestinations(of: "tags", in: card.objectID.entity, for: [card.objectID])[card.objectID]
            ?? []
        let labels = try store.snapshots(for: tags).compactMap { $0.attributes["label"] }
        #expect(Set(labels) == [.string("Cat"), .string("Dog")])
        let tag = try #require(try store.snapshots(for: tags).first)
        #expect(tag.toOne["card"] == card.objectID, "the inverse is set")
    }

    @Test(arguments: [
        ("shout", "FUNCTION($source.first, \"rot13\")", "the method rot13 is not a supported function"),
        ("shout", "FUNCTION($source.first, \"dealloc\")", "the method dealloc is not a supported function"),
        ("shout", "FUNCTION($source.first, \"dealloc\", 1)", "the method dealloc is not a supported function"),
        ("shout", "FUNCTION($source.born, \"length\")", "the method length of date values is not one storefs runs"),
        ("shout", "sqrt:($source.score)", "the function sqrt: is not one storefs runs"),
        ("nextAge", "$source.first", "is not a value of Card.nextAge (Integer 32)"),
        ("shout", "$source.nickname", "Person of the old model does not have"),
        ("shout", "$fetchRequest", "not one a migration sets"),
        ("initial", "FUNCTION($source.first, \"substringToIndex:\", 99)", "is outside the string's 3 UTF-16 units")
    ])
    func unsupportedExpressionsAreRefusedByName(property: String, text: String, message: String) throws {
        let failure = Self.failure { _ = try Self.migrate([(property, text)]) }
        #expect(failure?.contains(message) == true, "\(failure ?? "\(text) ran")")
    }

    @Test func aCustomPolicyIsRefusedByNameBeforeAnythingIsRead() throws {
        let custom = EntityMapping(
            name: "PersonToCard", kind: .custom, sourceEntityName: "Person", destinationEntityName: "Card",
            migrationPolicyClassName: "App.PersonPolicy")
        let mapping = MappingModel(source: "Mapping.xcmappingmodel", entityMappings: [custom])
        let source = try Self.peopleStore()
        let before = source.requestCount
        let step = MigrationStep(from: "a", to: "b", source: Self.people, destination: Self.cards, mapping: mapping)
        let coordinator = PersistentStoreCoordinator(store: source)
        let message: String
        do {
            _ = try coordinator.migrateModel(into: GraphStore(model: Self.cards), steps: [step])
            message = "the custom policy ran"
        } catch {
            message = "\(error)"
        }
        #expect(message.contains("custom migration policy App.PersonPolicy"), "\(message)")
        #expect(source.requestCount == before, "nothing was read")
        let plain = EntityMapping(
            name: "PersonToCard", kind: .transform, sourceEntityName: "Person", destinationEntityName: "Card",
            migrationPolicyClassName: "NSEntityMigrationPolicy")
        #expect(!plain.hasCustomPolicy, "Core Data's own policy is no custom code")
    }

    // MARK: - Plans

    static func versions() throws -> ModelVersions {
        // A bundle's versions without files: Base, then ToOneToMany, then Reordered (names order them).
        var set = ModelVersions(single: try rule("Base"), name: "V1", source: "test")
        set.versions.append(
            .init(name: "V2", model: try rule("Added"), hashes: VersionHash.entityHashes(of: try rule("Added"))))
        set.versions.append(
            .init(
                name: "V3", model: try rule("ChangedType"),
                hashes: VersionHash.entityHashes(of: try rule("ChangedType"))))
        set.currentName = "V2"
        return set
    }

    @Test func aPlanFindsTheStoresVersionByItsHashes() throws {
        let base = try Self.rule("Base")
        let plan = try MigrationPlan.make(
            storeModel: base, storeModelSource: .inferred, recordedHashes: VersionHash.entityHashes(of: base),
            target: try Self.versions(),
            mappings: [], store: "S")
        #expect(plan.storeVersion == "V1" && plan.steps.map(\.description) == ["V1 → V2: lightweight"])
        let atCurrent = try MigrationPlan.make(
            storeModel: try Self.rule("Added"), storeModelSource: .keptByStoreFS, recordedHashes: nil,
            target: try Self.versions(),
            mappings: [], store: "S")
        #expect(!atCurrent.isNeeded)
    }

    @Test func aPlanRefusesWhatItCannotDo() throws {
        var versions = try Self.versions()
        versions.currentName = "V3"
        let base = try Self.rule("Base")
        let added = try Self.rule("Added")
        let renamed = try Self.rule("Renamed")
        let changesType = Self.failure {
            _ = try MigrationPlan.make(
                storeModel: base, storeModelSource: .inferred, recordedHashes: VersionHash.entityHashes(of: base),
                target: versions,
                mappings: [], store: "S")
        }
        #expect(changesType?.contains("V2 → V3") == true, "\(changesType ?? "planned")")
        versions.currentName = "V1"
        let newer = Self.failure {
            _ = try MigrationPlan.make(
                storeModel: added, storeModelSource: .coreDataCache, recordedHashes: nil, target: versions,
                mappings: [], store: "S")
        }
        #expect(newer?.contains("forward only") == true, "\(newer ?? "planned")")
        let unknown = Self.failure {
            _ = try MigrationPlan.make(
                storeModel: renamed, storeModelSource: .inferred, recordedHashes: [:], target: versions, mappings: [],
                store: "S")
        }
        #expect(unknown?.contains("--source-model") == true, "\(unknown ?? "planned")")
        let stray = MappingModel(
            source: "Stray.cdm",
            entityMappings: [
                EntityMapping(
                    name: "X", kind: .transform, sourceEntityName: "Nope", destinationEntityName: "Nope",
                    sourceEntityVersionHash: Data([1]),
                    destinationEntityVersionHash: Data([2]))
            ])
        versions.currentName = "V2"
        let unused = Self.failure {
            _ = try MigrationPlan.make(
                storeModel: base, storeModelSource: .inferred, recordedHashes: VersionHash.entityHashes(of: base),
                target: versions,
                mappings: [stray], store: "S")
        }
        #expect(unused?.contains("Stray.cdm fits no step") == true, "\(unused ?? "planned")")
    }

    /// Two mapping models given for one step: the plan names both and the step, not "fits no
    /// step" for the second.
    @Test func twoMappingModelsForOneStepAreNamedWithTheStep() throws {
        let versions = try Self.versions()
        let base = try Self.rule("Base")
        let from = VersionHash.entityHashes(of: base)
        let to = VersionHash.entityHashes(of: try Self.rule("Added"))
        let name = try #require(from.keys.sorted().first { to[$0] != nil })
        func mapping(_ source: String) -> MappingModel {
            MappingModel(
                source: source,
                entityMappings: [
                    EntityMapping(
                        name: name, kind: .transform, sourceEntityName: name, destinationEntityName: name,
                        sourceEntityVersionHash: from[name], destinationEntityVersionHash: to[name])
                ])
        }
        let plan = try MigrationPlan.make(
            storeModel: base, storeModelSource: .inferred, recordedHashes: from, target: versions,
            mappings: [mapping("First.cdm")], store: "S")
        #expect(plan.steps.map(\.mapping.source) == ["First.cdm"], "one fits the step")
        let both = Self.failure {
            _ = try MigrationPlan.make(
                storeModel: base, storeModelSource: .inferred, recordedHashes: from, target: versions,
                mappings: [mapping("First.cdm"), mapping("Second.cdm")], store: "S")
        }
        #expect(
            both?.contains("First.cdm and Second.cdm both fit the step V1 → V2") == true, "\(both ?? "planned")")
        #expect(both?.contains("fits no step") == false)
    }

    @Test func historyMappingsCompose() {
        let a = EntityID(1), b = EntityID(2), c = EntityID(3)
        let first = HistoryMapping(
            objects: [ObjectID(entity: a, key: PrimaryKey(1)): ObjectID(entity: b, key: PrimaryKey(7))],
            entities: [a: b],
            properties: [a: ["name": "title"]])
        let second = HistoryMapping(objects: [:], entities: [b: c], properties: [b: ["title": "heading"]])
        let both = first.then(second)
        #expect(both.entities == [a: c])
        #expect(both.properties[a] == ["name": "heading"])
        #expect(both.object(ObjectID(entity: a, key: PrimaryKey(1))) == ObjectID(entity: c, key: PrimaryKey(7)))
        #expect(
            both.object(ObjectID(entity: a, key: PrimaryKey(9))) == ObjectID(entity: c, key: PrimaryKey(9)),
            "a deleted object keeps its key")
    }
}

/// Mapping model files are input: truncated and mutated ones give errors, never a crash.
@Suite struct HostileMappingModelTests {
    static let compiled = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/migration/wibosco/Migration2to3WithoutPolicy.cdm").standardizedFileURL

    @Test func theCompiledFixtureDecodes() throws {
        let mapping = try CompiledMappingModelDecoder.decode(try Data(contentsOf: Self.compiled), source: "fixture")
        #expect(mapping.entityMappings.map(\.name) == ["PostToColor", "PostToPost"])
        #expect(
            mapping.entityMappings.allSatisfy {
                $0.sourceEntityVersionHash?.count == 32 && $0.filterPredicate == "TRUEPREDICATE"
            })
        let color = try #require(mapping.entityMappings.first)
        #expect(
            color.attributeMappings.first { $0.name == "hex" }?.valueExpression
                == .variable("source", keyPath: ["hexColor"]))
    }

    @Test func everyTruncationAndManyMutationsAreErrorsNotCrashes() throws {
        let data = try Data(contentsOf: Self.compiled)
        var outcomes = (decoded: 0, refused: 0)
        func attempt(_ bytes: Data) {
            do {
                _ = try CompiledMappingModelDecoder.decode(bytes, source: "mutated")
                outcomes.decoded += 1
            } catch {
                outcomes.refused += 1
            }
        }
        for length in stride(from: 0, to: data.count, by: max(1, data.count / 500)) { attempt(data.prefix(length)) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var bytes = [UInt8](data)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            attempt(Data(bytes))
        }
        #expect(outcomes.refused > 0 && outcomes.decoded + outcomes.refused > 2_000)
    }

    /// Every kept input that once broke the round trip (Tests/Fixtures/hostile/mapping-model):
    /// what parses prints as text that parses back to the same expression.
    @Test(arguments: HostileInputs.names(in: "mapping-model"))
    func keptHostileExpressionsPrintAsTheyParse(name: String) throws {
        let text = String(decoding: try Data(contentsOf: HostileInputs.url("mapping-model", name)), as: UTF8.self)
        let expression = try MappingExpression.parse(text)
        #expect(try MappingExpression.parse(expression.description) == expression, "\(expression)")
    }

    @Test func randomExpressionTextIsParsedOrRefused() {
        let alphabet = Array("$source.(),\"'FUNCTION:add:to:{}@count 0123456789-+eE#nilYES\\u")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let text = String(
                (0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            if let expression = try? MappingExpression.parse(text) {
                #expect((try? MappingExpression.parse(expression.description)) == expression, "\(text)")
            }
        }
    }
}
