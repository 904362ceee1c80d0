import Testing

@testable import ObjectGraph

/// An entity with subentities is listed by merging each entity's list (by key) into one.
@Suite struct ObjectIDRunsTests {
    /// `count` lists of entities 1...count whose keys interleave: list e holds keys e, e + count, ...
    func interleaved(_ count: Int, each: Int) -> [[ObjectID]] {
        (1...count).map { e in (0..<each).map { ObjectID(entity: EntityID(e), key: PrimaryKey(Int64(e + $0 * count))) }
        }
    }

    @Test(arguments: [1, 2, 3, 8, 9, 40])
    func listsMergeIntoOneByKey(lists: Int) {
        var runs = interleaved(lists, each: 50)
        let expected = runs.flatMap { $0 }.sorted { $0.key < $1.key }
        let merged = ObjectIDRuns.merged(&runs)
        #expect(merged == expected)
        #expect(merged.map(\.key.rawValue) == Array(1...Int64(lists * 50)))
        #expect(runs.isEmpty, "the lists are consumed")
    }

    @Test func aListNotSortedByKeyIsSortedFirst() {
        var runs = interleaved(3, each: 20)
        runs[1].reverse()
        let merged = ObjectIDRuns.merged(&runs)
        #expect(merged.map(\.key.rawValue) == Array(1...60))
    }

    @Test func emptyListsLeaveNothing() {
        var none: [[ObjectID]] = []
        #expect(ObjectIDRuns.merged(&none).isEmpty)
        var empties: [[ObjectID]] = [[], [], []]
        #expect(ObjectIDRuns.merged(&empties).isEmpty)
        var one = [[], [ObjectID(entity: EntityID(2), key: PrimaryKey(5))], []]
        #expect(ObjectIDRuns.merged(&one) == [ObjectID(entity: EntityID(2), key: PrimaryKey(5))])
    }
}
