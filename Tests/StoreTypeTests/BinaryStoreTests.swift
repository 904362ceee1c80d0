import Foundation
import ObjectGraph
import Testing
import AtomicStore
@testable import BinaryStore

@Suite struct BinaryStoreTests {
    let type = BinaryStoreType()

    @Test func sampleGraphRoundTripsWithAndWithoutModel() throws {
        try AtomicStoreScenarios.sampleRoundTrip(type)
    }

    @Test func awkwardValuesRoundTripBitForBit() throws {
        try AtomicStoreScenarios.awkwardValues(type)
    }

    @Test func fullDiskLeavesOldFileAndNoTempFile() throws {
        try AtomicStoreScenarios.fullDisk(type)
    }

    @Test func readOnlyRefusesAndStaleVersionConflicts() throws {
        try AtomicStoreScenarios.readOnlyAndConflict(type)
    }

    @Test func versionsArePersisted() throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("v.binary")
        let store = try AtomicStoreScenarios.create(type, at: url)
        try StoreFixtures.copyGraph(from: try StoreFixtures.sampleStore(objects: 100), to: store)
        let department = store.model.entityID(named: "Department")!
        let first = try #require(try store.snapshots(for: store.objectIDs(of: department)).first)
        var second = first
        second.attributes["name"] = .string("second")
        var request = SaveRequest()
        request.updated = [SaveRequest.Update(snapshot: second, original: first)]
        try store.save(request)
        var third = second
        third.attributes["name"] = .string("third")
        third.version += 1
        request.updated = [SaveRequest.Update(snapshot: third, original: second)]
        try store.save(request)
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        #expect(try reopened.snapshots(for: [first.objectID]).first?.version == 3)
    }

    @Test func storeWhoseHighestKeyExceedsItsSizeReopens() throws {
        // The highest key was read as a count bounded by the section's size: a small store with
        // an object made as Department/p100000 was written fine and then refused as corrupt
        // (found by scripts/crash-trials).
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("keys.binary")
        let store = try AtomicStoreScenarios.create(type, at: url)
        let department = try #require(store.model.entityID(named: "Department"))
        #expect(try store.claimKey(PrimaryKey(100_000), in: department))
        var request = SaveRequest()
        request.inserted = [Snapshot(objectID: ObjectID(entity: department, key: PrimaryKey(100_000)), version: 1)]
        request.inserted[0].attributes["name"] = .string("Far")
        try store.save(request)
        let reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        #expect(try reopened.objectIDs(of: department).map(\.key) == [PrimaryKey(100_000)])
        #expect(try reopened.reserveKeys(in: department, count: 1) == [PrimaryKey(100_001)])
    }

    @Test func crc32cCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum(Array(repeating: 0, count: 32)) == 0x8A91_36AA)
    }

    @Test func metadataReadsWithoutObjects() throws {
        let good = try AtomicStoreScenarios.smallStoreBytes(type)
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("m.binary")
        var damaged = good
        damaged[damaged.count - 1] ^= 0xFF  // the objects section only
        try damaged.write(to: url)
        let metadata = try type.metadata(at: url)
        #expect(metadata.storeType == "Binary")
        #expect(metadata["Custom"] == .string("kept"))
        #expect(metadata.embeddedModel != nil)
    }

    @Test func damagedFilesAreCorruptStores() throws {
        let good = try AtomicStoreScenarios.smallStoreBytes(type)
        for cut in [0, 4, 20, 39, 40, 300, good.count / 2, good.count - 1] {
            try AtomicStoreScenarios.expectCorrupt(type, good.prefix(cut))
        }
        var flipped = good
        flipped[good.count - 20] ^= 0x01
        try AtomicStoreScenarios.expectCorrupt(type, flipped, mentioning: "checksum")
        var flippedHeader = good
        flippedHeader[14] ^= 0x01
        try AtomicStoreScenarios.expectCorrupt(type, flippedHeader, mentioning: "checksum")
        var version = good
        version[8] = 9
        try AtomicStoreScenarios.expectCorrupt(type, version, mentioning: "version 9")
        try AtomicStoreScenarios.expectCorrupt(
            type, Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }), mentioning: "STOREFS")
        try AtomicStoreScenarios.expectCorrupt(type, good + Data([0]))
    }

    @Test func danglingReferenceIsCorruptStore() throws {
        let model = SampleModel.make()
        let employee = model.entityID(named: "Employee")!
        let department = model.entityID(named: "Department")!
        var graph = StoreGraph(metadata: StoreMetadata())
        _ = graph.load(
            Snapshot(
                objectID: ObjectID(entity: employee, key: PrimaryKey(1)), version: 1,
                attributes: ["firstName": .string("A")],
                toOne: ["department": ObjectID(entity: department, key: PrimaryKey(42))]),
            root: model[employee].rootID)
        let bytes = try BinaryStoreFormat.encode(graph, model: model, keepDanglingReferences: true)
        try AtomicStoreScenarios.expectCorrupt(type, bytes, mentioning: "which does not exist")
        // Without the test switch the writer leaves the dangling reference out.
        let clean = try BinaryStoreFormat.encode(graph, model: model)
        let (_, loaded) = try BinaryStoreFormat.decode(clean, model: model, path: "clean")
        #expect(loaded.snapshots[ObjectID(entity: employee, key: PrimaryKey(1))]?.toOne.isEmpty == true)
    }

    /// References are checked by a bit per key of each entity when the highest key is small
    /// enough for bits, and by the graph's key tables when it is not (a key of 2^40): both ways,
    /// a reference must name an object of exactly its entity, and a key taken by another entity
    /// of the same root (Employee 3, named as Manager 3) is no object.
    @Test(arguments: [Int64(50), Int64(1) << 40])
    func referencesAreCheckedByEntityAndKey(highestKey: Int64) throws {
        let model = SampleModel.make()
        let employee = try #require(model.entityID(named: "Employee"))
        let manager = try #require(model.entityID(named: "Manager"))
        let department = try #require(model.entityID(named: "Department"))
        func graph(managerOf3: ObjectID?) -> StoreGraph {
            var graph = StoreGraph(metadata: StoreMetadata())
            let boss = ObjectID(entity: manager, key: PrimaryKey(highestKey))
            let dept = ObjectID(entity: department, key: PrimaryKey(7))
            var toOne: PropertyValues<ObjectID> = ["department": dept]
            if let managerOf3 { toOne["manager"] = managerOf3 }
            _ = graph.load(
                Snapshot(
                    objectID: ObjectID(entity: employee, key: PrimaryKey(3)), version: 1,
                    attributes: ["firstName": .string("A")], toOne: toOne),
                root: model[employee].rootID)
            _ = graph.load(
                Snapshot(objectID: boss, version: 1, attributes: ["firstName": .string("B")]),
                root: model[manager].rootID)
            _ = graph.load(Snapshot(objectID: dept, version: 1), root: department)
            graph.toMany[.init(source: dept, relationship: "employees")] = [
                ObjectID(entity: employee, key: PrimaryKey(3))
            ]
            return graph
        }
        let boss = ObjectID(entity: manager, key: PrimaryKey(highestKey))
        let good = try BinaryStoreFormat.encode(graph(managerOf3: boss), model: model)
        let (_, loaded) = try BinaryStoreFormat.decode(good, model: model, path: "good")
        let three = try #require(loaded.snapshots[ObjectID(entity: employee, key: PrimaryKey(3))])
        #expect(three.toOne["manager"] == boss)
        #expect(three.toOne["department"] == ObjectID(entity: department, key: PrimaryKey(7)))
        #expect(loaded.maxKey[model[employee].rootID] == highestKey)

        for missing in [
            ObjectID(entity: manager, key: PrimaryKey(3)),  // Employee 3's key, another entity
            ObjectID(entity: manager, key: PrimaryKey(highestKey - 1)),
            ObjectID(entity: department, key: PrimaryKey(highestKey))  // Manager's key, another root
        ] {
            let bytes = try BinaryStoreFormat.encode(
                graph(managerOf3: missing), model: model, keepDanglingReferences: true)
            try AtomicStoreScenarios.expectCorrupt(type, bytes, mentioning: "which does not exist")
        }
    }

    /// A store decoded in chunks on several threads is the store read in one piece, and a damaged
    /// one is refused with the same message: bytes of the objects section are changed (the
    /// checksums made to match, so that the decoder, not the checksum, meets the damage) and each
    /// copy is read both ways. Chunks of a few objects, so that every block is split many times.
    @Test func chunkedDecodingIsReadingInOnePiece() throws {
        let good = try AtomicStoreScenarios.smallStoreBytes(type)
        let model = SampleModel.make()
        typealias Parallelism = BinaryStoreFormat.Parallelism
        func read(_ bytes: Data, _ parallelism: Parallelism) -> Result<StoreGraph, ObjectGraphError> {
            Result { () throws(ObjectGraphError) in
                try BinaryStoreFormat.decode(bytes, model: model, path: "s", parallelism: parallelism).1
            }
        }
        func same(_ a: Result<StoreGraph, ObjectGraphError>, _ b: Result<StoreGraph, ObjectGraphError>) -> Bool {
            switch (a, b) {
            case (.success(let x), .success(let y)):
                return x.snapshots == y.snapshots && x.toMany == y.toMany && x.keysByRoot == y.keysByRoot
                    && x.maxKey == y.maxKey
            case (.failure(let x), .failure(let y)): return x.message == y.message && x.code == y.code
            default: return false
            }
        }
        func brief(_ result: Result<StoreGraph, ObjectGraphError>) -> String {
            switch result {
            case .success(let graph): "\(graph.snapshots.count) objects"
            case .failure(let error): error.message
            }
        }
        let ways = [
            Parallelism(chunkObjects: 1, helpers: 0), Parallelism(chunkObjects: 3, helpers: 1),
            Parallelism(chunkObjects: 7, helpers: 2)
        ]
        let whole = read(good, .sequential)
        let graph = try whole.get()
        #expect(graph.snapshots.count == 100)
        for way in ways { #expect(same(read(good, way), whole)) }

        let header = try good.withBytes { (b) throws(ObjectGraphError) in
            try BinaryStoreFormat.header(b, fileSize: good.count, path: "s")
        }
        let objectsStart = BinaryStoreFormat.headerSize + header.metadataLength
        func sealed(_ damaged: Data) -> Data {
            var bytes = [UInt8](damaged)
            func put(_ value: UInt32, at offset: Int) {
                for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
            }
            put(CRC32C.checksum(Array(bytes[objectsStart...])), at: 28)
            put(CRC32C.checksum(Array(bytes[0..<36])), at: 36)
            return Data(bytes)
        }
        var generator = SplitMix64(seed: 40)
        var refused = 0
        for trial in 0..<400 {
            var damaged = good
            // One byte or two neighbouring ones, to any value: keys, counts, tags, markers, lengths.
            let at = Int.random(in: objectsStart..<good.count, using: &generator)
            damaged[at] = UInt8.random(in: 0...255, using: &generator)
            if trial % 3 == 0, at + 1 < good.count { damaged[at + 1] = UInt8.random(in: 0...255, using: &generator) }
            let bytes = sealed(damaged)
            let one = read(bytes, .sequential)
            if case .failure = one { refused += 1 }
            for way in ways {
                let chunked = read(bytes, way)
                #expect(same(chunked, one), "trial \(trial), byte \(at), \(way): \(brief(chunked)) vs \(brief(one))")
            }
        }
        // Most changes are damage the reader must find (a changed value of the right type is not).
        #expect(refused > 100)
    }

    @Test func aLargeGraphLoadsWhole() throws {
        let dir = try StoreFixtures.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("big.binary")
        let store = try AtomicStoreScenarios.create(type, at: url)
        try StoreFixtures.copyGraph(from: try StoreFixtures.sampleStore(objects: 20_000), to: store)
        let clock = ContinuousClock()
        var reopened: (any PersistentStore)?
        let elapsed = try clock.measure {
            reopened = try type.open(at: url, model: nil, options: StoreOptions(), initialMetadata: StoreMetadata())
        }
        try StoreFixtures.expectSameGraph(store, try #require(reopened))
        // Speed is the benchmarks' to judge (scripts/bench/bulk.sh), never a timed assertion.
        print("binary store: 20,000 objects loaded in \(elapsed)")
    }
}
