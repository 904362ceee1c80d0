import ObjectGraph
import Testing

@testable import StoreFS

/// The removal log remembers which process listed a folder last for `rm -r`, for the latest
/// folders only: a walk of a million folders must not keep an entry per folder.
@Suite struct RemovalLogTests {
    func folder(_ key: Int64) -> ObjectID { ObjectID(entity: EntityID(1), key: PrimaryKey(key)) }

    @Test func onlyTheLatestListingsAreRemembered() {
        let log = RemovalLog()
        let walked = Int64(RemovalLog.listingLimit) * 3
        for key in 1...walked { log.noteListing(of: folder(key), by: 42) }
        #expect(log.isEmptying(folder(walked), by: 42), "the folder listed last")
        #expect(log.isEmptying(folder(walked - Int64(RemovalLog.listingLimit) + 1), by: 42), "the oldest one still kept")
        #expect(!log.isEmptying(folder(walked - Int64(RemovalLog.listingLimit)), by: 42), "one listing older: forgotten")
        #expect(!log.isEmptying(folder(1), by: 42))
        #expect(log.rememberedListings == RemovalLog.listingLimit)
    }

    @Test func aFolderListedAgainIsKeptByItsLatestListing() {
        let log = RemovalLog()
        log.noteListing(of: folder(1), by: 7)
        for key in 2...Int64(RemovalLog.listingLimit) { log.noteListing(of: folder(key), by: 7) }
        log.noteListing(of: folder(1), by: 8)  // listed again, by another process
        for key in 1...100 { log.noteListing(of: folder(10_000 + Int64(key)), by: 7) }
        #expect(log.isEmptying(folder(1), by: 8), "its first listing aged out, its second did not")
        #expect(!log.isEmptying(folder(1), by: 7))
        #expect(!log.isEmptying(folder(2), by: 7))
    }
}
