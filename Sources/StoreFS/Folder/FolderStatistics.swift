import Foundation

/// `user.storefs.stats` at a folder mount's root: the counters of the whole mount, what
/// `storefs stats MNT` reads. Each open store's own counters (requests to its store, faults,
/// cache, commits) are added up; FUSE requests and saves are counted once for the mount (its
/// stores share those counters), and `stores` says how many are open.
extension StoreFolderFileSystem {
    func statisticsJSON() -> String {
        var total: [String: Int] = [:]
        let open = slots.openStores
        for (_, fileSystem) in open {
            guard let data = try? fileSystem.extendedAttribute(RootFolder.statsName, of: .root),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { continue }
            for (key, value) in object where key != "fuse" && key != "saves" {
                guard let number = value as? NSNumber else { continue }
                let (sum, overflow) = total[key, default: 0].addingReportingOverflow(number.intValue)
                total[key] = overflow ? Int.max : sum
            }
        }
        var object: [String: Any] = total
        object["stores"] = open.count
        let saves = commitStatistics.snapshot
        object["saves"] = [
            "count": saves.commits, "failed": saves.failed, "seconds": saves.seconds, "failures": saves.failures
        ]
        if let counters { object["fuse"] = counters.snapshot() }
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
