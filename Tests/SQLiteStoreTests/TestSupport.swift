import Foundation
import TestSupport
import GRDB
import ObjectGraph
import SQLiteStore

/// Shared fixtures: a model covering every attribute type and relationship kind, temp folders,
/// and the `sqlite3` command-line tool as an independent reader.
enum Fixtures {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let corpus = Corpus.directory

    /// Item(1) ← SpecialItem(2); Owner(3); Tag(4).
    /// Item.owner ↔ Owner.items (ordered one-to-many), Item.tags ↔ Tag.items (many-to-many,
    /// ordered on Tag's side), Owner.favorite → Item (a to-one whose destination has subentities).
    static func model() throws -> ManagedObjectModel {
        let attributes = AttributeType.allCases.filter { $0 != .objectID && $0 != .undefined }.map {
            AttributeDescription(name: attributeName($0), type: $0)
        }
        return try ManagedObjectModel(
            entities: [
                EntityDescription(
                    name: "Item",
                    attributes: attributes + [AttributeDescription(name: "scratch", type: .string, isTransient: true)],
                    relationships: [
                        RelationshipDescription(name: "owner", destinationEntityName: "Owner", inverseName: "items"),
                        RelationshipDescription(
                            name: "tags", destinationEntityName: "Tag", inverseName: "items", isToMany: true)
                    ]),
                EntityDescription(
                    name: "SpecialItem", parentName: "Item",
                    attributes: [AttributeDescription(name: "extra", type: .string)]),
                EntityDescription(
                    name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
                    relationships: [
                        RelationshipDescription(
                            name: "items", destinationEntityName: "Item", inverseName: "owner", isToMany: true,
                            isOrdered: true),
                        RelationshipDescription(name: "favorite", destinationEntityName: "Item")
                    ]),
                EntityDescription(
                    name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
                    relationships: [
                        RelationshipDescription(
                            name: "items", destinationEntityName: "Item", inverseName: "tags", isToMany: true,
                            isOrdered: true)
                    ])
            ], versionIdentifier: "7")
    }

    static func attributeName(_ type: AttributeType) -> String {
        "v" + type.rawValue.replacingOccurrences(of: " ", with: "")
    }

    static let item = EntityID(1), special = EntityID(2), owner = EntityID(3), tag = EntityID(4)

    /// A new folder, removed with the rest of the test process's scratch space when it exits.
    static func temporaryDirectory() throws -> URL {
        try ScratchSpace.folder("sqlitestore")
    }

    static func newStore(_ metadata: StoreMetadata = StoreMetadata()) throws -> (SQLiteStore, URL) {
        let url = try temporaryDirectory().appendingPathComponent("Test.sqlite")
        let store = try SQLiteStoreType().open(
            at: url, model: model(), options: StoreOptions(createIfMissing: true), initialMetadata: metadata)
        return (store as! SQLiteStore, url)
    }

    static func open(_ url: URL, model: ManagedObjectModel? = nil, readOnly: Bool = false) throws -> SQLiteStore {
        try SQLiteStoreType().open(
            at: url, model: model, options: StoreOptions(readOnly: readOnly), initialMetadata: StoreMetadata())
            as! SQLiteStore
    }

    /// Runs `sqlite3 -batch FILE SQL` and returns its output lines.
    static func sqlite3(_ file: URL, _ sql: String) throws -> [String] {
        let result = try runTool("sqlite3", ["-batch", "-readonly", file.path, sql])
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Runs `sqlite3 -batch FILE SQL` allowed to write (to damage a copy on purpose).
    @discardableResult
    static func sqlite3Write(_ file: URL, _ sql: String) throws -> [String] {
        let result = try runTool("sqlite3", ["-batch", "-bail", file.path], input: Data(sql.utf8))
        guard result.status == 0, result.error.isEmpty else {
            throw ObjectGraphError(.io, "sqlite3 failed (\(result.status)): \(result.error)")
        }
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Runs `sql` on the file as another process writing to it would.
    static func sqlite3Writing(_ file: URL, _ sql: String) throws -> [String] {
        let result = try runTool("sqlite3", ["-batch", "-cmd", ".timeout 5000", file.path, sql])
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Copies a corpus store (with its -wal) into a fresh temp folder.
    static func corpusCopy(_ name: String) throws -> URL {
        try Corpus.copy(sqlite: name, into: temporaryDirectory())
    }
}
