import ObjectGraph

extension BinaryStoreFormat {
    /// A reference read from the objects section, checked once every object is loaded.
    struct Reference {
        var source: ObjectID
        /// The relationship's place in the reader's table of relationship names.
        var relationship: UInt32
        var target: ObjectID
    }

    /// Which objects a binary store's reader has loaded, for checking every reference of the
    /// file: a bit per key of each entity, so that a check is a bit test instead of a hashed
    /// lookup in a table of a million keys (most of the lookups of opening a large store).
    ///
    /// Bits are kept only where they are cheap and bounded: an entity's bitmap covers the keys up
    /// to its root's highest key as the file states it, and all bitmaps together take at most the
    /// budget given (about the file's size), so a file that claims huge keys cannot make this
    /// allocate. An entity whose bitmap would not fit, or one of whose keys lies past it, is
    /// answered by the graph's own tables instead.
    struct LoadedKeys {
        private var bits: [[UInt64]]
        /// Per entity (by number - 1): answered by the graph's tables, not by `bits`.
        private var hashed: [Bool]
        private var wordsPerEntity: [Int]
        private var budgetWords: Int

        init(model: ManagedObjectModel, highestKeys: [EntityID: Int64], budgetBytes: Int) {
            let count = model.entities.count
            bits = Array(repeating: [], count: count)
            hashed = Array(repeating: false, count: count)
            budgetWords = max(budgetBytes, 0) / 8
            wordsPerEntity = model.entities.map { entity in
                let highest = highestKeys[entity.rootID] ?? 0
                // Keys are 1...highest; bit k is key k.
                guard highest >= 0, highest < Int64(Int.max - 64) else { return -1 }
                return (Int(highest) + 64) / 64
            }
        }

        /// Records that `id` was loaded (its entity number is one of the model's).
        mutating func insert(_ id: ObjectID) {
            let e = id.entity.rawValue - 1
            guard e >= 0, e < bits.count, !hashed[e] else { return }
            let key = id.key.rawValue
            let words = wordsPerEntity[e]
            guard key >= 0, words > 0, key < Int64(words) * 64 else { return hashed[e] = true }
            if bits[e].isEmpty {
                guard words <= budgetWords else { return hashed[e] = true }
                budgetWords -= words
                bits[e] = Array(repeating: 0, count: words)
            }
            let k = Int(key)
            bits[e][k >> 6] |= 1 << UInt64(k & 63)
        }

        /// Whether `id` was loaded; `exists` (the graph's tables) answers for entities not kept in bits.
        func contains(_ id: ObjectID, else exists: StoreGraph.Existence) -> Bool {
            let e = id.entity.rawValue - 1
            guard e >= 0, e < bits.count else { return false }
            if hashed[e] { return exists(id) }
            let key = id.key.rawValue
            guard key >= 0, key < Int64(bits[e].count) * 64 else { return false }
            let k = Int(key)
            return bits[e][k >> 6] & (1 << UInt64(k & 63)) != 0
        }
    }
}
