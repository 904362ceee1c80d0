import Foundation
import Synchronization

/// Reads the pages of an ``ObjectRecordPages`` ahead of the caller on two threads of its own: one
/// reads each page's rows (``ObjectRecordPages/nextSnapshots()``), the other its to-many
/// relationships (``ObjectRecordPages/records(of:)``), while the caller formats or compares the
/// page before. Reading rows, reading relationships and what the caller does each take about a
/// third of an export; in one thread each they keep two cores busy.
///
/// Memory stays bounded: at most `depth` pages wait between two stages. Errors reach the caller
/// from ``next()`` in order, after the pages read before them.
///
/// Threading: one consumer calls ``next()``; the reading threads are their own and end after the
/// last page, after an error, or once this reader is released.
public final class ObjectRecordReadAhead: Sendable {
    private let records: ReadAheadStage<[ObjectRecord]>

    /// Starts reading `pages`, keeping up to `depth` pages ready at each stage.
    public init(_ pages: ObjectRecordPages, depth: Int = 4) {
        let reader = Mutex(pages)
        let snapshots = ReadAheadStage<[Snapshot]>(name: "storefs rows", depth: depth) { () throws(ObjectGraphError) in
            try reader.withLock { (pages) throws(ObjectGraphError) -> [Snapshot]? in try pages.nextSnapshots() }
        }
        // records(of:) only reads the store: a copy of the pages' settings does it.
        let relationships = pages
        records = ReadAheadStage(name: "storefs relationships", depth: depth) { () throws(ObjectGraphError) in
            guard let page = try snapshots.next() else { return nil }
            return try relationships.records(of: page)
        }
    }

    /// The next page, by key; nil once every object was read.
    ///
    /// - Throws: what reading the page threw; every later call throws it too.
    public func next() throws(ObjectGraphError) -> [ObjectRecord]? {
        try records.next()
    }
}

/// One stage of a read-ahead: `produce` called on a thread of its own until it gives nil or
/// throws, its results kept (at most `depth` waiting) for ``next()`` in order.
///
/// The thread is a plain thread (it blocks on the store), never a Swift concurrency pool thread.
/// Releasing the stage stops it and waits for the thread to end (after the result it is making).
final class ReadAheadStage<Element: Sendable>: Sendable {
    private struct State {
        var ready: [Result<Element?, ObjectGraphError>] = []
        var stopped = false
        /// The consumer took the producer's nil: every later ``next()`` is nil.
        var finished = false
    }

    private final class Shared: Sendable {
        let state = Mutex(State())
        /// Signalled when a result is ready; waited on by ``next()``.
        let ready = DispatchSemaphore(value: 0)
        /// Free places for results; the producing thread waits on it. Made empty and signalled
        /// `depth` times: libdispatch ends the process when a semaphore goes below the value it
        /// was made with and is then released (a reader let go of part-way).
        let room = DispatchSemaphore(value: 0)
        /// Signalled once by the thread as it ends.
        let ended = DispatchSemaphore(value: 0)

        init(depth: Int) {
            for _ in 0..<depth { room.signal() }
        }
    }

    private let shared: Shared

    init(
        name: String, depth: Int, produce: @escaping @Sendable () throws(ObjectGraphError) -> Element?
    ) {
        let shared = Shared(depth: max(1, depth))
        self.shared = shared
        let thread = Thread {
            defer { shared.ended.signal() }
            while true {
                shared.room.wait()
                if shared.state.withLock({ $0.stopped }) { return }
                let result: Result<Element?, ObjectGraphError>
                do throws(ObjectGraphError) { result = .success(try produce()) } catch { result = .failure(error) }
                shared.state.withLock { $0.ready.append(result) }
                shared.ready.signal()
                if case .success(let element) = result, element != nil { continue }
                return
            }
        }
        thread.name = name
        thread.start()
    }

    deinit {
        // The thread may wait for room: give it some, so it sees the stop and ends. Then wait for
        // it: what it reads (a store) may be closed once this reader is gone.
        shared.state.withLock { $0.stopped = true }
        shared.room.signal()
        shared.ended.wait()
    }

    /// The next result; nil once the producer gave nil.
    ///
    /// - Throws: what the producer threw; every later call throws it too.
    func next() throws(ObjectGraphError) -> Element? {
        if shared.state.withLock({ $0.finished }) { return nil }
        shared.ready.wait()
        let result = shared.state.withLock { $0.ready.removeFirst() }
        shared.room.signal()
        switch result {
        case .success(let element?):
            return element
        case .success(nil):
            shared.state.withLock { $0.finished = true }
            return nil
        case .failure(let error):
            // The thread has ended; keep answering with the error.
            shared.state.withLock { $0.ready.append(.failure(error)) }
            shared.ready.signal()
            throw error
        }
    }
}
