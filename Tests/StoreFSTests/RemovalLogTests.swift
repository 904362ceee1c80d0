import Foundation
import ObjectGraph
import Testing

@testable import StoreFS

/// The removal log remembers which process opened a folder last for `rm -r`, for the latest
/// folders only: a walk of a million folders must not keep an entry per folder.
@Suite struct RemovalLogTests {
    func folder(_ key: Int64) -> ObjectID { ObjectID(entity: EntityID(1), key: PrimaryKey(key)) }

    @Test func onlyTheLatestOpeningsAreRemembered() {
        let log = RemovalLog()
        let walked = Int64(RemovalLog.openingLimit) * 3
        for key in 1...walked { log.noteOpening(of: folder(key), by: 42) }
        #expect(log.isEmptying(folder(walked), by: 42), "the folder opened last")
        #expect(
            log.isEmptying(folder(walked - Int64(RemovalLog.openingLimit) + 1), by: 42), "the oldest one still kept")
        #expect(
            !log.isEmptying(folder(walked - Int64(RemovalLog.openingLimit)), by: 42), "one opening older: forgotten")
        #expect(!log.isEmptying(folder(1), by: 42))
        #expect(log.rememberedOpenings == RemovalLog.openingLimit)
    }

    @Test func aFolderOpenedAgainIsKeptByItsLatestOpening() {
        let log = RemovalLog()
        log.noteOpening(of: folder(1), by: 7)
        for key in 2...Int64(RemovalLog.openingLimit) { log.noteOpening(of: folder(key), by: 7) }
        log.noteOpening(of: folder(1), by: 8)  // opened again, by another process
        for key in 1...100 { log.noteOpening(of: folder(10_000 + Int64(key)), by: 7) }
        #expect(log.isEmptying(folder(1), by: 8), "its first opening aged out, its second did not")
        #expect(!log.isEmptying(folder(1), by: 7))
        #expect(!log.isEmptying(folder(2), by: 7))
    }
}

/// What `rm -r` removes in a folder is hidden until the folder's rmdir takes it, or until the
/// folder has been quiet for the settle time, when it is applied.
@Suite struct HiddenRemovalTests {
    let object = ObjectID(entity: EntityID(1), key: PrimaryKey(5))
    let member = ObjectID(entity: EntityID(2), key: PrimaryKey(9))

    @Test func hiddenRemovalsHideAndTheRmdirTakesThem() {
        let log = RemovalLog()
        log.hide(.property("title"), in: object)
        log.hide(.member(relationship: "pages", member), in: object)
        #expect(log.hides("title", in: object))
        #expect(!log.hides("pages", in: object))
        #expect(log.visibleMembers([member], of: "pages", in: object) == [])
        #expect(log.visibleMembers([member], of: "other", in: object) == [member])
        #expect(log.take(of: object) == [.property("title"), .member(relationship: "pages", member)])
        #expect(!log.hides("title", in: object))
        #expect(log.takeSettled(all: true).isEmpty)
    }

    @Test func removalsSettleAfterTheSettleTimeOrWhenAllAreTaken() {
        let log = RemovalLog()
        let start = Date()
        log.hide(.property("title"), in: object, now: start)
        #expect(!log.hasSettled(now: start.addingTimeInterval(RemovalLog.settleTime / 2)))
        #expect(log.takeSettled(now: start.addingTimeInterval(RemovalLog.settleTime / 2)).isEmpty)
        #expect(log.hasSettled(now: start.addingTimeInterval(RemovalLog.settleTime)))
        #expect(log.takeSettled(now: start.addingTimeInterval(RemovalLog.settleTime)) == [object: [.property("title")]])
        log.hide(.folder("pages"), in: object, now: start)
        log.unhide(.folder("pages"), in: object)
        #expect(!log.hides("pages", in: object), "a write or link in its place takes the removal back")
        log.hide(.folder("pages"), in: object, now: Date())
        #expect(log.takeSettled(all: true) == [object: [.folder("pages")]])
    }
}
