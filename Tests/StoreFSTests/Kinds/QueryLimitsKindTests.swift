import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Synchronization
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 34 on the embedded kernel: computed folders under the mount's query limits (the errno
/// and `user.storefs.error` of a query, fetched property or template that passes one, and of one
/// whose request is interrupted), large IN lists and long ORs, collection operators after a value,
/// the saved-query table's generation guard, and damaged history.
@Suite struct QueryLimitsKindTests {
    /// The key path of issue 34 (to-many steps multiply what it gathers).
    static let hostile =
        ".query/Employee/projects.milestones.project.members.department.employees.projects.members.department.employees.@count > 1"

    static func limited(_ limits: QueryLimits) -> @Sendable (inout StoreFSConfiguration) -> Void {
        { $0.queryLimits = limits }
    }

    /// A key path whose values SQL gathers by the hundred thousand on the sample (SQLite spends
    /// the hostile path's time sorting, before it gathers anything: that one meets the time limit).
    static let heavy = ".query/Employee/department.employees.projects.members.department.employees.@count > 1"

    func reason(_ k: EmbeddedKernel, _ path: String) throws -> String {
        String(decoding: try k.getxattr(path, "user.storefs.error"), as: UTF8.self)
    }

    @Test func aQueryPastTheRowsLimitIsEFBIGWithItsReasonInStorefsError() throws {
        let mount = try KernelMount(configure: Self.limited(QueryLimits(rowsVisited: 20_000)))
        let k = mount.kernel
        #expect(errnoOf { _ = try k.read("\(Self.heavy)/.count") } == EFBIG)
        let why = try reason(k, Self.heavy)
        #expect(why.contains("stopped after visiting 20000 rows and values") && why.contains("query_rows"), "\(why)")
        #expect(try reason(k, ".query/Employee") == why, "the entity's last refused query too")
        #expect(errnoOf { _ = try k.list(Self.heavy) } == EFBIG)
        #expect(errnoOf { _ = try k.read("\(Self.heavy)/.json") } == EFBIG)
        // The mount goes on: other queries answer, and the folder's reason stays until it does.
        #expect(try mount.text(".query/Employee/level > 5/.count") != "0\n")
        #expect(errnoOf { _ = try k.getxattr(".query/Employee/level > 5", "user.storefs.error") } == ENODATA)
        #expect(try reason(k, Self.heavy) == why)
        #expect(mount.finish().isEmpty)
    }

    @Test func aQueryPastTheTimeLimitIsETIMEDOUT() throws {
        let mount = try KernelMount(configure: Self.limited(QueryLimits(time: 0.3)))
        let k = mount.kernel
        let start = Date()
        #expect(errnoOf { _ = try k.read("\(Self.hostile)/.count") } == ETIMEDOUT)
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(try reason(k, Self.hostile).contains("stopped after 0.3 s"))
        #expect(mount.finish().isEmpty)
    }

    @Test func aQueryPastTheMemoryLimitIsEFBIG() throws {
        let mount = try KernelMount(configure: Self.limited(QueryLimits(memory: 1 << 18)))
        let k = mount.kernel
        #expect(errnoOf { _ = try k.list(Self.heavy) } == EFBIG)
        #expect(try reason(k, Self.heavy).contains("more than 262144 bytes"))
        #expect(mount.finish().isEmpty)
    }

    /// FUSE INTERRUPT, as FuseKit reports it (``RequestInterruption``): the evaluation stops and
    /// the request is EINTR; an interrupt is no fault of the query, so nothing is kept for
    /// `user.storefs.error`.
    @Test func anInterruptedRequestIsEINTRAtOnce() throws {
        let mount = try KernelMount(configure: Self.limited(QueryLimits(time: 600)))
        let k = mount.kernel
        let interruption = RequestInterruption()
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            interruption.interrupt()
        }
        let start = Date()
        let code = RequestInterruption.$current.withValue(interruption) {
            errnoOf { _ = try k.read("\(Self.hostile)/.count") }
        }
        #expect(code == EINTR)
        #expect(Date().timeIntervalSince(start) < 10, "stopped by the interrupt, not by a limit")
        #expect(errnoOf { _ = try k.getxattr(Self.hostile, "user.storefs.error") } == ENODATA)
        #expect(try mount.text(".query/Employee/level > 5/.count") != "0\n")
        #expect(mount.finish().isEmpty)
    }

    @Test func fetchedPropertiesAndTemplatesAreBoundedToo() throws {
        let mount = try KernelMount(configure: Self.limited(QueryLimits(rowsVisited: 3)))
        let k = mount.kernel
        #expect(errnoOf { _ = try k.list("Employee/p20/colleagues") } == EFBIG)
        #expect(try reason(k, "Employee/p20/colleagues").contains("Employee/p20/colleagues: stopped after visiting 3"))
        #expect(errnoOf { _ = try k.list(".fetchRequests/remoteEmployees") } == EFBIG)
        #expect(try reason(k, ".fetchRequests/remoteEmployees").contains("stopped after visiting 3"))
        #expect(mount.finish().isEmpty)
    }

    // MARK: - Large IN lists and long ORs

    @Test func aSavedQueryWithALargeInListOrALongOrIsAnswered() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let context = mount.coordinator.newContext()
        let employee = try #require(mount.coordinator.model.entityID(named: "Employee"))
        let numbers = (0..<6000).map(String.init).joined(separator: ",")
        let ors = (0..<2000).map { "employeeID == \($0)" }.joined(separator: " OR ")
        for (name, predicate) in [("big", "employeeID IN {\(numbers)}"), ("bigor", ors)] {
            try k.setxattr("Employee", "user.query.\(name)", Data(predicate.utf8))
            let wanted = try context.objects(
                matching: try PredicateParser.parse(predicate), of: employee, strategy: .inMemory)
            #expect(!wanted.isEmpty)
            #expect(try mount.text(".query/Employee/\(name)/.count") == "\(wanted.count)\n", "\(name)")
            #expect(try k.list(".query/Employee/\(name)").sorted() == wanted.map(\.key.description).sorted())
        }
        #expect(mount.finish().isEmpty)
    }

    // MARK: - Collection operators after a value

    @Test func aCollectionOperatorAfterAValueIsRefusedWithItsReason() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        #expect(errnoOf { _ = try k.stat(".query/Employee/lastName.@count > 1") } == ENOENT)
        #expect(try reason(k, ".query/Employee").contains("lastName is one value, which has no key @count"))
        #expect(errnoOf { try k.setxattr("Employee", "user.query.c", Data("manager.@count == 1".utf8)) } == EINVAL)
        #expect(try reason(k, ".query/Employee").contains("manager is one object"))
        #expect(try mount.text(".query/Employee/projects.@count > 1/.count") != "0\n", "a collection's count stays")
        #expect(mount.finish().isEmpty)
    }

    // MARK: - The saved-query table

    /// A `setfattr user.query.*` that lands while the saved queries are read must not leave the
    /// read's older answer kept (the generation guard ``FetchedResults`` has).
    @Test func savedQueriesReadAcrossAChangeAreNotKept() throws {
        let table = QueryTable()
        let old: [String: MetadataValue] = ["Employee": .dictionary(["q": .string("level > 1")])]
        let new: [String: MetadataValue] = ["Employee": .dictionary(["q": .string("level > 9")])]
        let reads = Atomic<Int>(0)
        // The change lands while the first read is under way.
        let first = try table.saved { () throws(FileSystemError) in
            reads.add(1, ordering: .relaxed)
            table.forgetSaved()
            return old
        }
        #expect(first == old, "the read answers its own request")
        let second = try table.saved { () throws(FileSystemError) in
            reads.add(1, ordering: .relaxed)
            return new
        }
        let readCount = reads.load(ordering: .relaxed)
        #expect(second == new && readCount == 2, "read again, not the stale answer")
        #expect(try table.saved { () throws(FileSystemError) in [:] } == new, "kept once read without a change")
        _ = table.takeShown()
        #expect(try table.saved { () throws(FileSystemError) in old } == old, "a drop of results drops them too")
    }

    // MARK: - Damaged history

    static let historyStore = "sergd2005_ResourcesManager_default.store"

    @Test(arguments: ["1e20", "1e308", "9e999", "-1e300"])
    func aTransactionWhoseTimestampNoDateHoldsShowsTheReferenceDate(_ value: String) throws {
        let mount = try KernelMount(corpus: Self.historyStore, readOnly: true) { url in
            let result = try runTool(
                "sqlite3",
                ["-batch", "-bail", url.path, "UPDATE ATRANSACTION SET ZTIMESTAMP = \(value) WHERE Z_PK = 38;"])
            try #require(result.status == 0, "\(result.error)")
        }
        let k = mount.kernel
        #expect(try k.list(".history").count == 38)
        #expect(try mount.text(".history/t38/timestamp") == "2001-01-01T00:00:00Z\n")
        #expect(try k.stat(".history/t38").modificationTime == Date(timeIntervalSinceReferenceDate: 0))
        #expect(try k.list(".history/t38/inserted") == ["Component-p7"])
        #expect(mount.finish().isEmpty)
    }

    @Test func aTransactionWithATextKeyIsLeftOutAndListingEnds() throws {
        let mount = try KernelMount(corpus: Self.historyStore, readOnly: true) { url in
            let result = try runTool(
                "sqlite3",
                [
                    "-batch", "-bail", url.path,
                    """
                    PRAGMA wal_checkpoint(TRUNCATE);
                    CREATE TABLE T2 AS SELECT * FROM ATRANSACTION; DROP TABLE ATRANSACTION;
                    CREATE TABLE ATRANSACTION (Z_PK, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER,
                        ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR,
                        ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB);
                    INSERT INTO ATRANSACTION SELECT * FROM T2; DROP TABLE T2;
                    UPDATE ATRANSACTION SET Z_PK = 't' || Z_PK WHERE Z_PK = 5;
                    """
                ])
            try #require(result.status == 0, "\(result.error)")
        }
        let k = mount.kernel
        let listed = try k.list(".history")
        #expect(listed.count == 37 && !listed.contains("t5") && !listed.contains("t0"))
        #expect(errnoOf { _ = try k.stat(".history/t5") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }
}
