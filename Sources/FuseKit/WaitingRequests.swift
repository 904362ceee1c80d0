import CFuse
import Foundation
import Synchronization

/// Requests answered on threads of their own, so that one that waits does not hold up others.
///
/// Over io_uring, libfuse serves each CPU's queue on one thread: a request that waits there (an
/// fsync whose commit waits for a store another process holds locked) holds every request the
/// kernel queued behind it on that CPU, reads of what the mount holds in memory included. The
/// file system says which requests may wait (``FileSystem/mayWait(_:inode:handle:)``); those are
/// answered by the threads here (libfuse takes a reply from any thread). Over /dev/fuse every
/// worker thread serves any request and nothing is handed off.
///
/// The threads live as long as the session: a reply over io_uring also asks the kernel for the
/// ring entry's next request, and the kernel ties that ask to the thread that made it, cancelling
/// it (the next request then fails with ECANCELED) when that thread ends.
///
/// Threading: safe from any thread.
final class WaitingRequests: Sendable {
    /// Threads at most: past it, work waits for one of them.
    static let maximumThreads = 16

    private struct State {
        var work: [@Sendable () -> Void] = []
        var threads = 0
        var idle = 0
        var stopped = false
    }

    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)

    /// Runs `work` on one of the threads (a new one when none is idle and fewer than
    /// ``maximumThreads`` run); false after ``stop()`` (the caller then runs it itself).
    func start(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, spawn) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopped else { return (false, false) }
            state.work.append(work)
            if state.idle > 0 {
                state.idle -= 1
                return (true, false)
            }
            guard state.threads < Self.maximumThreads else { return (true, false) }
            state.threads += 1
            return (true, true)
        }
        guard accepted else { return false }
        if spawn {
            let thread = Thread { [self] in serve() }
            thread.name = "storefs-waiting"
            thread.start()
        } else {
            available.signal()
        }
        return true
    }

    /// Lets the threads end once the work given them is done (at the session's end).
    func stop() {
        let threads = state.withLock { state -> Int in
            state.stopped = true
            return state.threads
        }
        for _ in 0..<threads { available.signal() }
    }

    private func serve() {
        while true {
            let next = state.withLock { state -> (@Sendable () -> Void)?? in
                if !state.work.isEmpty { return .some(state.work.removeFirst()) }
                if state.stopped {
                    state.threads -= 1
                    return .none
                }
                state.idle += 1
                return .some(nil)
            }
            switch next {
            case .none: return
            case .some(let work?): work()
            case .some(nil): available.wait()
            }
        }
    }
}

/// A request handed to another thread to be answered there.
struct HandedRequest: @unchecked Sendable {
    // @unchecked: libfuse allows a request to be answered from any thread, once; it is answered
    // only by the thread it is handed to.
    let request: fuse_req_t?
}
