import CFuse
import Foundation
import Synchronization

/// Requests that may take long (``FileSystem/mayTakeLong(_:)``), served on threads of FuseKit's
/// own instead of the thread that received them.
///
/// Over io_uring libfuse serves each CPU's queue on one thread: a request that takes seconds
/// there holds every request behind it, so a `ls` of the mount from the same CPU waited for a
/// query (issue 34). Here such a request is handed to one of ``MountOptions/slowRequestThreads``
/// threads and the receiving thread goes on at once; the reply is sent from the pool thread
/// (libfuse allows a reply from any thread). Each request is watched for FUSE INTERRUPT from the
/// moment it is queued (``KernelInterrupt``), so one interrupted while it waits is answered EINTR
/// without being run.
///
/// The queue has no bound of its own: every request in it is one process blocked in a system
/// call, which the kernel bounds.
///
/// Threading: ``submit(_:_:)`` from any thread; ``close(waitingUpTo:)`` once, when the session
/// ends.
final class SlowRequests: Sendable {
    typealias Work = @Sendable () -> Void

    private struct Item {
        let work: Work
        let interruption: RequestInterruption
    }

    private struct State {
        var queue: [Item] = []
        var head = 0
        var threads = 0
        var idle = 0
        /// Interruptions of the requests being served, by serial.
        var running: [Int: RequestInterruption] = [:]
        var nextSerial = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let waiting = DispatchSemaphore(value: 0)
    private let maximumThreads: Int

    init(maximumThreads: Int) {
        self.maximumThreads = max(1, maximumThreads)
    }

    /// Queues `work` (which answers its request) for a pool thread.
    func submit(_ interruption: RequestInterruption, _ work: @escaping Work) {
        let startThread = state.withLock { state -> Bool in
            state.queue.append(Item(work: work, interruption: interruption))
            if state.closed { interruption.interrupt() }
            guard state.idle == 0, state.threads < maximumThreads else { return false }
            state.threads += 1
            return true
        }
        if startThread {
            let thread = Thread { [self] in serve() }
            thread.name = "fuse-slow"
            thread.start()
        }
        waiting.signal()
    }

    private func serve() {
        while true {
            state.withLock { $0.idle += 1 }
            waiting.wait()
            let next = state.withLock { state -> (Item, Int)? in
                state.idle -= 1
                guard state.head < state.queue.count else { return nil }
                let item = state.queue[state.head]
                state.head += 1
                if state.head > 64 && state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                state.nextSerial += 1
                state.running[state.nextSerial] = item.interruption
                return (item, state.nextSerial)
            }
            guard let (item, serial) = next else {
                if state.withLock({ $0.closed }) { return }
                continue
            }
            item.work()
            state.withLock { _ = $0.running.removeValue(forKey: serial) }
        }
    }

    /// Interrupts what is queued and running (each is answered, EINTR or sooner) and waits up to
    /// `seconds` for all of it; returns whether everything was answered (the session may then be
    /// destroyed: a reply after that would write to a freed session).
    func close(waitingUpTo seconds: Double) -> Bool {
        let (interruptions, threads) = state.withLock { state -> ([RequestInterruption], Int) in
            state.closed = true
            return (state.queue[state.head...].map(\.interruption) + Array(state.running.values), state.threads)
        }
        for interruption in interruptions { interruption.interrupt() }
        // Wake every thread so each sees the queue empty and ends.
        for _ in 0..<threads + 1 { waiting.signal() }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let done = state.withLock { $0.head >= $0.queue.count && $0.running.isEmpty }
            if done { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }
}

/// libfuse's report of FUSE INTERRUPT for one request, passed on to its ``RequestInterruption``
/// while the request is served (`fuse_req_interrupt_func`).
///
/// Threading: ``watch(_:)`` and ``stopWatching()`` from the threads serving the request, one
/// after the other; the callback comes from a libfuse worker thread.
final class KernelInterrupt: @unchecked Sendable {
    // @unchecked: holds libfuse's request pointer, used only through libfuse's own locked calls.
    private let request: fuse_req_t?
    private let registered = Mutex<Unmanaged<RequestInterruption>?>(nil)

    init(_ request: fuse_req_t?) { self.request = request }

    /// From now until ``stopWatching()``, an interrupt of the request interrupts `interruption`
    /// (at once when the kernel interrupted it already).
    func watch(_ interruption: RequestInterruption) {
        let retained = Unmanaged.passRetained(interruption)
        registered.withLock { $0 = retained }
        fuse_req_interrupt_func(
            request,
            { _, data in
                guard let data else { return }
                Unmanaged<RequestInterruption>.fromOpaque(data).takeUnretainedValue().interrupt()
            }, retained.toOpaque())
    }

    /// Ends the watch before the reply: libfuse runs the callback under the request's lock, so
    /// once this returns it is not running and never will.
    func stopWatching() {
        guard
            let retained = registered.withLock({ held -> Unmanaged<RequestInterruption>? in
                defer { held = nil }
                return held
            })
        else { return }
        fuse_req_interrupt_func(request, nil, nil)
        retained.release()
    }
}
