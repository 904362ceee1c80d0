import Synchronization

/// Whether the kernel interrupted the request being served (FUSE INTERRUPT: its caller got a
/// signal, or was killed while it waited), and what to do when it does.
///
/// FuseKit binds one to ``current`` around every request a filesystem may take long over (see
/// ``FileSystem/mayTakeLong(_:)``), so the filesystem can stop work nobody waits for any more:
/// an evaluation registers an action with ``onInterrupt(_:)`` for as long as it runs. FuseKit asks
/// libfuse for the interrupt only then (`fuse_req_interrupt_func`), so requests that register
/// nothing cost nothing. A filesystem driven without a kernel (tests) makes its own and calls
/// ``interrupt()``.
///
/// An interrupted request is still answered exactly once: the kernel lets its caller go at once
/// only for a request not yet sent to the server; for one being served it waits for the answer
/// (uninterruptibly, if the caller was killed), which is why work must stop quickly.
///
/// Threading: safe from any thread; ``interrupt()`` comes from another thread than the request's.
public final class RequestInterruption: Sendable {
    /// The interruption of the request served on this thread (a task-local value, bound per
    /// request by FuseKit; nil outside one).
    @TaskLocal public static var current: RequestInterruption?

    private struct State {
        var interrupted = false
        var next = 0
        var actions: [Int: @Sendable () -> Void] = [:]
        var watching = false
    }

    private let state = Mutex(State())
    /// Asks the kernel side to report the interrupt (libfuse's registration), the first time an
    /// action is registered; nil for an interruption driven by its owner.
    private let watch: (@Sendable () -> Void)?

    /// An interruption its owner reports with ``interrupt()``.
    public init() { watch = nil }

    init(watch: @escaping @Sendable () -> Void) { self.watch = watch }

    /// Whether the request was interrupted.
    public var isInterrupted: Bool { state.withLock { $0.interrupted } }

    /// Registers `action` to run once when the request is interrupted (at once when it was);
    /// returns a token for ``removeAction(_:)``. Actions must be quick and must not wait.
    public func onInterrupt(_ action: @escaping @Sendable () -> Void) -> Int {
        let (token, startWatching): (Int?, Bool) = state.withLock { state in
            guard !state.interrupted else { return (nil, false) }
            state.next += 1
            state.actions[state.next] = action
            defer { state.watching = true }
            return (state.next, !state.watching)
        }
        guard let token else {
            action()
            return 0
        }
        // Outside the lock: libfuse runs the callback at once when the interrupt came already.
        if startWatching { watch?() }
        return token
    }

    /// Forgets the action registered with `token`; once this returns it will not run.
    public func removeAction(_ token: Int) {
        state.withLock { _ = $0.actions.removeValue(forKey: token) }
    }

    /// The request was interrupted: runs the registered actions (once).
    public func interrupt() {
        state.withLock { state in
            guard !state.interrupted else { return }
            state.interrupted = true
            // Under the lock, so that an action removed has finished or never starts.
            for action in state.actions.values { action() }
            state.actions = [:]
        }
    }
}
