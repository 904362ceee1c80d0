import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Reading persistent history back through ``PersistentHistoryStore``: pages of any size list
/// every transaction of the corpus stores in order, with the names, changes and counts `sqlite3`
/// reads from the same rows, at two store requests a page.
@Suite struct HistoryReadingTests {
    static let stores = [
        PersistentHistoryTests.notes13, PersistentHistoryTests.notes14, PersistentHistoryTests.photos,
        PersistentHistoryTests.swiftData,
        PersistentHistoryTests.sampleModel2
    ]

    @Test(arguments: stores)
    func pagesListEveryTransactionAsSQLiteHoldsIt(store: String) throws {
        let s = try CorpusStore(store, readOnly: true)
        #expect(s.store.keepsPersistentHistory)
        let all = try s.store.persistentHistory()
        // The same rows read by sqlite3: number, the four names, and the number of changes.
        let expected = try s.sql(
            """
            SELECT t.Z_PK || '|' || IFNULL(a.ZNAME, '-') || '|' || IFNULL(b.ZNAME, '-') || '|' || IFNULL(c.ZNAME, '-') || '|'
                || IFNULL(p.ZNAME, '-') || '|' || (SELECT COUNT(*) FROM ACHANGE WHERE ZTRANSACTIONID = t.Z_PK)
            FROM ATRANSACTION t LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS
            LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS LEFT JOIN ATRANSACTIONSTRING c ON c.Z_PK = t.ZCONTEXTNAMETS
            LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS ORDER BY t.Z_PK
            """)
        let read = all.map { t in
            [
                String(t.number), t.author ?? "-", t.bundleID ?? "-", t.contextName ?? "-", t.processID ?? "-",
                String(t.changes.count)
            ]
            .joined(separator: "|")
        }
        #expect(read == expected)
        #expect(!all.isEmpty && all.allSatisfy { $0.changes.map(\.changeID) == $0.changes.map(\.changeID).sorted() })

        for size in [1, 7, 500] {
            var pages: [HistoryTransaction] = []
            var bare: [HistoryTransaction] = []
            var after: Int64 = 0
            while true {
                let before = s.store.requestCount
                let page = try s.store.historyTransactions(after: after, limit: size, includingChanges: true)
                #expect(s.store.requestCount - before <= 2, "a page with its changes is two requests")
                let headers = try s.store.historyTransactions(after: after, limit: size, includingChanges: false)
                guard let last = page.last else { break }
                #expect(page.count <= size)
                pages += page
                bare += headers
                after = last.number
            }
            #expect(pages == all, "pages of \(size)")
            #expect(
                bare
                    == all.map {
                        var t = $0; t.changes = []; return t
                    }, "pages of \(size) without their changes")
        }
        for transaction in all.prefix(40) {
            #expect(try s.store.historyTransaction(transaction.number) == transaction)
        }
        let last = try #require(all.last).number
        for missing in [0, -1, last + 1, .max, .min] as [Int64] {
            #expect(try s.store.historyTransaction(missing) == nil, "transaction \(missing)")
        }
        #expect(try s.store.historyTransactions(after: .max, limit: 10, includingChanges: true).isEmpty)
        #expect(
            try s.store.historyTransactions(after: .min, limit: 1, includingChanges: false).map(\.number) == [
                all[0].number
            ])
        #expect(try s.store.historyTransactions(after: 0, limit: 0, includingChanges: true).isEmpty)
        #expect(try s.store.historyTransactions(after: 0, limit: -5, includingChanges: true).isEmpty)
    }

    /// The names some releases kept in plain columns (`ZAUTHOR`, …) are read where the interned
    /// ones are missing.
    @Test func plainNameColumnsStandInForMissingInternedOnes() throws {
        let s = try CorpusStore(PersistentHistoryTests.swiftData, readOnly: true) { url in
            try Fixtures.sqlite3Write(
                url,
                "UPDATE ATRANSACTION SET ZAUTHORTS = NULL, ZAUTHOR = 'an author', ZCONTEXTNAME = 'a context' WHERE Z_PK = 1;"
            )
        }
        let first = try #require(try s.store.historyTransaction(1))
        #expect(first.author == "an author" && first.contextName == "a context")
        #expect(first.bundleID == "com.sdsoftware.ResourcesManager", "the interned name where there is one")
    }

    /// A store without history tables keeps none; one whose tables are empty keeps an empty one;
    /// a store type without history does not offer it.
    @Test func storesWithoutHistorySaySo() throws {
        let plain = try CorpusStore("alemar11_CoreDataPlus_SampleModel_V1.sqlite", readOnly: true)
        #expect(!plain.store.keepsPersistentHistory)
        #expect(try plain.store.historyTransactions(after: 0, limit: 100, includingChanges: true).isEmpty)
        #expect(try plain.store.historyTransaction(1) == nil)

        let emptied = try CorpusStore(PersistentHistoryTests.notes14, readOnly: true) { url in
            try Fixtures.sqlite3Write(url, "DELETE FROM ACHANGE; DELETE FROM ATRANSACTION;")
        }
        #expect(emptied.store.keepsPersistentHistory)
        #expect(try emptied.store.historyTransactions(after: 0, limit: 100, includingChanges: true).isEmpty)

        let memory: any PersistentStore = GraphStore(model: SampleModel.make())
        #expect(!(memory is any PersistentHistoryStore))
    }

    /// What storefs writes reads back through the same pages: each save one transaction by
    /// storefs, after the app's.
    @Test func transactionsStorefsWritesFollowTheApps() throws {
        let s = try CorpusStore(PersistentHistoryTests.swiftData)
        let before = try s.store.persistentHistory()
        let item = try s.id("Item", 9)
        for name in ["Plank", "Beam", "Post"] {
            try s.context.setValue(.string(name), of: "name", for: item)
            s.save()
        }
        let after = try s.store.historyTransactions(
            after: try #require(before.last).number, limit: 10, includingChanges: true)
        #expect(after.count == 3)
        #expect(after.allSatisfy { $0.author == "storefs" && $0.changes.map(\.changedProperties) == [["name"]] })
        #expect(after.map(\.number) == Array((before.last!.number + 1)...(before.last!.number + 3)))
    }
}
