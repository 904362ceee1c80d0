import Foundation
import GRDB
import ObjectGraph
import Testing

@testable import SQLiteStore

/// A commit the store reports as made is on the disk: the connection that commits syncs every
/// commit (`synchronous = FULL`), in WAL stores as in rollback-journal ones. With GRDB's default
/// for WAL pools (NORMAL), a commit reaches the disk only at the next checkpoint, and the
/// power-loss trials (scripts/power-loss, docs/RELIABILITY.md) lost every fsync'd write since the
/// mount.
@Suite struct DurabilityTests {
    typealias F = Fixtures

    /// SQLite's own answer for the connection that saves, after a save through it.
    func synchronousOfTheSavingConnection(_ store: SQLiteStore) throws -> Int? {
        let coordinator = PersistentStoreCoordinator(store: store)
        let context = coordinator.newContext()
        let item = try context.insertObject(of: F.item)
        try context.setValue(.string("kept"), of: F.attributeName(.string), for: item)
        let saved = context.save(holding: [])
        #expect(saved.saved.contains(item), "the save went through")
        return try store.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
    }

    @Test func aWALStoreSyncsEveryCommit() throws {
        let (store, url) = try F.newStore()
        defer { store.close() }
        #expect(try F.sqlite3(url, "PRAGMA journal_mode") == ["wal"])
        #expect(try synchronousOfTheSavingConnection(store) == 2, "2 is FULL; GRDB's WAL default is 1, NORMAL")
    }

    @Test func aRollbackJournalStoreSyncsEveryCommit() throws {
        let (created, url) = try F.newStore()
        created.close()
        try F.sqlite3Write(url, "PRAGMA journal_mode = DELETE;")
        let store = try F.open(url)
        defer { store.close() }
        #expect(try synchronousOfTheSavingConnection(store) == 2)
        #expect(try F.sqlite3(url, "PRAGMA journal_mode") == ["delete"], "the store keeps its journal")
    }
}
