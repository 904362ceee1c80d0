import ObjectGraph
import Testing

@testable import StoreFS

/// An entity directory's listing resumes by key (readdir's offset after the object with key k is
/// k + 3), whatever the keys: near the largest an inode carries, absent, or beyond every one.
@Suite struct EntityListingTests {
    func id(_ entity: Int, _ key: Int64) -> ObjectID { ObjectID(entity: EntityID(entity), key: PrimaryKey(key)) }

    @Test func objectsComeBackAsTheyWentIn() {
        let ids = [id(1, 1), id(3, 2), id(1, 40), id(1023, Node.maximumKey - 1), id(2, Node.maximumKey)]
        let listing = EntityListing(ids)
        #expect(listing.count == ids.count)
        #expect((0..<listing.count).map { listing[$0] } == ids)
    }

    @Test func objectsNoInodeCanCarryAreLeftOut() {
        let listing = EntityListing([id(1, -5), id(1, 0), id(1, 7), id(1, Node.maximumKey + 1), id(1024, 8), id(-1, 9)])
        #expect((0..<listing.count).map { listing[$0] } == [id(1, 0), id(1, 7)])
    }

    @Test func resumingFindsTheFirstKeyAbove() {
        let listing = EntityListing([id(1, 2), id(2, 5), id(1, 9), id(1, Node.maximumKey)])
        #expect(listing.firstIndex(afterKey: 0) == 0)
        #expect(listing.firstIndex(afterKey: 2) == 1)
        #expect(listing.firstIndex(afterKey: 3) == 1, "a key that is gone: the next one")
        #expect(listing.firstIndex(afterKey: 9) == 3)
        #expect(listing.firstIndex(afterKey: Node.maximumKey - 1) == 3)
        #expect(listing.firstIndex(afterKey: Node.maximumKey) == 4, "past the last: the end")
        #expect(listing.firstIndex(afterKey: Int64.max - 3) == 4)
        #expect(EntityListing([]).firstIndex(afterKey: 7) == 0)
    }
}
