/// Lists of object IDs, each sorted by key, merged into one sorted by key: how an entity with
/// subentities is listed (one list per entity from the store, plus the objects inserted here).
enum ObjectIDRuns {
    /// More lists than this are concatenated and sorted instead of merged head by head.
    private static let mergedAtMost = 8

    /// Merges `runs` into one list sorted by key and empties them. The result is allocated once at
    /// its exact size: an entity of a million objects is listed this way, and concatenating then
    /// sorting held four times the list's size at once.
    static func merged(_ runs: inout [[ObjectID]]) -> [ObjectID] {
        runs.removeAll { $0.isEmpty }
        // A store is asked for its IDs by key; one that answers otherwise still lists correctly.
        for index in runs.indices where !isSortedByKey(runs[index]) {
            runs[index].sort { $0.key < $1.key }
        }
        if runs.count <= 1 { return runs.popLast() ?? [] }
        var result: [ObjectID] = []
        result.reserveCapacity(runs.reduce(0) { $0 + $1.count })
        if runs.count > mergedAtMost {
            for run in runs { result += run }
            runs = []
            result.sort { $0.key < $1.key }
            return result
        }
        var next = [Int](repeating: 0, count: runs.count)
        while true {
            var best = -1
            for run in runs.indices where next[run] < runs[run].count {
                if best < 0 || runs[run][next[run]].key < runs[best][next[best]].key { best = run }
            }
            guard best >= 0 else { break }
            result.append(runs[best][next[best]])
            next[best] += 1
        }
        runs = []
        return result
    }

    private static func isSortedByKey(_ ids: [ObjectID]) -> Bool {
        ids.indices.dropFirst().allSatisfy { ids[$0 - 1].key <= ids[$0].key }
    }
}
