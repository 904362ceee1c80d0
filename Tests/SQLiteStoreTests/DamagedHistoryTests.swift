import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
import Testing

/// Damaged history must cost its row, never the mount (issue 34): a timestamp no date can hold
/// trapped `ls MNT/.history`, and a transaction whose key is TEXT made `storefs history` print
/// `t0` forever. Numbers read from ATRANSACTION are checked before they become dates or page
/// bounds.
@Suite struct DamagedHistoryTests {
    static let store = PersistentHistoryTests.swiftData

    @Test(arguments: ["1e20", "1e308", "9e999", "-9e999", "-1e300", "252423993600", "-63113904001", "'soon'"])
    func aTimestampNoDateCanHoldReadsAsTheReferenceDate(_ value: String) throws {
        let s = try CorpusStore(Self.store, readOnly: true) { url in
            try Fixtures.sqlite3Write(url, "UPDATE ATRANSACTION SET ZTIMESTAMP = \(value) WHERE Z_PK = 38;")
        }
        let all = try s.store.persistentHistory()
        let damaged = try #require(all.first { $0.number == 38 })
        #expect(damaged.timestamp == Date(timeIntervalSinceReferenceDate: 0), "ZTIMESTAMP = \(value)")
        #expect(damaged.changes.count == 2, "the transaction's changes are still read")
        let sound = try #require(all.first { $0.number == 37 })
        #expect(sound.timestamp > Date(timeIntervalSinceReferenceDate: 700_000_000))
    }

    @Test func theEdgesOfTheTimestampRangeAreKept() throws {
        let s = try CorpusStore(Self.store, readOnly: true) { url in
            try Fixtures.sqlite3Write(
                url,
                """
                UPDATE ATRANSACTION SET ZTIMESTAMP = -63113904000 WHERE Z_PK = 37;
                UPDATE ATRANSACTION SET ZTIMESTAMP = 252423993599.5 WHERE Z_PK = 38;
                """)
        }
        let all = try s.store.persistentHistory()
        #expect(all.first { $0.number == 37 }?.timestamp.timeIntervalSinceReferenceDate == -63_113_904_000)
        #expect(all.first { $0.number == 38 }?.timestamp.timeIntervalSinceReferenceDate == 252_423_993_599.5)
    }

    /// A rebuilt ATRANSACTION whose Z_PK column has no type holds TEXT keys: such a row is no
    /// transaction, and every way of reading the history ends.
    @Test func aTextKeyIsNoTransactionAndReadingEnds() throws {
        let s = try CorpusStore(Self.store, readOnly: true) { url in
            try Fixtures.sqlite3Write(
                url,
                """
                PRAGMA wal_checkpoint(TRUNCATE);
                CREATE TABLE T2 AS SELECT * FROM ATRANSACTION;
                DROP TABLE ATRANSACTION;
                CREATE TABLE ATRANSACTION (Z_PK, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER,
                    ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR,
                    ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB);
                INSERT INTO ATRANSACTION SELECT * FROM T2;
                DROP TABLE T2;
                UPDATE ATRANSACTION SET Z_PK = 't' || Z_PK WHERE Z_PK = 5;
                UPDATE ATRANSACTION SET Z_PK = 'zzz' WHERE Z_PK = 6;
                """)
        }
        let all = try s.store.persistentHistory()
        #expect(all.map(\.number) == (1...38).filter { $0 != 5 && $0 != 6 }.map(Int64.init))
        var pages = 0
        var after: Int64 = 0
        while let last = try s.store.historyTransactions(after: after, limit: 3, includingChanges: false).last {
            #expect(last.number > after)
            after = last.number
            pages += 1
            try #require(pages < 100, "paging ends")
        }
        #expect(after == 38)
    }
}
