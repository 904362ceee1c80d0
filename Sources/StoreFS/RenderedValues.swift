import Foundation
import ObjectGraph
import Synchronization

/// The text of the last few large values read without a handle of their own (read-only mounts
/// open files without asking, so reads arrive with handle 0): reading a 200 MB string in 128 KiB
/// pieces would otherwise render all of it for every piece.
///
/// An entry is used only while the value it was rendered from is the current one; comparing a
/// string with itself is a pointer comparison, so the check costs nothing for an unchanged value.
///
/// Threading: one lock.
final class RenderedValues: Sendable {
    /// Values below this size are rendered on every read (cheaper than keeping them).
    static let threshold = 64 << 10
    static let capacity = 8

    private struct Entry {
        var node: Node
        var value: AttributeValue
        var content: Data
    }

    private let entries = Mutex<[Entry]>([])

    /// The content of `value` at `node`, rendered once while it stays the value.
    func content(of value: AttributeValue, at node: Node, render: () -> Data) -> Data {
        if let hit = entries.withLock({ list in list.first { $0.node == node && $0.value == value }?.content }) { return hit }
        let content = render()
        guard content.count >= Self.threshold else { return content }
        entries.withLock { list in
            list.removeAll { $0.node == node }
            list.insert(Entry(node: node, value: value, content: content), at: 0)
            if list.count > Self.capacity { list.removeLast() }
        }
        return content
    }
}
