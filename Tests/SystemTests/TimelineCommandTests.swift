import Foundation
import Testing

/// `storefs timeline` on a sample store with people deleted and renamed in its WAL: JSON Lines
/// with Timesketch's fields, CSV, and a body file that The Sleuth Kit's mactime reads; `--since`
/// and `--until` bound it; live, history-less and recovered events are marked as such.
@Suite struct TimelineCommandTests {
    /// The sample store of docs/FORENSICS.md: p3–p5 deleted, p6 renamed, the WAL kept.
    static func store(in scratch: Scratch) throws -> String {
        let store = scratch.path + "/Company.sqlite"
        let sample = try run(try storefsBinary(), ["sample", "--objects", "300", store])
        guard sample.succeeded else { throw SystemTestError("storefs sample: \(sample.errorOutput)") }
        let sql = try run(
            try tool("sqlite3", package: "sqlite3"),
            [
                store, ".dbconfig no_ckpt_on_close on", "PRAGMA secure_delete = OFF",
                "DELETE FROM ZPERSON WHERE Z_PK BETWEEN 3 AND 5",
                "UPDATE ZPERSON SET ZLASTNAME = 'Hopper' WHERE Z_PK = 6"
            ])
        guard sql.succeeded else { throw SystemTestError("sqlite3: \(sql.errorOutput)") }
        return store
    }

    @Test func eventsAreTimesketchLinesCSVAndABodyFileMactimeReads() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let store = try Self.store(in: scratch)
        let storefs = try storefsBinary()

        let lines = try run(storefs, ["timeline", store])
        #expect(lines.succeeded, "\(lines.errorOutput)")
        let events = lines.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(!events.isEmpty && events.count == lines.output.split(separator: "\n").count, "every line is JSON")
        for key in ["datetime", "timestamp", "timestamp_desc", "message", "entity", "object", "attribute", "source"] {
            #expect(events.allSatisfy { $0[key] != nil }, "every event has \(key)")
        }
        let sources = Set(events.compactMap { $0["source"] as? String })
        #expect(sources == ["live", "recovered"], "\(sources)")
        let recovered = events.filter { $0["source"] as? String == "recovered" }
        #expect(recovered.contains { ($0["object"] as? String)?.hasPrefix("p3-") == true })
        #expect(recovered.allSatisfy { ($0["timestamp_desc"] as? String)?.contains(".") == true })
        let times = events.compactMap { $0["timestamp"] as? Int64 ?? ($0["timestamp"] as? NSNumber)?.int64Value }
        #expect(times == times.sorted(), "in time order")

        // --since and --until bound the events (a date alone is its whole day for --until).
        let bounded = try run(storefs, ["timeline", store, "--since", "1990-01-01", "--until", "1999-12-31"])
        #expect(bounded.succeeded)
        let years = bounded.output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["datetime"] as? String
        }.map { String($0.prefix(4)) }
        #expect(!years.isEmpty && years.allSatisfy { $0 >= "1990" && $0 <= "1999" }, "\(Set(years).sorted())")
        #expect(try run(storefs, ["timeline", store, "--since", "yesterday"]).status == 64)

        let csv = try run(storefs, ["timeline", store, "--format", "csv"])
        #expect(csv.output.hasPrefix("datetime,timestamp,timestamp_desc,message,entity,object,attribute,source\n"))
        #expect(csv.output.split(separator: "\n").count == events.count + 1)

        let body = try run(storefs, ["timeline", store, "--format", "bodyfile"])
        #expect(body.output.split(separator: "\n").count == events.count)
        let file = scratch.path + "/body.txt"
        try Data(body.output.utf8).write(to: URL(fileURLWithPath: file))
        let mactime = try run(try tool("mactime", package: "sleuthkit"), ["-b", file, "-d", "-z", "UTC"])
        #expect(mactime.succeeded, "mactime: \(mactime.errorOutput) (apt-get install sleuthkit)")
        #expect(
            mactime.output.contains(",macb,r/r---------,0,0,0,\"/recovered/Manager/p3-"),
            "\(mactime.output.prefix(500))")
    }
}
