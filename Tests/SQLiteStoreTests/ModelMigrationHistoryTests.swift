import Decoding
import Foundation
import GRDB
import ObjectGraph
import TestSupport
import Testing

@testable import SQLiteStore

/// What a model migration writes into a SQLite store beyond the objects: Core Data's persistent
/// history carried across (transactions kept by number, changes renamed to the new model), the
/// model cache, the version hashes.
@Suite struct ModelMigrationHistoryTests {
    /// SwiftData's store of the corpus (38 history transactions) migrated in place to a model that
    /// adds an entity (every Z_ENT moves), renames Item.name to title by its renaming identifier
    /// and adds an attribute: every transaction stays with its number, every change follows its
    /// object, updates name the renamed property, and the next save continues the history.
    @Test func persistentHistoryIsCarriedAcrossAModelMigration() throws {
        let store = try Fixtures.corpusCopy("sergd2005_ResourcesManager_default.store")
        let old = try PersistentStoreCoordinator.open(
            at: store, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        let oldModel = old.model
        let oldHistory = try (old.store as! SQLiteStore).persistentHistory()
        old.close()
        #expect(oldHistory.count == 38)

        var entities = oldModel.entities.map { entity -> EntityDescription in
            var copy = EntityDescription(
                name: entity.name, parentName: entity.parentName, isAbstract: entity.isAbstract,
                representedClassName: entity.representedClassName, attributes: entity.attributes,
                relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints)
            if entity.name == "Item" {
                copy.attributes = copy.attributes.map { attribute in
                    guard attribute.name == "name" else { return attribute }
                    var renamed = attribute
                    renamed.name = "title"
                    renamed.renamingIdentifier = "name"
                    return renamed
                }
                copy.uniquenessConstraints = [["title"]]
            }
            if entity.name == "CraftingRecipe" {
                copy.attributes.append(AttributeDescription(name: "notes", type: .string))
            }
            return copy
        }
        entities.append(
            EntityDescription(name: "Aardvark", attributes: [AttributeDescription(name: "size", type: .integer32)]))
        let newModel = try ManagedObjectModel(entities: entities)
        let mapping = try MappingModel.inferred(from: oldModel, to: newModel)
        let result = try PersistentStoreCoordinator.migrateInPlace(
            at: store, types: [SQLiteStoreType()],
            plan: { _ throws(ObjectGraphError) in
                [MigrationStep(from: "1", to: "2", source: oldModel, destination: newModel, mapping: mapping)]
            })
        #expect(result.historyTransactions == 38)

        let new = try PersistentStoreCoordinator.open(at: store, types: [SQLiteStoreType()], model: newModel)
        defer { new.close() }
        let newHistory = try (new.store as! SQLiteStore).persistentHistory()
        #expect(newHistory.map(\.number) == oldHistory.map(\.number))
        for (before, after) in zip(oldHistory, newHistory) {
            #expect(
                after.timestamp == before.timestamp && after.author == before.author
                    && after.bundleID == before.bundleID)
            #expect(after.changes.count == before.changes.count, "transaction \(before.number)")
            for (a, b) in zip(before.changes, after.changes) {
                #expect(a.changeID == b.changeID && a.kind == b.kind && a.objectID.key == b.objectID.key)
                #expect(
                    oldModel[a.objectID.entity].name == newModel[b.objectID.entity].name,
                    "change \(a.changeID) follows its entity")
                let renamed = a.updatedProperties.map { name in
                    oldModel[a.objectID.entity].name == "Item" && name == "name" ? "title" : name
                }
                #expect(b.updatedProperties == renamed, "change \(a.changeID)")
            }
        }
        #expect(
            newHistory.contains { $0.changes.contains { $0.updatedProperties.contains("title") } },
            "a rename shows in the history")
        // Entity numbers moved (Aardvark is entity 1 now) and the changes' ZENTITY with them.
        #expect(newModel.entityID(named: "Aardvark")?.rawValue == 1)

        // The history goes on: the next save appends transaction 39.
        let context = new.newContext()
        let item = try #require(try context.objectIDs(of: newModel.entityID(named: "Item")!).first)
        try context.setValue(.string("renamed by storefs"), of: "title", for: item)
        try context.save()
        let continued = try (new.store as! SQLiteStore).persistentHistory(after: 38)
        #expect(continued.map(\.number) == [39])
        #expect(continued.first?.changes.first?.updatedProperties == ["title"])
    }

    /// The cache storefs writes (Z_MODELCACHE) reads back as the model: for every model in the
    /// corpus (Xcode models and the models Core Data cached), the decoded cache has the same
    /// entities, properties and version hashes.
    @Test(arguments: Self.corpusModels())
    func writtenModelCacheReadsBackAsTheModel(_ name: String) throws {
        let model = try Self.model(named: name)
        let derived = model.entities.flatMap(\.attributes).filter { $0.derivationExpression != nil }
        guard let archive = CompiledModelEncoder.encode(model) else {
            // Core Data hashes derivations, which the cache does not carry: no cache at all.
            #expect(!derived.isEmpty, "\(name): only a model with a derived attribute gets no cache")
            return
        }
        #expect(derived.isEmpty, "\(name): a model with a derived attribute gets no cache")
        let inflated = try RawInflate.inflate(RawDeflate.stored(archive), limit: 64 << 20)
        #expect(inflated == archive)
        let decoded = try CompiledModelLoader.decode(archive: archive, source: name).model
        #expect(VersionHash.entityHashes(of: decoded) == VersionHash.entityHashes(of: model), "\(name)")
        for entity in model.entities {
            let other = try #require(decoded.entity(named: entity.name))
            #expect(other.parentName == entity.parentName && other.isAbstract == entity.isAbstract)
            for attribute in entity.attributes {
                let read = other.attribute(named: attribute.name)
                #expect(
                    read?.type == attribute.type && read?.isOptional == attribute.isOptional
                        && read?.defaultValue == attribute.defaultValue,
                    "\(name): \(entity.name).\(attribute.name)")
            }
            for relationship in entity.relationships {
                let read = other.relationship(named: relationship.name)
                #expect(read == relationship, "\(name): \(entity.name).\(relationship.name)")
            }
        }
    }

    static func corpusModels() -> [String] {
        let models = Corpus.names(in: "models").filter { !$0.hasPrefix("<") }.map { "models/" + $0 }
        let stores = [
            "sqlite/RhetTbull_merge_photos_libraries_Photos.sqlite",
            "sqlite/RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite",
            "sqlite/alemar11_CoreDataPlus_SampleModel2_V1.sqlite", "sqlite/sergd2005_ResourcesManager_default.store"
        ]
        return models + stores
    }

    static func model(named name: String) throws -> ManagedObjectModel {
        if name.hasPrefix("models/") { return try ModelLoader.load(from: Corpus.url(name)).model }
        let copy = try Fixtures.corpusCopy(String(name.dropFirst("sqlite/".count)))
        let coordinator = try PersistentStoreCoordinator.open(
            at: copy, types: [SQLiteStoreType()], options: StoreOptions(readOnly: true))
        defer { coordinator.close() }
        return coordinator.model
    }

    /// The cache storefs writes for wibosco's version 3 has the shape of the one Core Data wrote
    /// for it (store 3 of the corpus): the same classes, the same keys with the same values,
    /// object by object from the root, apart from what this store's app left out or added
    /// (its class names, two empty index lists).
    @Test func writtenModelCacheHasTheShapeOfCoreDatas() throws {
        let store = try Fixtures.corpusCopy("wibosco_CoreDataMigration-Example_CoreDataMigration_Example_3.sqlite")
        let blob = try DatabaseQueue(path: store.path).read { db in
            try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")!
        }
        let theirs = try KeyedArchive(data: try RawInflate.inflate(blob, limit: 64 << 20), source: "Core Data's cache")
        let model = try ModelLoader.load(
            from: Corpus.url(
                "models/wibosco_CoreDataMigration-Example_CoreDataMigration_Example.xcdatamodeld/CoreDataMigration_Example 3.xcdatamodel"
            )
        ).model
        let ours = try KeyedArchive(data: try #require(CompiledModelEncoder.encode(model)), source: "storefs's cache")
        var differences: [String] = []
        var visited: Set<[Int]> = []
        try compare(
            theirs.topObject("root"), ours.topObject("root"), path: "root", visited: &visited, differences: &differences
        )
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
        #expect(visited.count > 20, "the walk reached the entities and their properties")
    }

    static let ignoredKeys: Set<String> = ["NSClassNameForEntity", "NSFetchIndexDescriptions", "NSCompoundIndexes"]

    private func compare(
        _ a: ArchivedObject, _ b: ArchivedObject, path: String, visited: inout Set<[Int]>, differences: inout [String]
    ) throws {
        guard visited.insert([a.uid, b.uid]).inserted else { return }
        guard a.className == b.className else {
            differences.append("\(path): \(a.className ?? "value") vs \(b.className ?? "value")")
            return
        }
        guard case .dictionary(let left) = a.value, case .dictionary(let right) = b.value else {
            if a.value != b.value { differences.append("\(path): \(a.value) vs \(b.value)") }
            return
        }
        func keys(_ entries: [(key: PropertyListValue, value: PropertyListValue)]) -> Set<String> {
            Set(entries.compactMap { $0.key.string }).subtracting(Self.ignoredKeys).subtracting(["$class"])
        }
        if keys(left) != keys(right) {
            differences.append("\(path): keys \(keys(left).sorted()) vs \(keys(right).sorted())")
        }
        // Dictionaries by key, the rest key by key.
        if a.isKind(of: "NSDictionary"), !a.isKind(of: "NSKnownKeysDictionary") {
            let x = Dictionary(uniqueKeysWithValues: try a.entries().map { ($0.key, $0.value) })
            let y = Dictionary(uniqueKeysWithValues: try b.entries().map { ($0.key, $0.value) })
            if Set(x.keys) != Set(y.keys) {
                differences.append("\(path): entries \(x.keys.sorted()) vs \(y.keys.sorted())")
            }
            for key in Set(x.keys).intersection(y.keys).sorted() {
                try compare(x[key]!, y[key]!, path: "\(path)[\(key)]", visited: &visited, differences: &differences)
            }
            return
        }
        for key in keys(left).intersection(keys(right)).sorted()
        where key != "NS.keys" && key != "NS.objects" || a.isKind(of: "NSArray") || a.isKind(of: "NSSet") {
            switch (a[key], b[key]) {
            case (.array(let xs)?, .array(let ys)?):
                guard xs.count == ys.count else {
                    differences.append("\(path).\(key): \(xs.count) vs \(ys.count) items")
                    continue
                }
                for (index, (x, y)) in zip(xs, ys).enumerated() {
                    if case .uid(let u) = x, case .uid(let v) = y, let p = try a.archive.object(u),
                        let q = try b.archive.object(v)
                    {
                        try compare(
                            p, q, path: "\(path).\(key)[\(index)]", visited: &visited, differences: &differences)
                    } else if x != y {
                        differences.append("\(path).\(key)[\(index)]: \(x) vs \(y)")
                    }
                }
            case (.uid(let u)?, .uid(let v)?):
                let p = try a.archive.object(u)
                let q = try b.archive.object(v)
                switch (p, q) {
                case (nil, nil): continue
                case (let p?, let q?):
                    try compare(p, q, path: "\(path).\(key)", visited: &visited, differences: &differences)
                default:
                    differences.append(
                        "\(path).\(key): \(p == nil ? "$null" : "an object") vs \(q == nil ? "$null" : "an object")")
                }
            case (let x?, let y?):
                if x != y { differences.append("\(path).\(key): \(x) vs \(y)") }
            default: continue
            }
        }
    }
}
