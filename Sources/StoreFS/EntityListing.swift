import ObjectGraph

/// An entity directory's objects, by key, as a listing keeps them between readdir calls: 8 bytes
/// an object (the entity above bit 32, the key below it), since a walk of a mount keeps the
/// listing of an entity of a million objects while it reads it. Objects whose numbers no node can
/// carry are left out, as they have no inode to list.
struct EntityListing: Sendable {
    private static let keyMask: UInt64 = (1 << 32) - 1
    private let packed: [UInt64]

    init(_ ids: [ObjectID]) {
        var packed: [UInt64] = []
        packed.reserveCapacity(ids.count)
        for id in ids where Node.fits(id) && id.entity.rawValue >= 0 {
            packed.append(UInt64(id.entity.rawValue) << 32 | UInt64(id.key.rawValue))
        }
        self.packed = packed
    }

    var count: Int { packed.count }

    subscript(index: Int) -> ObjectID {
        let value = packed[index]
        return ObjectID(entity: EntityID(Int(value >> 32)), key: PrimaryKey(Int64(value & Self.keyMask)))
    }

    /// The position of the first object whose key is above `key` (`count` when none is).
    func firstIndex(afterKey key: Int64) -> Int {
        var low = 0
        var high = packed.count
        while low < high {
            let mid = low + (high - low) / 2
            if Int64(packed[mid] & Self.keyMask) <= key { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
