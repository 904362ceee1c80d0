import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// What `.recovered` and `.wal` read (``RecoveredNode``), kept for the mount: whether the store's
/// files can be read for what they remember, and the records once read.
///
/// Threading: one lock; reading the records (the first time, a walk of every page) happens outside
/// it, so other requests never wait on it (two first readers may both read).
final class RecoveredState: Sendable {
    private struct State {
        var available: Bool?
        var records: RecoveredRecords?
    }

    private let state = Mutex(State())
    /// Set by ``StoreVersionsFileSystem`` when it serves this mount's `.wal`.
    let servesVersions = Atomic<Bool>(false)

    func available(_ compute: () -> Bool) -> Bool {
        if let known = state.withLock({ $0.available }) { return known }
        let available = compute()
        state.withLock { $0.available = available }
        return available
    }

    func records(_ read: () throws(FileSystemError) -> RecoveredRecords) throws(FileSystemError) -> RecoveredRecords {
        if let kept = state.withLock({ $0.records }) { return kept }
        let records = try read()
        if !records.cancelled { state.withLock { $0.records = records } }
        return records
    }
}

extension Mapping {
    /// Whether `.recovered` exists: a store whose files can be read for what they remember, opened
    /// read-only (a read-only or evidence mount; a store open for writing is not read that way).
    var showsRecovered: Bool {
        recovered.available {
            guard let store = coordinator.store.recovering else { return false }
            return (try? store.storeVersions()) != nil
        }
    }

    /// Whether `.wal` exists: the mount serves the store's versions (``StoreVersionsFileSystem``).
    var servesVersions: Bool { recovered.servesVersions.load(ordering: .relaxed) && showsRecovered }

    /// The store's recovered records, read once for the mount. A read whose FUSE request is
    /// interrupted (the reader gone) stops between pages and is not kept.
    func recoveredRecords() throws(FileSystemError) -> RecoveredRecords {
        guard showsRecovered, let store = coordinator.store.recovering else { throw .notFound }
        let interruption = RequestInterruption.current
        return try recovered.records { () throws(FileSystemError) -> RecoveredRecords in
            try engine(
                { () throws(ObjectGraphError) in
                    try store.recoveredRecords(cancelled: { interruption?.isInterrupted ?? false })
                },
                "read what \(RecoveredNode.folderName) shows")
        }
    }

    /// The values of record `index`.
    func recoveredValues(_ records: RecoveredRecords, _ index: Int) throws(FileSystemError) -> RecoveredValues {
        try engine({ () throws(ObjectGraphError) in try records.values(of: index) }, "read a recovered record")
    }
}
