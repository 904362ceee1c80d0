import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// A copy of a real corpus store opened by the engine as storefs opens it (the model from its
/// Z_MODELCACHE, a context that saves change groups), and `sqlite3` as an independent reader.
final class CorpusStore {
    let url: URL
    let coordinator: PersistentStoreCoordinator
    let context: ObjectContext
    private(set) var isOpen = true

    var store: SQLiteStore { coordinator.store as! SQLiteStore }
    var model: ManagedObjectModel { coordinator.model }

    /// Copies corpus store `name` (with its -wal), lets `prepare` change the copy, and opens it.
    convenience init(
        _ name: String, readOnly: Bool = false, model: ManagedObjectModel? = nil, prepare: ((URL) throws -> Void)? = nil
    ) throws {
        let url = try Fixtures.corpusCopy(name)
        try prepare?(url)
        try self.init(existing: url, readOnly: readOnly, model: model)
    }

    /// Opens a store file that is a copy already.
    init(existing url: URL, readOnly: Bool = false, model: ManagedObjectModel? = nil) throws {
        self.url = url
        coordinator = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(readOnly: readOnly))
        context = coordinator.newContext()
    }

    deinit { close() }

    func close() {
        guard isOpen else { return }
        isOpen = false
        coordinator.close()
    }

    func entity(_ name: String) throws -> EntityID {
        try #require(model.entityID(named: name), "\(name) is an entity of the store's model")
    }

    func id(_ entity: String, _ key: Int64) throws -> ObjectID {
        ObjectID(entity: try self.entity(entity), key: PrimaryKey(key))
    }

    /// Saves every pending change group and fails the test unless all of them were saved.
    @discardableResult
    func save(sourceLocation: SourceLocation = #_sourceLocation) -> SaveOutcome {
        let outcome = context.save(holding: [])
        #expect(outcome.failed.isEmpty, "\(outcome.failed.values.map(\.message))", sourceLocation: sourceLocation)
        #expect(outcome.conflicts.isEmpty, sourceLocation: sourceLocation)
        #expect(outcome.storeError == nil, "\(outcome.storeError?.message ?? "")", sourceLocation: sourceLocation)
        return outcome
    }

    /// `sqlite3 -readonly` on the store file: what any other reader sees.
    func sql(_ query: String) throws -> [String] { try Fixtures.sqlite3(url, query) }

    /// The single value a query returns, as text.
    func value(_ query: String) throws -> String { try sql(query).first ?? "" }

    func integrityCheck() throws -> [String] { try sql("PRAGMA integrity_check") }

    /// Z_OPT of a row.
    func version(_ table: String, _ key: Int64) throws -> Int {
        Int(try value("SELECT Z_OPT FROM \(table) WHERE Z_PK = \(key)")) ?? -1
    }

    /// Inserts an object of `entity` as `mkdir` does: the model's defaults, and the type's zero
    /// value for mandatory attributes that have none.
    func insert(_ entity: String, values: [String: AttributeValue] = [:]) throws -> ObjectID {
        let id = try context.insertObject(of: try self.entity(entity))
        for (name, value) in values { try context.setValue(value, of: name, for: id) }
        for attribute in model[id.entity].persistentAttributes
        where !attribute.isOptional && attribute.defaultValue == nil {
            if attribute.derivationExpression != nil || values[attribute.name] != nil { continue }
            let zero: AttributeValue? =
                switch attribute.type {
                case .integer16, .integer32, .integer64: .integer(0)
                case .double: .double(0)
                case .float: .float(0)
                case .decimal: .decimal(0)
                case .boolean: .boolean(false)
                case .string, .uri: .string("")
                case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
                case .binaryData, .transformable: .data(Data())
                case .uuid: .uuid(UUID())
                default: nil
                }
            if let zero { try context.setValue(zero, of: attribute.name, for: id) }
        }
        return id
    }

    /// The persistent history's last transaction number (0 without history).
    func lastTransaction() throws -> Int64 {
        try store.persistentHistory().last?.number ?? 0
    }

    /// Rows of every to-one key column of the store that name no row of the destination's table,
    /// read through the model: "Entity.relationship of pN names pM, which does not exist".
    func danglingKeys() throws -> [String] {
        var found: [String] = []
        let reader = try PersistentStoreCoordinator.open(
            at: url, types: [SQLiteStoreType()], model: model, options: StoreOptions(readOnly: true))
        defer { reader.close() }
        let context = reader.newContext()
        for entity in model.entities {
            let relationships = entity.persistentRelationships
            guard !relationships.isEmpty else { continue }
            let ids = try context.objectIDs(of: entity.id)
            try context.prefetch(ids)
            for id in ids {
                for relationship in relationships {
                    let destinations =
                        relationship.isToMany
                        ? try context.destinations(of: relationship.name, for: id)
                        : (try context.destination(of: relationship.name, for: id)).map { [$0] } ?? []
                    for destination in destinations where try !context.exists(destination) {
                        found.append(
                            "\(entity.name).\(relationship.name) of p\(id.key) names \(destination), which does not exist"
                        )
                    }
                }
            }
        }
        return found + (try danglingJoinRows())
    }

    /// Join-table rows naming a row that does not exist (reading through the engine joins them
    /// away, so they are counted in SQL): a column `Z_<n>NAME` holds keys of entity n's tree.
    func danglingJoinRows() throws -> [String] {
        var supers: [Int: (name: String, parent: Int)] = [:]
        for line in try sql("SELECT Z_ENT || '|' || Z_NAME || '|' || IFNULL(Z_SUPER, 0) FROM Z_PRIMARYKEY") {
            let parts = line.split(separator: "|").map(String.init)
            if parts.count == 3, let ent = Int(parts[0]), let parent = Int(parts[2]) {
                supers[ent] = (parts[1], parent)
            }
        }
        func rootTable(_ ent: Int) -> String? {
            var current = ent
            var steps = 0
            while let entry = supers[current], entry.parent != 0, steps < 100 {
                current = entry.parent
                steps += 1
            }
            return supers[current].map { "Z" + $0.name.uppercased() }
        }
        var found: [String] = []
        let tables = try sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z\\_%' ESCAPE '\\' "
                + "AND name NOT IN ('Z_PRIMARYKEY', 'Z_METADATA', 'Z_MODELCACHE')")
        for table in tables {
            let columns = try sql("SELECT name FROM pragma_table_info('\(table)')")
            let keys = columns.filter { !$0.uppercased().hasPrefix("Z_FOK_") }
            for column in keys {
                var ent: Int?
                if column.uppercased() == "REFLEXIVE" {
                    ent = keys.first { $0 != column }.flatMap { Int($0.dropFirst(2).prefix { $0.isNumber }) }
                } else if column.hasPrefix("Z_") {
                    ent = Int(column.dropFirst(2).prefix { $0.isNumber })
                }
                guard let ent, let root = rootTable(ent) else { continue }
                let count = try value("SELECT COUNT(*) FROM \(table) WHERE \(column) NOT IN (SELECT Z_PK FROM \(root))")
                if count != "0" { found.append("\(count) rows of \(table).\(column) name no row of \(root)") }
            }
        }
        return found
    }
}
