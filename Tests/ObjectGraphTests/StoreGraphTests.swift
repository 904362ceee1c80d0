import Testing

@testable import ObjectGraph

/// The in-memory graph atomic stores read their files into.
@Suite struct StoreGraphTests {
    func snapshot(_ entity: Int, _ key: Int64) -> Snapshot {
        Snapshot(objectID: ObjectID(entity: EntityID(entity), key: PrimaryKey(key)), version: 1)
    }

    @Test func reservedTablesLoadAsUnreservedOnes() {
        var reserved = StoreGraph(metadata: StoreMetadata())
        var plain = StoreGraph(metadata: StoreMetadata())
        reserved.reserve(objects: 100, toManyLists: 100)
        var run = reserved.startLoading(root: EntityID(1), expecting: 100)
        for key in Int64(1)...300 {
            let loaded = reserved.load(snapshot(1, key), into: &run)
            let loadedPlain = plain.load(snapshot(1, key), root: EntityID(1))
            #expect(loaded && loadedPlain)
        }
        let duplicate = reserved.load(snapshot(2, 7), into: &run)
        reserved.finishLoading(run)
        #expect(!duplicate, "a key is unique per root, reserved or not")
        #expect(reserved.snapshots == plain.snapshots)
        #expect(reserved.keysByRoot == plain.keysByRoot)
        #expect(reserved.maxKey == [EntityID(1): 300])
    }

    @Test func loadingARunOfOneRootGivesTheSameGraph() {
        var runGraph = StoreGraph(metadata: StoreMetadata())
        var plain = StoreGraph(metadata: StoreMetadata())
        runGraph.maxKey[EntityID(1)] = 1000  // a saved Z_MAX above every key stays
        plain.maxKey[EntityID(1)] = 1000
        for keys in [Array(Int64(1)...50), Array(Int64(51)...80)] {  // two runs of the same root
            var run = runGraph.startLoading(root: EntityID(1))
            for key in keys {
                let loaded = runGraph.load(snapshot(key.isMultiple(of: 2) ? 1 : 2, key), into: &run)
                let loadedPlain = plain.load(snapshot(key.isMultiple(of: 2) ? 1 : 2, key), root: EntityID(1))
                #expect(loaded && loadedPlain)
            }
            let duplicate = runGraph.load(snapshot(3, keys[0]), into: &run)
            #expect(!duplicate, "a key is unique per root across entities")
            runGraph.finishLoading(run)
        }
        var other = runGraph.startLoading(root: EntityID(4))
        let loaded = runGraph.load(snapshot(4, 2000), into: &other)
        runGraph.finishLoading(other)
        let loadedPlain = plain.load(snapshot(4, 2000), root: EntityID(4))
        #expect(loaded && loadedPlain)
        #expect(runGraph.snapshots == plain.snapshots)
        #expect(runGraph.keysByRoot == plain.keysByRoot)
        #expect(runGraph.maxKey == [EntityID(1): 1000, EntityID(4): 2000])
        #expect(plain.maxKey == runGraph.maxKey)
    }

    @Test func aFileCannotMakeAReservationAllocate() {
        // What a damaged or hostile file claims: a reservation is capped, so these return at once.
        var graph = StoreGraph(metadata: StoreMetadata())
        graph.reserve(objects: .max, toManyLists: .max)
        graph.finishLoading(graph.startLoading(root: EntityID(1), expecting: .max))
        graph.reserve(objects: -5, toManyLists: .min)
        graph.finishLoading(graph.startLoading(root: EntityID(2), expecting: -5))
        #expect(graph.keysByRoot[EntityID(2)] == nil, "nothing to reserve makes no table")
        #expect(graph.snapshots.capacity < StoreGraph.reservationLimit * 2)
        let loaded = graph.load(snapshot(1, 1), root: EntityID(1))
        #expect(loaded && graph.snapshots.count == 1)
    }
}
