import Foundation
import ObjectGraph
import PostgresStore
import Synchronization
import TestSupport
import Testing

/// How stores of one PostgreSQL schema follow each other's commits: LISTEN where the server
/// carries it, else (or with `follow=poll`) by reading the persistent history at an interval.
@Suite struct PostgresFollowingTests {
    func open(_ url: URL, model: ManagedObjectModel? = SampleModel.make(), create: Bool = true) throws -> PostgresStore
    {
        try PostgresStore(
            location: try PostgresLocation(url), model: model, options: StoreOptions(createIfMissing: create))
    }

    func adding(_ query: String, to url: URL) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.percentEncodedQuery = [components.percentEncodedQuery, query].compactMap { $0 }.joined(
            separator: "&")
        return components.url!
    }

    @Test func followAndPollParametersAreCheckedAndShown() throws {
        let url = URL(string: "postgresql://u@h/d?follow=poll&poll=50")!
        let location = try PostgresLocation(url)
        #expect(location.followsByPolling && location.pollInterval == 0.05)
        #expect(location.description.contains("follow=poll") && location.description.contains("poll=50"))
        let plain = try PostgresLocation(URL(string: "postgresql://u@h/d")!)
        #expect(!plain.followsByPolling && plain.pollInterval == PostgresLocation.defaultPollInterval)
        for wrong in ["follow=never", "follow=", "poll=5", "poll=60001", "poll=-1", "poll=x"] {
            #expect(throws: ObjectGraphError.self, "\(wrong)") {
                _ = try PostgresLocation(URL(string: "postgresql://u@h/d?\(wrong)")!)
            }
        }
    }

    /// 10,000 objects saved by four writers at once, 50 per save: a follower by polling and a
    /// follower by LISTEN each hear of every one of them, and read back the writers' values.
    @Test func followersByPollingAndByListenMissNoneOfTenThousandChanges() throws {
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("follow"))
        let first = try open(url)
        first.close()
        let writers = try (0..<4).map { _ in try open(url, create: false) }
        let polling = try open(adding("follow=poll&poll=50", to: url), create: false)
        let listening = try open(url, create: false)
        defer {
            for store in writers + [polling, listening] { store.close() }
        }
        #expect(polling.takeAnnouncedChanges().isEmpty && listening.takeAnnouncedChanges().isEmpty, "followers start")
        Thread.sleep(forTimeInterval: 0.3)
        let department = first.model.entityID(named: "Department")!
        let perWriter = 2500
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: writers.count) { index in
            let base = index * perWriter
            for start in stride(from: 0, to: perWriter, by: 50) {
                var request = SaveRequest()
                request.inserted = (start..<start + 50).map { offset in
                    let key = Int64(base + offset + 1)
                    return Snapshot(
                        objectID: ObjectID(entity: department, key: PrimaryKey(key)), version: 1,
                        attributes: ["name": .string("d\(key)")])
                }
                do { try writers[index].save(request) } catch { failures.withLock { $0.append("\(error)") } }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let all = Set((1...writers.count * perWriter).map { ObjectID(entity: department, key: PrimaryKey(Int64($0))) })
        for (name, follower) in [("polling", polling), ("listening", listening)] {
            var heard = AnnouncedChanges()
            let started = Date()
            while heard.changed.count < all.count && Date().timeIntervalSince(started) < 20 {
                heard.formUnion(follower.takeAnnouncedChanges())
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(heard.changed == all, "\(name): heard \(heard.changed.count) of \(all.count)")
            #expect(heard.insertedOrDeleted == all, "\(name)")
            // Exact: the follower reads every object with the value its writer gave it.
            let read = try follower.snapshots(for: Array(all))
            let values = Dictionary(
                read.map { ($0.objectID, $0.attributes["name"]) }, uniquingKeysWith: { first, _ in first })
            #expect(values.count == all.count, "\(name)")
            #expect(all.allSatisfy { values[$0] == .string("d\($0.key.rawValue)") }, "\(name)")
        }
    }
}
