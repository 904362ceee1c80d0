import Foundation
import GRDB
import ObjectGraph
import SQLiteStore
import Testing

/// The corpus's real Notes store (macOS 14), with notes deleted as the app deletes them: the
/// note's row (ICNote, in ZICCLOUDSYNCINGOBJECT) and its body (ICNoteData, in ZICNOTEDATA), in one
/// transaction. Read back with the store's own model (its Z_MODELCACHE), the deleted notes are
/// recovered ICNotes with their titles, and nothing is recovered that the store never held.
@Suite struct NotesRecoveryTests {
    static let store = "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    static let deletedTitles = ["This note is in a folder", "This note has special formatting"]

    /// Deletes the notes titled ``deletedTitles``; returns the copy of the files to read, with
    /// the log kept or checkpointed into the database.
    static func deleteNotes(keepingLog: Bool) throws -> URL {
        let url = try RecoveryFixtures.copy(store)
        let queue = try RecoveryFixtures.writer(url)
        try queue.write { db in
            for title in deletedTitles {
                guard
                    let key = try Int64.fetchOne(
                        db, sql: "SELECT Z_PK FROM ZICCLOUDSYNCINGOBJECT WHERE Z_ENT = 11 AND ZTITLE1 = ?",
                        arguments: [title])
                else { throw SQLiteStoreTestError("the corpus's Notes store has no note titled \(title)") }
                try db.execute(sql: "DELETE FROM ZICNOTEDATA WHERE ZNOTE = ?", arguments: [key])
                try db.execute(sql: "DELETE FROM ZICCLOUDSYNCINGOBJECT WHERE Z_PK = ?", arguments: [key])
            }
        }
        if !keepingLog {
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        let evidence = try RecoveryFixtures.snapshotFiles(of: url)
        try queue.close()
        return evidence
    }

    @Test(arguments: [true, false])
    func deletedNotesAreRecoveredWithTheirTitles(keepingLog: Bool) throws {
        let url = try Self.deleteNotes(keepingLog: keepingLog)
        let (store, recovered) = try RecoveryFixtures.recovered(url)
        defer { store.close() }
        let note = try #require(store.model.entityID(named: "ICNote"))
        var titles: [String] = []
        for index in recovered.indexes(of: note) {
            let values = try recovered.values(of: index)
            if case .string(let title)? = values.attributes["title"] { titles.append(title) }
        }
        for title in Self.deletedTitles {
            #expect(titles.contains(title), "keepingLog \(keepingLog): \(title) not among \(titles)")
        }
        let records = recovered.indexes(of: note).map { recovered.records[$0] }
        #expect(records.allSatisfy { !$0.sources.isEmpty })
        // With the log kept, the notes' rows are whole (their keys too) in the database file's pages
        // the log replaced; once checkpointed, free blocks keep them without their keys.
        if keepingLog { #expect(records.contains { $0.live == .deleted && $0.key != nil }) }
    }
}

struct SQLiteStoreTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
