import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Evaluations of predicates on request (query folders and their files, fetched properties'
/// and templates' folders) under the mount's ``StoreFSConfiguration/queryLimits``: each runs
/// with a ``QueryBudget`` of its own, which the FUSE request's interruption cancels, and one that
/// stops fails with the budget's errno and leaves its reason in `user.storefs.error` (on the
/// folder, and for a query on `.query/ENTITY` too).
extension Mapping {
    /// Runs `body`, the evaluation of computed folder `folder` or of one of its files, under a
    /// budget of its own; within an evaluation already bounded (a `.json` that lists the folder
    /// first) it runs under that one.
    func bounded<T>(_ folder: Node, _ body: () throws(FileSystemError) -> T) throws(FileSystemError) -> T {
        if QueryBudget.current != nil { return try body() }
        let budget = QueryBudget(limits: configuration.queryLimits, subject: describe(folder))
        let interruption = RequestInterruption.current
        let token = interruption?.onInterrupt { budget.cancel() }
        defer { if let token { interruption?.removeAction(token) } }
        let outcome = QueryBudget.$current.withValue(budget) { () -> Result<T, FileSystemError> in
            do throws(FileSystemError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let value):
            queryFailures.clear(folder)
            return value
        case .failure(let error):
            guard budget.stopReason != nil else { throw error }
            let stop = budget.error
            if stop.code != .cancelled {
                queryFailures.note(stop.message, for: folder)
                if folder.kind == .query { queries.setError(stop.message, of: folder.entity) }
            }
            throw mappedError(stop)
        }
    }
}

/// Why the last evaluation of a computed folder failed at a limit: `user.storefs.error` on the
/// folder until one succeeds. At most ``capacity`` folders are remembered (the oldest go).
///
/// Threading: a `Mutex` guards it; call from any thread.
final class QueryFailures: Sendable {
    static let capacity = 1024

    private struct State {
        var reasons: [Node: String] = [:]
        var order: [Node] = []
    }

    private let state = Mutex(State())

    func note(_ reason: String, for folder: Node) {
        state.withLock { state in
            if state.reasons.updateValue(reason, forKey: folder) == nil { state.order.append(folder) }
            while state.order.count > Self.capacity {
                state.reasons[state.order.removeFirst()] = nil
            }
        }
    }

    func clear(_ folder: Node) {
        state.withLock { state in
            guard state.reasons.removeValue(forKey: folder) != nil else { return }
            state.order.removeAll { $0 == folder }
        }
    }

    func reason(for folder: Node) -> String? { state.withLock { $0.reasons[folder] } }
}
