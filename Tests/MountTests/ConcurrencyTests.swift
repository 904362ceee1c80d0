import Foundation
import TestSupport
import Testing

/// Many writers at once, readers beside them, and another process writing the same rows: every
/// fsync'd increment counted exactly once, every read a whole value that never goes backwards.
/// scripts/reliability/counters.py drives them (scripts/concurrency runs the long version).
@Suite(.serialized) struct ConcurrencyTests {
    static let driver = Corpus.directory.deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("scripts/reliability/counters.py").path

    /// A mounted sample store whose first `count` employees' badgeNumber counters start at 0.
    func counters(_ count: Int) throws -> (MountedStore, [Int64]) {
        let mount = try MountedStore(objects: 1_000, mount: false)
        let keys = try run(
            "sqlite3",
            [
                mount.store.path,
                "select Z_PK from ZPERSON where Z_ENT = (select Z_ENT from Z_PRIMARYKEY where Z_NAME = 'Employee') order by Z_PK limit \(count)"
            ]
        )
        .lines.compactMap { Int64($0) }
        #expect(keys.count == count)
        let list = keys.map(String.init).joined(separator: ",")
        #expect(
            try run(
                "sqlite3",
                [mount.store.path, "update ZPERSON set ZBADGENUMBER = 0 where Z_PK in (\(list)); select changes()"]
            ).output == "\(count)\n")
        try mount.mount()
        return (mount, keys)
    }

    func drive(_ mount: MountedStore, _ keys: [Int64], increments: Int, extra: [String] = []) throws -> [String: Any] {
        let result = try run(
            "python3",
            [
                Self.driver, mount.path, "--keys", keys.map(String.init).joined(separator: ","), "--increments",
                "\(increments)"
            ] + extra)
        #expect(result.status == 0, "\(result.error)")
        return try #require(
            try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
    }

    func storedCounters(_ mount: MountedStore, _ keys: [Int64]) throws -> [Int] {
        try run(
            "sqlite3",
            [
                mount.store.path,
                "select ZBADGENUMBER from ZPERSON where Z_PK in (\(keys.map(String.init).joined(separator: ","))) order by Z_PK"
            ]
        )
        .lines.compactMap { Int($0) }
    }

    @Test func sixteenWritersOnOneMountCountEveryIncrementOnce() throws {
        let (mount, keys) = try counters(16)
        defer { try? mount.unmount() }
        let outcome = try drive(mount, keys, increments: 200)
        #expect(outcome["writes"] as? Int == 16 * 200, "\(outcome)")
        #expect((outcome["errors"] as? [String: Any])?.isEmpty == true, "\(outcome)")
        try mount.unmount()
        #expect(
            try storedCounters(mount, keys) == Array(repeating: 200, count: 16), "the store holds every increment once")
    }

    @Test func readersBesideWritersNeverSeeATornEmptyOrOlderValue() throws {
        let (mount, keys) = try counters(4)
        defer { try? mount.unmount() }
        let outcome = try drive(mount, keys, increments: 40, extra: ["--readers", "4"])
        #expect(outcome["writes"] as? Int == 4 * 40, "\(outcome)")
        #expect((outcome["reads"] as? Int ?? 0) > 100, "the readers read: \(outcome)")
        #expect(outcome["badReads"] as? Int == 0, "no empty or torn read: \(outcome)")
        #expect(outcome["backwards"] as? Int == 0, "no counter went backwards: \(outcome)")
        try mount.unmount()
        #expect(try storedCounters(mount, keys) == Array(repeating: 40, count: 4))
    }

    @Test func anotherProcessWritingOtherColumnsOfTheSameRowsLosesNothing() throws {
        let (mount, keys) = try counters(4)
        defer { try? mount.unmount() }
        let outcome = try drive(
            mount, keys, increments: 60,
            extra: ["--store", mount.store.path, "--external", "ZPERSON.ZRATING", "--readers", "2"])
        #expect(outcome["writes"] as? Int == 4 * 60, "\(outcome)")
        #expect(
            (outcome["errors"] as? [String: Any])?.isEmpty == true, "no conflict: their column is not ours: \(outcome)")
        #expect(outcome["badReads"] as? Int == 0 && outcome["backwards"] as? Int == 0, "\(outcome)")
        #expect((outcome["external"] as? Int ?? 0) > 0, "the other process wrote meanwhile: \(outcome)")
        try mount.unmount()
        #expect(try storedCounters(mount, keys) == Array(repeating: 60, count: 4), "every increment through the mount")
        let last = outcome["externalLast"] as? Int ?? -1
        let ratings = try run(
            "sqlite3",
            [
                mount.store.path,
                "select distinct ZRATING from ZPERSON where Z_PK in (\(keys.map(String.init).joined(separator: ",")))"
            ]
        ).lines
        #expect(
            ratings == ["\(last).0"] || ratings == ["\(last)"],
            "and the other process's last value: \(ratings), \(last)")
    }
}
