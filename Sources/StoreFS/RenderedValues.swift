import Foundation
import ObjectGraph
import Synchronization

/// The text of the last few large values read without a handle of their own (read-only mounts
/// open files without asking, so reads arrive with handle 0): reading a 200 MB string in 128 KiB
/// pieces would otherwise render all of it for every piece.
///
/// An entry is used only while the mount's value generation is the one it was rendered in: the
/// generation moves with every change through the mount and every change another process makes,
/// so a kept text is never stale, and a hit costs no store request (a value larger than the row
/// cache would otherwise be read from the store again for every piece).
///
/// Threading: one lock.
final class RenderedValues: Sendable {
    /// Values below this size are rendered on every read (cheaper than keeping them).
    static let threshold = 64 << 10
    static let capacity = 8

    private struct Entry {
        var node: Node
        var generation: Int
        var content: Data
    }

    private let entries = Mutex<[Entry]>([])
    private let renders = Atomic<Int>(0)
    private let currentGeneration = Atomic<Int>(0)

    /// Values may have changed: texts kept so far are not used again.
    func valuesChanged() { currentGeneration.add(1, ordering: .relaxed) }

    var generation: Int { currentGeneration.load(ordering: .relaxed) }

    /// How many values were rendered for reading so far (for statistics and tests).
    var renderCount: Int { renders.load(ordering: .relaxed) }

    /// The text kept for `node` in the current generation, if any.
    func kept(_ node: Node) -> Data? {
        let generation = generation
        return entries.withLock { list in list.first { $0.node == node && $0.generation == generation }?.content }
    }

    /// Renders a value's text, keeping it when large. `generation` is the generation read before
    /// the value was, so a change made meanwhile is not hidden by the kept text.
    func render(_ node: Node, generation: Int, _ render: () -> Data) -> Data {
        let content = render()
        renders.add(1, ordering: .relaxed)
        guard content.count >= Self.threshold else { return content }
        entries.withLock { list in
            list.removeAll { $0.node == node }
            list.insert(Entry(node: node, generation: generation, content: content), at: 0)
            if list.count > Self.capacity { list.removeLast() }
        }
        return content
    }
}
