import Foundation
import Synchronization

/// A thread of the filesystem's own that commits pending changes after a quiet spell and watches
/// the store for changes other processes commit. A plain thread, because both block on the store.
final class BackgroundWork: Sendable {
    private let running = Atomic<Bool>(false)
    private let finished = Mutex<Bool>(true)

    /// Starts calling `tick` every `interval` seconds until ``stop()``.
    func start(interval: Double, _ tick: @escaping @Sendable () -> Void) {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.withLock { $0 = false }
        let thread = Thread { [self] in
            while running.load(ordering: .acquiring) {
                Thread.sleep(forTimeInterval: interval)
                if running.load(ordering: .acquiring) { tick() }
            }
            finished.withLock { $0 = true }
        }
        thread.name = "storefs-background"
        thread.start()
    }

    /// Stops the thread and waits for its current tick to end.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        while !finished.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
    }
}
