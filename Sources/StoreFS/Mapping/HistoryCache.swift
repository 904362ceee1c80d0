import Foundation
import ObjectGraph
import Synchronization

/// The last few persistent-history transactions the mount read, with their changes, and the
/// timestamps of the last listing of `.history`: `ls -l` of a transaction's folder asks about
/// every entry of it, and each would otherwise read the whole transaction again.
///
/// Core Data never changes a transaction once recorded (deleting history removes whole old ones),
/// so what is kept stays true; a transaction deleted meanwhile still shows until it leaves the
/// cache, and every listing of `.history` reads the list afresh.
///
/// Threading: one lock.
final class HistoryCache: Sendable {
    /// Transactions kept at most (a transaction of Photos can hold tens of thousands of changes).
    static let capacity = 8

    /// A transaction with its changes indexed by change number and by object.
    struct Entry: Sendable {
        let transaction: HistoryTransaction
        let byChange: [Int64: Int]
        let byObject: [ObjectID: [Int]]

        init(_ transaction: HistoryTransaction) {
            self.transaction = transaction
            var byChange: [Int64: Int] = [:]
            var byObject: [ObjectID: [Int]] = [:]
            for (i, change) in transaction.changes.enumerated() {
                byChange[change.changeID] = i
                byObject[change.objectID, default: []].append(i)
            }
            self.byChange = byChange
            self.byObject = byObject
        }
    }

    private struct State {
        var entries: [Entry] = []
        var timestamps: [Int64: Date] = [:]
    }

    private let state = Mutex(State())

    func entry(_ number: Int64) -> Entry? {
        state.withLock { state in state.entries.first { $0.transaction.number == number } }
    }

    /// The kept transaction holding change `changeID`, if any.
    func entry(holdingChange changeID: Int64) -> Entry? {
        state.withLock { state in state.entries.first { $0.byChange[changeID] != nil } }
    }

    /// Keeps `transaction` (read with its changes) as the most recent; returns its entry.
    func keep(_ transaction: HistoryTransaction) -> Entry {
        let entry = Entry(transaction)
        state.withLock { state in
            state.entries.removeAll { $0.transaction.number == transaction.number }
            state.entries.insert(entry, at: 0)
            if state.entries.count > Self.capacity { state.entries.removeLast() }
        }
        return entry
    }

    func timestamp(_ number: Int64) -> Date? {
        state.withLock { state in
            state.timestamps[number] ?? state.entries.first { $0.transaction.number == number }?.transaction.timestamp
        }
    }

    /// What a listing of `.history` read replaces what the previous one did.
    func listed(_ timestamps: [Int64: Date]) {
        state.withLock { $0.timestamps = timestamps }
    }
}
