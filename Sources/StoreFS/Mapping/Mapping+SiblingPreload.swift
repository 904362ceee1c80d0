import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Reading one attribute file of an object folder puts the text of its other attribute files into
/// the kernel's page cache (read-only mounts only), so that `cat *`, `grep -r` or a copy of the
/// folder reads them without a request each: a READ is a round trip through the kernel and two
/// context switches (about 25 µs here), a preload one write to /dev/fuse from FuseKit's
/// notification thread (the texts are rendered on the reading thread, after its value).
///
/// Why only read-only mounts: their files are opened without asking and keep their pages across
/// opens; a read-write mount opens every file for direct I/O (see `openFile`), so its page cache
/// is never read. Why on a read and not on a listing: `find` or `ls -l` list folders without
/// reading them, and would fill the page cache with pages nobody reads.
///
/// Stale pages: a preload and the invalidations of a refresh after another process's commit go
/// through the same serial queue. The value generation is read before the values are; if it moved
/// by the time the preload is queued, the preloaded files are invalidated after it.
extension Mapping {
    /// Values whose text is longer are left to be read on demand.
    static let preloadLimit = 32 << 10
    /// The most one folder preloads (a model may give an entity thousands of attributes).
    static let folderPreloadLimit = 256 << 10

    func preloadSiblings(of object: ObjectID, besides index: Int) {
        guard configuration.readOnly, let invalidator = invalidator.withLock({ $0 }), preloadedObjects.insert(object)
        else { return }
        let generation = renderedValues.generation
        // (Also checks that the object's entity is one of the model's, before `model[…]` below.)
        guard let snapshot = try? snapshot(of: object) else { return }
        var files: [(inode: InodeNumber, data: Data)] = []
        var total = 0
        for (i, attribute) in model[object.entity].allAttributes.enumerated() where i != index {
            guard let value = snapshot.attributes[attribute.name] else { continue }
            switch value {
            case .string(let text) where text.utf8.count >= Self.preloadLimit: continue
            case .data(let bytes) where bytes.count > Self.preloadLimit: continue
            default: break  // numbers, dates and the like are short
            }
            let content = ValueText.content(of: value, type: attribute.type)
            total += content.count
            guard total <= Self.folderPreloadLimit else { break }
            files.append((Node.attribute(object, i).inode, content))
        }
        invalidator.preload(files)
        if renderedValues.generation != generation {
            for file in files { invalidator.invalidateInode(file.inode) }
        }
    }
}

/// The objects whose folders were preloaded lately (at most `capacity`, the oldest forgotten
/// first), so that a read of each file of one folder preloads the folder once.
///
/// Threading: one lock.
final class RecentObjects: Sendable {
    static let capacity = 4096

    private struct State {
        var members: Set<ObjectID> = []
        var order: [ObjectID] = []
        var next = 0
    }

    private let state = Mutex(State())

    /// Adds `object`; false if it was among the recent ones already.
    func insert(_ object: ObjectID) -> Bool {
        state.withLock { state in
            guard state.members.insert(object).inserted else { return false }
            if state.order.count < Self.capacity {
                state.order.append(object)
            } else {
                state.members.remove(state.order[state.next])
                state.order[state.next] = object
                state.next = (state.next + 1) % Self.capacity
            }
            return true
        }
    }

    /// Forgets every object, returning them (their pages are to be invalidated).
    @discardableResult
    func removeAll() -> [ObjectID] {
        state.withLock { state in
            defer { state = State() }
            return state.order
        }
    }
}
